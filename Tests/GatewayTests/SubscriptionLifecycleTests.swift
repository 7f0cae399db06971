// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
@testable import Gateway
import HTTP
import JSON
import SimulatorKit
import StorageCore
import StoreTestSupport
import TestSupport
import Testing

/// An iOS membership through the life of its auto-renewable subscription, against the App Store
/// simulator on a clock moved by weeks: the user's entitlement follows Apple's word — a grace
/// period keeps access, billing retry ends it, a recovery or an upgrade brings it back, a refund
/// of the period in progress or an expiry takes it away — whether the word came in order, in
/// reverse, or only when the reconciler asked Apple.
@Suite(.serialized)
struct SubscriptionLifecycleTests {
    static let catalog = #"""
        {"products":[
          {"id":"vip-ios","amount":3000,"description":"VIP 月卡（iOS）","type":"membership","period":"P1M","entitlement":"vip",
           "apple_product_id":"vip.monthly"},
          {"id":"vip-ios-year","amount":29800,"description":"VIP 年卡（iOS）","type":"membership","period":"P1Y","entitlement":"vip",
           "apple_product_id":"vip.yearly"},
          {"id":"lite-ios","amount":1000,"description":"轻享月卡（iOS）","type":"membership","period":"P1M","entitlement":"lite",
           "apple_product_id":"lite.monthly"},
          {"id":"swift-101","amount":990,"description":"Swift 入门课","apple_product_id":"com.example.courses.swift101"}]}
        """#
    static let day: TimeInterval = 86400

    /// A learner's monthly subscription, bought and reported by the app.
    struct Scene {
        let rig: IAPRig
        let original: String
        let simulatorClock: ScaledClock
        let catalogFile: URL

        static func subscribe(_ store: StoreKind, recovery: AppStoreRecoveryPolicy = AppStoreRecoveryPolicy()) async throws -> Scene {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString).json")
            try Data(SubscriptionLifecycleTests.catalog.utf8).write(to: file)
            let rig = try await IAPRig.start(.inProcess, store: store, recovery: recovery, environment: ["GATEWAY_CATALOG": file.path])
            rig.appStore.configureSubscriptionProducts([
                AppStoreSubscriptionProduct(productID: "vip.monthly", groupIdentifier: "21000001", period: "P1M", level: 2,
                                            gracePeriodDays: 16),
                AppStoreSubscriptionProduct(productID: "vip.yearly", groupIdentifier: "21000001", period: "P1Y", level: 1),
            ])
            let created = try await rig.createOrder("learner", product: "vip-ios")
            let token = try #require(created["app_account_token"] as? String)
            let bought = try rig.buy("apple-learner", token: token, product: "vip.monthly", type: "Auto-Renewable Subscription")
            #expect(try await rig.report("learner", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
            let scene = Scene(rig: rig, original: bought.transactionID,
                              simulatorClock: try #require(rig.appStore.clock as? ScaledClock), catalogFile: file)
            await scene.settle()
            return scene
        }

        func stop() async {
            await rig.stop()
            try? FileManager.default.removeItem(at: catalogFile)
        }

        /// Both clocks move on together, and the App Store acts out what fell due.
        /// - Parameter settle: wait for the gateway to answer what Apple sent (not under a drop
        ///   plan: a lost notification stays pending while Apple retries it).
        func advance(days: Double, settle: Bool = true) async {
            simulatorClock.advance(by: days * SubscriptionLifecycleTests.day)
            rig.gateway.clock.advance(by: days * SubscriptionLifecycleTests.day)
            rig.appStore.catchUpSubscriptions()
            if settle { await self.settle() }
        }

        /// Every notification sent so far was answered.
        func settle() async {
            #expect(await eventually(timeout: .seconds(60)) { rig.appStore.pendingNotifications == 0 })
        }

        /// The App Store's own view of the subscription.
        func truth() throws -> SubscriptionSnapshot {
            try #require(rig.appStore.subscription(originalTransactionID: original))
        }

        func state() async throws -> SubscriptionRecord {
            try #require(try await rig.store.subscriptions(originalTransactionIDs: [original]).first)
        }

        /// The learner's `vip` entitlement as the API answers it.
        /// `user`'s `vip` entitlement as the API answers it.
        func vip(of user: String = "learner") async throws -> [String: Any] {
            let answer = try await rig.gateway.send(.get, "/v1/users/\(user)/entitlements", token: rig.token(user))
            #expect(answer.status == 200)
            return try #require((answer.json["entitlements"] as? [[String: Any]])?.first { $0["entitlement"] as? String == "vip" })
        }

        /// The entitlement matches Apple's truth: open while the subscription is active or in its
        /// grace period, until its period's (or grace period's) end, renewing while Apple will.
        func expectVIPMatchesApple(_ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let truth = try truth()
            let vip = try await vip()
            let open = truth.status == 1 || truth.status == 4
            let end = truth.status == 4 ? truth.gracePeriodExpiresDate : truth.expiresDate
            #expect(vip["active"] as? Bool == open, comment, sourceLocation: sourceLocation)
            if truth.status != 5, let end {
                #expect(vip["expires_at"] as? String == Timestamp.rfc3339(Date(millisecondsSince1970: end)), comment,
                        sourceLocation: sourceLocation)
            }
            let renews = truth.autoRenewStatus && [1, 3, 4].contains(truth.status)
            #expect(vip["will_renew"] as? Bool == renews, comment, sourceLocation: sourceLocation)
        }

        func orders() async throws -> [OrderRecord] {
            try await rig.store.orders(originalTransactionID: original)
        }

        /// Someone on the learner's App Store account subscribes to the monthly product again
        /// from the App Store, without an order's token.
        func resubscribeWithoutToken() throws -> PurchaseReceipt {
            try rig.buy("apple-learner", token: nil, product: "vip.monthly", type: "Auto-Renewable Subscription")
        }

        /// The subscription moved up to the yearly product in the App Store's settings (the
        /// upgrade carries the token of the purchase before it): the upgrade's transaction id.
        func upgradeInSettings() async throws -> String {
            _ = try rig.appStore.changeProduct(originalTransactionID: original, to: "vip.yearly")
            await settle()
            let upgrade = try truth().latestTransactionId
            #expect(upgrade != original)
            return upgrade
        }

        /// Support assigns the waiting purchase `transactionID` to the order `outTradeNo`.
        func assign(_ transactionID: String, to outTradeNo: String, reason: String = "the family wrote in") async throws
            -> GatewayRig.Response
        {
            try await rig.gateway.send(.post, "/v1/support/apple-transactions/\(transactionID)/assign", token: GatewayRig.support,
                                       body: #"{"out_trade_no":"\#(outTradeNo)","reason":"\#(reason)"}"#)
        }
    }

    @Test("A failed renewal keeps access through the grace period, ends it in billing retry, and a recovery renews it",
          arguments: StoreKind.all)
    func aFailedRenewalThroughGraceAndBillingRetryToRecovery(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store)
        defer { Task { await scene.stop() } }
        try await scene.expectVIPMatchesApple("bought")
        _ = try scene.rig.appStore.failRenewals(originalTransactionID: scene.original, count: nil)

        await scene.advance(days: 32)
        #expect(try scene.truth().status == 4)
        #expect(try await scene.state().status == .gracePeriod)
        try await scene.expectVIPMatchesApple("in the grace period")
        #expect(try await scene.vip()["active"] as? Bool == true)

        await scene.advance(days: 16)
        #expect(try scene.truth().status == 3)
        #expect(try await scene.state().status == .billingRetry)
        try await scene.expectVIPMatchesApple("in billing retry")
        #expect(try await scene.vip()["active"] as? Bool == false)

        _ = try scene.rig.appStore.recoverBilling(originalTransactionID: scene.original)
        await scene.settle()
        #expect(try scene.truth().status == 1)
        try await scene.expectVIPMatchesApple("recovered")
        #expect(try await scene.vip()["active"] as? Bool == true)
        let orders = try await scene.orders()
        #expect(orders.count == 2 && orders.allSatisfy { $0.state == .success && $0.userID == "learner" })
    }

    @Test("A subscription whose charges keep failing expires when billing retry gives up, and its entitlement with it",
          arguments: StoreKind.all)
    func billingRetryGivesUpAndTheSubscriptionExpires(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store)
        defer { Task { await scene.stop() } }
        _ = try scene.rig.appStore.failRenewals(originalTransactionID: scene.original, count: nil)
        await scene.advance(days: 32 + 61)
        #expect(try scene.truth().status == 2)
        #expect(try await scene.state().status == .expired)
        try await scene.expectVIPMatchesApple("expired after billing retry")
        #expect(try await scene.orders().count == 1)
    }

    @Test("An upgrade from monthly to yearly is a payment of its own and gives a year from the upgrade, not a year on top of the month",
          arguments: StoreKind.all)
    func anUpgradeGivesTheYearFromTheUpgrade(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store)
        defer { Task { await scene.stop() } }
        await scene.advance(days: 10)
        _ = try scene.rig.appStore.changeProduct(originalTransactionID: scene.original, to: "vip.yearly")
        await scene.settle()
        #expect(try scene.truth().productId == "vip.yearly")
        try await scene.expectVIPMatchesApple("upgraded")
        let orders = try await scene.orders()
        #expect(orders.map(\.productID).sorted { ($0 ?? "") < ($1 ?? "") } == ["vip-ios", "vip-ios-year"])
        #expect(orders.allSatisfy { $0.state == .success })
        #expect(try await scene.state().productID == "vip.yearly")
    }

    @Test("A refund of the period in progress takes the access away at once and the subscription will not renew",
          arguments: StoreKind.all)
    func aRefundOfTheLastRenewalRevokesAccess(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store)
        defer { Task { await scene.stop() } }
        await scene.advance(days: 32)
        let latest = try scene.truth().latestTransactionId
        #expect(try await scene.orders().count == 2)
        try await scene.expectVIPMatchesApple("renewed")
        _ = try scene.rig.appStore.refund(transactionID: latest)
        await scene.settle()
        #expect(try await scene.state().status == .revoked)
        let vip = try await scene.vip()
        #expect(vip["active"] as? Bool == false && vip["will_renew"] as? Bool == false, "\(vip)")
        let refunded = try #require(try await scene.orders().first { $0.appleTransactionID == latest })
        #expect(refunded.state == .refund)
    }

    @Test("Turning auto-renew off keeps access to the period's end without renewal; then the subscription expires and so does the entitlement",
          arguments: StoreKind.all)
    func autoRenewOffThenExpiry(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store)
        defer { Task { await scene.stop() } }
        _ = try scene.rig.appStore.setAutoRenew(originalTransactionID: scene.original, enabled: false)
        await scene.settle()
        let off = try await scene.vip()
        #expect(off["active"] as? Bool == true && off["will_renew"] as? Bool == false, "\(off)")
        try await scene.expectVIPMatchesApple("auto-renew off")
        await scene.advance(days: 32)
        #expect(try await scene.state().status == .expired)
        try await scene.expectVIPMatchesApple("expired")
        #expect(try await scene.orders().count == 1)
    }

    @Test("Apple's notifications delivered in reverse give the same subscription and entitlement as in order",
          arguments: StoreKind.all)
    func notificationsInReverseGiveTheSameAnswer(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store)
        defer { Task { await scene.stop() } }
        let since = scene.rig.appStore.clock.now().addingTimeInterval(-60)
        // Nothing reaches the gateway: two renewals, a failed charge into grace, a recovery, auto-renew off.
        scene.rig.appStore.apply(AppStoreFaultPlan(dropNotifications: AppStoreNotificationDrops()))
        await scene.advance(days: 32, settle: false)
        await scene.advance(days: 31, settle: false)
        _ = try scene.rig.appStore.failRenewals(originalTransactionID: scene.original, count: nil)
        await scene.advance(days: 32, settle: false)
        _ = try scene.rig.appStore.recoverBilling(originalTransactionID: scene.original)
        _ = try scene.rig.appStore.setAutoRenew(originalTransactionID: scene.original, enabled: false)
        #expect(try await scene.orders().count == 1, "nothing delivered yet")
        let environment = try #require(AppStoreEnvironment(rawValue: try await scene.state().environment))

        // Apple's notification history, newest first, handed to the gateway as if delivered so.
        let api = try #require(scene.rig.iap.clients.serverAPI)
        var payloads: [String] = []
        var token: String?
        repeat {
            let page = try await api.notificationHistory(
                NotificationHistoryRequest(startDate: since, endDate: scene.rig.appStore.clock.now().addingTimeInterval(60)),
                paginationToken: token, environment: environment)
            payloads += page.items.map(\.signedPayload)
            token = page.hasMore ? page.paginationToken : nil
        } while token != nil
        #expect(payloads.count >= 6, "\(payloads.count)")
        for payload in payloads.reversed() {
            let body = JSONValue.object(["signedPayload": .string(payload)]).bytes()
            #expect(await scene.rig.iap.handleNotification(body).status == 200)
        }
        let truth = try scene.truth()
        #expect(truth.status == 1 && !truth.autoRenewStatus)
        let state = try await scene.state()
        #expect(state.status == .active && !state.autoRenew && state.latestTransactionID == truth.latestTransactionId)
        #expect(state.expiresAt == Date(millisecondsSince1970: truth.expiresDate))
        try await scene.expectVIPMatchesApple("delivered in reverse")
        let orders = try await scene.orders()
        #expect(Set(orders.compactMap(\.appleTransactionID)) == Set(truth.transactionIds))
        #expect(orders.allSatisfy { $0.state == .success })
    }

    @Test("With every notification lost and no history read, the reconciler's status read finds the grace period, then the recovery's renewal, and credits it",
          arguments: StoreKind.all)
    func theReconcilersStatusReadCatchesWhatTheNotificationsLost(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store, recovery: AppStoreRecoveryPolicy(backfillInterval: 0))
        defer { Task { await scene.stop() } }
        scene.rig.appStore.apply(AppStoreFaultPlan(dropNotifications: AppStoreNotificationDrops()))
        _ = try scene.rig.appStore.failRenewals(originalTransactionID: scene.original, count: nil)
        await scene.advance(days: 32, settle: false)
        // Unheard of, the period has ended: the gateway says no access, Apple grace.
        #expect(try await scene.vip()["active"] as? Bool == false)
        #expect(await scene.rig.sweep().subscriptionsChecked == 1)
        #expect(try await scene.state().status == .gracePeriod)
        try await scene.expectVIPMatchesApple("grace period read by the reconciler")
        // Asked again only an hour later.
        #expect(await scene.rig.sweep().subscriptionsChecked == 0)

        _ = try scene.rig.appStore.recoverBilling(originalTransactionID: scene.original)
        scene.rig.gateway.clock.advance(by: 2 * 3600)
        #expect(await scene.rig.sweep().subscriptionsChecked == 1)
        let truth = try scene.truth()
        #expect(try await scene.state().latestTransactionID == truth.latestTransactionId)
        try await scene.expectVIPMatchesApple("recovery read by the reconciler")
        let renewal = try #require(try await scene.orders().first { $0.appleTransactionID == truth.latestTransactionId })
        #expect(renewal.state == .success && renewal.userID == "learner")
        #expect(scene.rig.metric(#"wxpay_appstore_subscription_checks_total{outcome="ok"}"#) == 2)
    }

    @Test("When another user of the app resubscribes on the same App Store account, the subscription and its renewals are theirs, and the first user's access stays ended",
          arguments: StoreKind.all)
    func aResubscriptionForAnotherUserMovesTheSubscriptionToThem(store: StoreKind) async throws {
        let scene = try await Self.lapsed(store)
        defer { Task { await scene.stop() } }
        #expect(try await scene.vip()["active"] as? Bool == false)

        // Another user of the app, on the same device and App Store account, buys the membership.
        let created = try await scene.rig.createOrder("sibling", product: "vip-ios")
        let token = try #require(created["app_account_token"] as? String)
        let again = try scene.rig.buy("apple-learner", token: token, product: "vip.monthly", type: "Auto-Renewable Subscription")
        #expect(again.transactionID != scene.original && scene.rig.appStore.transaction(again.transactionID)?.originalTransactionID == scene.original)
        #expect(try await scene.rig.report("sibling", ["signed_transaction": again.signedTransactionInfo]).status == 200)
        await scene.settle()
        await scene.advance(days: 32)
        let truth = try scene.truth()
        #expect(truth.status == 1)

        let learner = try await scene.vip()
        #expect(learner["active"] as? Bool == false && learner["will_renew"] as? Bool == false, "\(learner)")
        let sibling = try await scene.vip(of: "sibling")
        #expect(sibling["active"] as? Bool == true && sibling["will_renew"] as? Bool == true, "\(sibling)")
        #expect(sibling["expires_at"] as? String == Timestamp.rfc3339(Date(millisecondsSince1970: truth.expiresDate)))
        // The renewal after the resubscription is the sibling's payment, and an expected one.
        let renewal = try #require(try await scene.orders().first { $0.appleTransactionID == truth.latestTransactionId })
        #expect(renewal.userID == "sibling" && !renewal.flags.contains(.matchedWithoutOrder), "\(renewal)")
    }

    /// The learner's subscription, auto-renew turned off, ended a month on.
    static func lapsed(_ store: StoreKind) async throws -> Scene {
        let scene = try await Scene.subscribe(store)
        _ = try scene.rig.appStore.setAutoRenew(originalTransactionID: scene.original, enabled: false)
        await scene.advance(days: 32)
        return scene
    }

    /// The learner's subscription, lapsed; resubscribed on the same App Store account by the
    /// sibling with an order of their own; lapsed again unless `lapsed` is false: a subscription
    /// two users have held.
    static func heldByTwo(_ store: StoreKind, lapsed: Bool = true) async throws -> Scene {
        let scene = try await Self.lapsed(store)
        let token = try #require(try await scene.rig.createOrder("sibling", product: "vip-ios")["app_account_token"] as? String)
        let held = try scene.rig.buy("apple-learner", token: token, product: "vip.monthly", type: "Auto-Renewable Subscription")
        #expect(try await scene.rig.report("sibling", ["signed_transaction": held.signedTransactionInfo]).status == 200)
        await scene.settle()
        guard lapsed else { return scene }
        _ = try scene.rig.appStore.setAutoRenew(originalTransactionID: scene.original, enabled: false)
        await scene.advance(days: 32)
        return scene
    }

    @Test("On a subscription two users held, an upgrade made in the App Store's settings carries its holder's token, carried on from their purchase: it waits for its payer's report or support instead of going to the holder",
          arguments: StoreKind.all)
    func anUpgradeOnASharedSubscriptionWaitsForItsPayer(store: StoreKind) async throws {
        let scene = try await Self.heldByTwo(store, lapsed: false)
        defer { Task { await scene.stop() } }
        await scene.advance(days: 10)
        _ = try scene.rig.appStore.changeProduct(originalTransactionID: scene.original, to: "vip.yearly")
        await scene.settle()
        let truth = try scene.truth()
        #expect(truth.productId == "vip.yearly")
        #expect(try await scene.rig.iap.store.appleTransaction(truth.latestTransactionId)?.outTradeNo == nil)
        // Support learns it was the sibling's and assigns it to an order of theirs.
        let order = try #require(try await scene.rig.createOrder("sibling", product: "vip-ios-year")["out_trade_no"] as? String)
        let assigned = try await scene.assign(truth.latestTransactionId, to: order)
        #expect(assigned.status == 200, "\(assigned.json)")
        let vip = try await scene.vip(of: "sibling")
        #expect(vip["expires_at"] as? String == Timestamp.rfc3339(Date(millisecondsSince1970: truth.expiresDate)), "\(vip)")
        #expect(vip["active"] as? Bool == true && vip["will_renew"] as? Bool == true, "\(vip)")
        #expect(try await scene.vip()["active"] as? Bool == false)
    }

    @Test("On an App Store account that also bought for another user of the app, an upgrade made in the App Store's settings goes to the one of them with an order open for it, not to the subscriber whose token it carries",
          arguments: StoreKind.all)
    func anUpgradeOnASharedAccountGoesToTheUserWithTheOpenOrder(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store)
        defer { Task { await scene.stop() } }
        try await Self.siblingBuysACourse(scene)
        await scene.advance(days: 5)
        let open = try #require(try await scene.rig.createOrder("sibling", product: "vip-ios-year")["out_trade_no"] as? String)
        let first = try #require(try await scene.orders().first { $0.userID == "learner" }?.outTradeNo)
        let announced = try await scene.rig.store.outboxEvents(first).filter { $0.type == EntitlementEvents.type }.count
        let upgrade = try await scene.upgradeInSettings()
        #expect(try await scene.rig.iap.store.appleTransaction(upgrade)?.outTradeNo == open)
        #expect(try await scene.vip(of: "sibling")["active"] as? Bool == true)
        // The upgrade replaced the learner's month at once (Apple refunds the rest of it): their
        // access ends where it began, and they are told.
        let upgradedAt = try #require(try await scene.rig.store.order(open)?.paidAt)
        let learner = try await scene.vip()
        #expect(learner["expires_at"] as? String == Timestamp.rfc3339(upgradedAt), "\(learner)")
        #expect(learner["active"] as? Bool == false && learner["will_renew"] as? Bool == false, "\(learner)")
        #expect(try await scene.rig.store.outboxEvents(first).filter { $0.type == EntitlementEvents.type }.count == announced + 1)
    }

    @Test("An upgrade made in the App Store's settings, on an account only its subscriber bought from, waits for its report while another user of the app has an order open for it",
          arguments: StoreKind.all)
    func anUpgradeWaitsWhileAnotherUserHasAnOrderOpenForIt(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store)
        defer { Task { await scene.stop() } }
        await scene.advance(days: 5)
        _ = try await scene.rig.createOrder("sibling", product: "vip-ios-year")
        let upgrade = try await scene.upgradeInSettings()
        #expect(try await scene.rig.iap.store.appleTransaction(upgrade)?.outTradeNo == nil)
    }

    @Test("Support does not hand a waiting upgrade to a user with an open order while the subscriber's period runs, unless told the user takes the subscription over",
          arguments: StoreKind.all)
    func aWaitingUpgradeGoesToAnotherUserOnlyWhenSupportSaysTheyTakeItOver(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store)
        defer { Task { await scene.stop() } }
        await scene.advance(days: 5)
        let stranger = try #require(try await scene.rig.createOrder("sibling", product: "vip-ios-year")["out_trade_no"] as? String)
        let upgrade = try await scene.upgradeInSettings()
        // An open order is all the stranger has: assigned on it, the learner's month would end now.
        let refused = try await scene.assign(upgrade, to: stranger, reason: "asked")
        #expect(refused.status == 409 && refused.error?["code"] as? String == "order_not_assignable", "\(refused.json)")
        #expect((refused.error?["message"] as? String)?.contains("learner's subscription") == true, "\(refused.json)")
        #expect(try await scene.rig.iap.store.appleTransaction(upgrade)?.outTradeNo == nil)
        #expect(try await scene.vip()["active"] as? Bool == true)
        // Support knows the sibling paid (a phone passed on): they take it over.
        let body = #"{"out_trade_no":"\#(stranger)","reason":"the sibling sent the receipt","takes_over":true}"#
        let assigned = try await scene.rig.gateway.send(.post, "/v1/support/apple-transactions/\(upgrade)/assign",
                                                        token: GatewayRig.support, body: body)
        #expect(assigned.status == 200, "\(assigned.json)")
        #expect(try await scene.vip(of: "sibling")["active"] as? Bool == true)
        #expect(try await scene.vip()["active"] as? Bool == false)
        let bad = try await scene.rig.gateway.send(.post, "/v1/support/apple-transactions/\(upgrade)/assign", token: GatewayRig.support,
                                                   body: #"{"out_trade_no":"\#(stranger)","reason":"x","takes_over":"yes"}"#)
        #expect(bad.status == 400 && bad.error?["field"] as? String == "takes_over", "\(bad.json)")
    }

    @Test("Support assigns a waiting upgrade to the subscriber's own order without being told anything more",
          arguments: StoreKind.all)
    func aWaitingUpgradeIsAssignedToTheSubscribersOwnOrder(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store)
        defer { Task { await scene.stop() } }
        await scene.advance(days: 5)
        _ = try await scene.rig.createOrder("sibling", product: "vip-ios-year")
        let upgrade = try await scene.upgradeInSettings()
        let own = try #require(try await scene.rig.createOrder("learner", product: "vip-ios-year")["out_trade_no"] as? String)
        let assigned = try await scene.assign(upgrade, to: own, reason: "the learner wrote in")
        #expect(assigned.status == 200, "\(assigned.json)")
        #expect(try await scene.vip()["active"] as? Bool == true)
    }

    @Test("A refund of a waiting tokenless resubscription leaves the renewals that waited with it waiting: they are not handed to the subscription's holder before it, and support may assign them",
          arguments: StoreKind.all)
    func aRefundOfAWaitingResubscriptionLeavesItsRenewalsWaiting(store: StoreKind) async throws {
        let (scene, again, renewal) = try await Self.waitingResubscriptionRenewed(store)
        defer { Task { await scene.stop() } }
        _ = try scene.rig.appStore.refund(transactionID: again)
        await scene.settle()
        await scene.advance(days: 1)
        for _ in 0..<3 { _ = await scene.rig.sweep() }
        #expect(try await scene.rig.iap.store.appleTransaction(renewal)?.outTradeNo == nil)
        #expect(try await scene.vip()["active"] as? Bool == false, "not the earlier subscriber's")
        // The payer cannot claim the refunded purchase; support assigns the renewal to them.
        let order = try #require(try await scene.rig.createOrder("sibling", product: "vip-ios")["out_trade_no"] as? String)
        let assigned = try await scene.assign(renewal, to: order)
        #expect(assigned.status == 200, "\(assigned.json)")
        #expect(try await scene.vip(of: "sibling")["active"] as? Bool == true)
    }

    @Test("A renewal waiting with the unclaimed resubscription before it is not assigned on its own: support is told to assign that one, which it then follows",
          arguments: StoreKind.all)
    func aWaitingRenewalIsNotAssignedApartFromThePaymentBeforeIt(store: StoreKind) async throws {
        let (scene, again, renewal) = try await Self.waitingResubscriptionRenewed(store)
        defer { Task { await scene.stop() } }
        let order = try #require(try await scene.rig.createOrder("learner", product: "vip-ios")["out_trade_no"] as? String)
        let refused = try await scene.assign(renewal, to: order, reason: "asked")
        #expect(refused.status == 409, "\(refused.json)")
        let error = refused.json["error"] as? [String: Any]
        #expect(error?["code"] as? String == "transaction_not_assignable")
        #expect((error?["message"] as? String)?.contains(again) == true, "\(refused.json)")
        #expect(try await scene.rig.iap.store.appleTransaction(renewal)?.outTradeNo == nil)
        // Assigned, the resubscription takes its renewal with it.
        let sibling = try #require(try await scene.rig.createOrder("sibling", product: "vip-ios")["out_trade_no"] as? String)
        let assigned = try await scene.assign(again, to: sibling)
        #expect(assigned.status == 200, "\(assigned.json)")
        #expect(try await scene.rig.iap.store.appleTransaction(renewal)?.outTradeNo != nil)
        #expect(try await scene.vip(of: "sibling")["active"] as? Bool == true)
        #expect(try await scene.vip()["active"] as? Bool == false)
    }

    /// On an App Store account that bought for the learner and the sibling, the learner's lapsed
    /// subscription resubscribed without a token and with no order open (it waits unclaimed), then
    /// renewed by Apple a month on (the renewal waits with it): the resubscription's and the
    /// renewal's transaction ids.
    static func waitingResubscriptionRenewed(_ store: StoreKind) async throws -> (Scene, String, String) {
        let scene = try await Self.lapsed(store)
        try await Self.siblingBuysACourse(scene)
        let again = try scene.resubscribeWithoutToken()
        await scene.settle()
        await scene.advance(days: 31)
        let renewal = try scene.truth().latestTransactionId
        #expect(renewal != again.transactionID)
        for id in [again.transactionID, renewal] {
            #expect(try await scene.rig.iap.store.appleTransaction(id)?.outTradeNo == nil, "\(id) waits")
        }
        return (scene, again.transactionID, renewal)
    }

    @Test("While a new user's tokenless resubscription waits, the subscription's later payments wait with it: an upgrade is not the earlier subscriber's, nor taken by an order they open",
          arguments: StoreKind.all)
    func laterPaymentsWaitWithAWaitingResubscription(store: StoreKind) async throws {
        let scene = try await Self.lapsed(store)
        defer { Task { await scene.stop() } }
        _ = try await scene.rig.createOrder("sibling", product: "vip-ios")
        let again = try scene.resubscribeWithoutToken()
        await scene.settle()
        _ = try scene.rig.appStore.changeProduct(originalTransactionID: scene.original, to: "vip.yearly")
        await scene.settle()
        let upgrade = try scene.truth().latestTransactionId
        #expect(upgrade != again.transactionID)
        func waiting() async throws -> Bool {
            let first = try await scene.rig.iap.store.appleTransaction(again.transactionID)
            let second = try await scene.rig.iap.store.appleTransaction(upgrade)
            return first?.outTradeNo == nil && second?.outTradeNo == nil
        }
        #expect(try await waiting(), "the upgrade is not the learner's")
        // The learner opens orders for the subscription's products and the reconciler reads their
        // App Store account: it takes neither payment for them.
        _ = try await scene.rig.createOrder("learner", product: "vip-ios-year")
        _ = try await scene.rig.createOrder("learner", product: "vip-ios")
        for _ in 0..<3 { _ = await scene.rig.sweep() }
        #expect(try await waiting())
        #expect(try await scene.vip()["active"] as? Bool == false)
        // The sibling's app reports the resubscription: the upgrade that waited with it is theirs too.
        #expect(try await scene.rig.report("sibling", ["signed_transaction": again.signedTransactionInfo]).status == 200)
        let paid = try await scene.orders().filter { [again.transactionID, upgrade].contains($0.appleTransactionID) }
        #expect(paid.count == 2 && paid.allSatisfy { $0.userID == "sibling" }, "\(paid.map { ($0.outTradeNo, $0.userID) })")
        let vip = try await scene.vip(of: "sibling")
        #expect(vip["expires_at"] as? String == Timestamp.rfc3339(Date(millisecondsSince1970: try scene.truth().expiresDate)), "\(vip)")
    }

    @Test("A change of a shared subscription's state that no payment of its holder announced (a tokenless upgrade nobody could be tied to) is announced to the user holding it, not to its first purchase's",
          arguments: StoreKind.all)
    func aStateChangeOfASharedSubscriptionIsAnnouncedToItsHolder(store: StoreKind) async throws {
        let scene = try await Self.lapsed(store)
        defer { Task { await scene.stop() } }
        // The sibling resubscribes without a token and their app reports it: theirs.
        _ = try await scene.rig.createOrder("sibling", product: "vip-ios")
        let again = try scene.resubscribeWithoutToken()
        await scene.settle()
        #expect(try await scene.rig.report("sibling", ["signed_transaction": again.signedTransactionInfo]).status == 200)
        func announced(_ user: String) async throws -> Int {
            var count = 0
            for order in try await scene.orders() {
                count += try await scene.rig.store.outboxEvents(order.outTradeNo).filter {
                    $0.type == "entitlement.changed" && $0.payload.contains(#""user_id":"\#(user)""#)
                }.count
            }
            return count
        }
        let before = (learner: try await announced("learner"), sibling: try await announced("sibling"))
        // An upgrade without a token: a shared subscription's purchase nobody had an order open
        // for waits unclaimed, and the subscription's state no longer counts for the sibling.
        _ = try scene.rig.appStore.changeProduct(originalTransactionID: scene.original, to: "vip.yearly")
        await scene.settle()
        let upgrade = try scene.truth().latestTransactionId
        #expect(try await scene.rig.iap.store.appleTransaction(upgrade)?.outTradeNo == nil)
        #expect(try await scene.state().latestTransactionID == upgrade)
        #expect(try await announced("sibling") > before.sibling)
        #expect(try await announced("learner") == before.learner)
    }

    @Test("A subscription two users of one App Store account held: a resubscription without a token goes to the one with an order open, and its renewals stay theirs",
          arguments: StoreKind.all)
    func aTokenlessResubscriptionOnASharedSubscriptionGoesToTheUserWithAnOpenOrder(store: StoreKind) async throws {
        let scene = try await Self.heldByTwo(store)
        defer { Task { await scene.stop() } }
        // The sibling buys again from the App Store's settings (no token) while an order of theirs is open.
        let open = try #require(try await scene.rig.createOrder("sibling", product: "vip-ios")["out_trade_no"] as? String)
        let again = try scene.resubscribeWithoutToken()
        await scene.settle()
        let paid = try #require(try await scene.orders().first { $0.appleTransactionID == again.transactionID })
        #expect(paid.outTradeNo == open && paid.userID == "sibling", "\(paid)")
        // Its renewal, tokenless too, is the sibling's: the user who holds the subscription now.
        await scene.advance(days: 32)
        let truth = try scene.truth()
        let renewal = try #require(try await scene.orders().first { $0.appleTransactionID == truth.latestTransactionId })
        #expect(renewal.outTradeNo != paid.outTradeNo && renewal.userID == "sibling", "\(renewal)")
        #expect(!renewal.flags.contains(.matchedWithoutOrder))
    }

    @Test("The renewals of a tokenless resubscription nobody could be tied to wait with it, and follow it to the user its report proves",
          arguments: StoreKind.all)
    func renewalsOfAnUnclaimedResubscriptionWaitWithIt(store: StoreKind) async throws {
        let scene = try await Self.heldByTwo(store)
        defer { Task { await scene.stop() } }
        // Bought again without a token while neither has an order open: nobody's yet, and its renewal neither.
        let again = try scene.resubscribeWithoutToken()
        await scene.settle()
        await scene.advance(days: 32)
        let renewal = try scene.truth().latestTransactionId
        #expect(renewal != again.transactionID)
        let waiting = try await scene.orders().filter { [again.transactionID, renewal].contains($0.appleTransactionID) }
        #expect(waiting.isEmpty, "\(waiting.map { ($0.outTradeNo, $0.userID) })")
        // The learner's app reports the resubscription: it and the renewal that waited with it are theirs.
        #expect(try await scene.rig.report("learner", ["signed_transaction": again.signedTransactionInfo]).status == 200)
        let credited = try await scene.orders().filter { [again.transactionID, renewal].contains($0.appleTransactionID) }
        #expect(credited.count == 2 && credited.allSatisfy { $0.userID == "learner" }, "\(credited.map { ($0.outTradeNo, $0.userID) })")
        // The renewal, credited from the ledger once its resubscription was, is one Apple charged by
        // itself: nothing for support to look at.
        let renewed = try #require(credited.first { $0.appleTransactionID == renewal })
        #expect(!renewed.flags.contains(.matchedWithoutOrder), "\(renewed.flags)")
        // And so is the next renewal.
        await scene.advance(days: 32)
        let next = try scene.truth().latestTransactionId
        let nextOrder = try #require(try await scene.orders().first { $0.appleTransactionID == next })
        #expect(next != renewal && nextOrder.userID == "learner", "\(nextOrder)")
    }

    @Test("A renewal pays an order of its own, never an order its subscriber opened for a purchase still to come",
          arguments: StoreKind.all)
    func aRenewalDoesNotPayTheSubscribersOpenOrder(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store)
        defer { Task { await scene.stop() } }
        await scene.advance(days: 28)
        let open = try #require(try await scene.rig.createOrder("learner", product: "vip-ios")["out_trade_no"] as? String)
        await scene.advance(days: 4)
        let truth = try scene.truth()
        let renewal = try #require(try await scene.orders().first { $0.appleTransactionID == truth.latestTransactionId })
        #expect(renewal.outTradeNo != open && renewal.userID == "learner" && renewal.flags.isEmpty, "\(renewal)")
        #expect(try await scene.rig.store.order(open)?.state != .success)
    }

    @Test("Support's recheck of a subscription's order reads where the subscription stands from Apple: a lost auto-renew change is found",
          arguments: StoreKind.all)
    func supportsRecheckReadsTheSubscriptionsStatus(store: StoreKind) async throws {
        let scene = try await Scene.subscribe(store, recovery: AppStoreRecoveryPolicy(backfillInterval: 0))
        defer { Task { await scene.stop() } }
        #expect(try await scene.vip()["will_renew"] as? Bool == true)
        scene.rig.appStore.apply(AppStoreFaultPlan(dropNotifications: AppStoreNotificationDrops()))
        _ = try scene.rig.appStore.setAutoRenew(originalTransactionID: scene.original, enabled: false)
        #expect(try await scene.vip()["will_renew"] as? Bool == true, "the change was lost")
        let order = try #require(try await scene.orders().first)
        let rechecked = try await scene.rig.gateway.send(.post, "/v1/support/orders/\(order.outTradeNo)/recheck",
                                                         token: GatewayRig.support)
        #expect(rechecked.status == 200)
        #expect(try await scene.state().autoRenew == false)
        try await scene.expectVIPMatchesApple("after support's recheck")
        let events = try await scene.rig.store.events(order.outTradeNo).map(\.detail)
        #expect(events.contains { $0.hasPrefix("Get All Subscription Statuses: subscription \(scene.original) active until") && $0.hasSuffix("auto-renew off") },
                "\(events)")
    }

    @Test("Renewals Apple notified before anyone reported the subscription's first purchase are credited the moment it is: access does not wait for the reconciler",
          arguments: StoreKind.all)
    func renewalsWaitingForTheirUserAreCreditedWithTheFirstPurchase(store: StoreKind) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString).json")
        try Data(Self.catalog.utf8).write(to: file)
        let rig = try await IAPRig.start(.inProcess, store: store, environment: ["GATEWAY_CATALOG": file.path])
        rig.appStore.configureSubscriptionProducts([
            AppStoreSubscriptionProduct(productID: "vip.monthly", groupIdentifier: "21000001", period: "P1M", level: 2),
        ])
        // Bought without a token and not reported: Apple's notifications of it and of two renewals
        // name no order and no user the gateway knows.
        let bought = try rig.buy("apple-unreported", token: nil, product: "vip.monthly", type: "Auto-Renewable Subscription")
        let scene = Scene(rig: rig, original: bought.transactionID,
                          simulatorClock: try #require(rig.appStore.clock as? ScaledClock), catalogFile: file)
        defer { Task { await scene.stop() } }
        await scene.settle()
        await scene.advance(days: 31)
        await scene.advance(days: 31)
        let waiting = try await rig.iap.store.appleTransactions(originalTransactionID: bought.transactionID)
        #expect(waiting.count == 3 && waiting.allSatisfy { $0.outTradeNo == nil }, "\(waiting.map(\.outTradeNo))")
        // The app reports the first purchase (StoreKit hands it over at the next launch).
        let answer = try await rig.report("learner", ["signed_transaction": bought.signedTransactionInfo])
        #expect(answer.status == 200)
        let credited = try await rig.iap.store.appleTransactions(originalTransactionID: bought.transactionID)
        #expect(credited.allSatisfy { $0.outTradeNo != nil }, "\(credited.map(\.outTradeNo))")
        #expect(try await scene.orders().allSatisfy { $0.userID == "learner" && $0.state == .success })
        // The two renewals are payments Apple took by itself, credited from the ledger: not flagged.
        let renewals = try await scene.orders().filter { $0.appleTransactionID != bought.transactionID }
        #expect(renewals.count == 2 && renewals.allSatisfy { $0.flags.isEmpty }, "\(renewals.map(\.flags))")
        let answerVIP = try await rig.gateway.send(.get, "/v1/users/learner/entitlements", token: rig.token("learner"))
        let vip = try #require((answerVIP.json["entitlements"] as? [[String: Any]])?.first { $0["entitlement"] as? String == "vip" })
        #expect(vip["active"] as? Bool == true, "\(vip)")

        // The same when support assigns the first purchase of another such subscription.
        let second = try rig.buy("apple-unreported-2", token: nil, product: "vip.monthly", type: "Auto-Renewable Subscription")
        await scene.settle()
        await scene.advance(days: 31)
        let order = try await rig.createOrder("member", product: "vip-ios")
        let assigned = try await rig.gateway.send(
            .post, "/v1/support/apple-transactions/\(second.transactionID)/assign", token: GatewayRig.support,
            body: #"{"out_trade_no":"\#(order["out_trade_no"] as? String ?? "")","reason":"receipt e-mail"}"#)
        #expect(assigned.status == 200, "\(assigned.json)")
        let rows = try await rig.iap.store.appleTransactions(originalTransactionID: second.transactionID)
        #expect(rows.count == 2 && rows.allSatisfy { $0.outTradeNo != nil }, "\(rows.map(\.outTradeNo))")
    }

    @Test("A resubscription made without an order's token is a person's purchase, not a renewal: the order made for it is flagged for support",
          arguments: StoreKind.all)
    func aResubscriptionWithoutATokenIsFlaggedForSupport(store: StoreKind) async throws {
        let scene = try await Self.lapsed(store)
        defer { Task { await scene.stop() } }
        // Someone buys again on the same App Store account, from outside the app: no token.
        let again = try scene.resubscribeWithoutToken()
        await scene.settle()
        let made = try #require(try await scene.orders().first { $0.appleTransactionID == again.transactionID })
        #expect(made.flags.contains(.matchedWithoutOrder), "\(made.flags)")
        let attention = try await scene.rig.gateway.send(.get, "/v1/support/attention", token: GatewayRig.support)
        #expect(String(decoding: attention.body, as: UTF8.self).contains(made.outTradeNo))
        // Its renewal a month on is Apple's own doing: expected, not flagged.
        await scene.advance(days: 32)
        let truth = try scene.truth()
        let renewal = try #require(try await scene.orders().first { $0.appleTransactionID == truth.latestTransactionId })
        #expect(renewal.outTradeNo != made.outTradeNo && !renewal.flags.contains(.matchedWithoutOrder))
    }

    @Test("A resubscription without a token, made while another user of the app had an order open for it and its only subscriber none, waits for its report instead of going to the subscriber",
          arguments: StoreKind.all)
    func aTokenlessResubscriptionByANewUserOfTheAccountWaitsForTheirReport(store: StoreKind) async throws {
        let scene = try await Self.lapsed(store)
        defer { Task { await scene.stop() } }
        // The sibling, new on the device, orders; the purchase reaches Apple without the order's token.
        let open = try #require(try await scene.rig.createOrder("sibling", product: "vip-ios")["out_trade_no"] as? String)
        let again = try scene.resubscribeWithoutToken()
        await scene.settle()
        #expect(try await scene.rig.iap.store.appleTransaction(again.transactionID)?.outTradeNo == nil)
        #expect(try await scene.vip()["active"] as? Bool == false, "not the learner's")
        let answer = try await scene.rig.report("sibling", ["signed_transaction": again.signedTransactionInfo])
        #expect(answer.status == 200 && answer.json["credited_user_id"] as? String == "sibling", "\(answer.json)")
        let paid = try #require(try await scene.orders().first { $0.appleTransactionID == again.transactionID })
        #expect(paid.outTradeNo == open && paid.userID == "sibling", "\(paid)")
    }

    @Test("A tokenless resubscription on an App Store account another user of the app also bought from is a shared account's purchase: it waits for its payer's report instead of going to the subscription's former holder",
          arguments: StoreKind.all)
    func aTokenlessResubscriptionOnAnAccountTwoUsersBoughtFromWaits(store: StoreKind) async throws {
        let scene = try await Self.lapsed(store)
        defer { Task { await scene.stop() } }
        try await Self.siblingBuysACourse(scene)
        // The sibling resubscribes from the App Store, without a token and with no order open.
        let again = try scene.resubscribeWithoutToken()
        await scene.settle()
        #expect(try await scene.rig.iap.store.appleTransaction(again.transactionID)?.outTradeNo == nil)
        #expect(try await scene.vip()["active"] as? Bool == false, "not the learner's")
        let answer = try await scene.rig.report("sibling", ["signed_transaction": again.signedTransactionInfo])
        #expect(answer.status == 200 && answer.json["credited_user_id"] as? String == "sibling", "\(answer.json)")
        #expect(try await scene.vip(of: "sibling")["active"] as? Bool == true)
    }

    @Test("A tokenless resubscription on an App Store account two users bought from goes to the one of them who had an order open for it when it was made",
          arguments: StoreKind.all)
    func aTokenlessResubscriptionOnASharedAccountGoesToTheUserWithTheOpenOrder(store: StoreKind) async throws {
        let scene = try await Self.lapsed(store)
        defer { Task { await scene.stop() } }
        try await Self.siblingBuysACourse(scene)
        let open = try #require(try await scene.rig.createOrder("sibling", product: "vip-ios")["out_trade_no"] as? String)
        let again = try scene.resubscribeWithoutToken()
        await scene.settle()
        #expect(try await scene.rig.iap.store.appleTransaction(again.transactionID)?.outTradeNo == open)
        #expect(try await scene.vip(of: "sibling")["active"] as? Bool == true)
        #expect(try await scene.vip()["active"] as? Bool == false)
    }

    @Test("A tokenless resubscription found late, on an App Store account two users bought from, goes to the one whose order was open when it was made, though their app closed that order since",
          arguments: StoreKind.all)
    func aLateResubscriptionGoesToTheUserWhoseOrderWasOpenWhenItWasMade(store: StoreKind) async throws {
        let scene = try await Self.lapsed(store)
        defer { Task { await scene.stop() } }
        try await Self.siblingBuysACourse(scene)
        let open = try #require(try await scene.rig.createOrder("sibling", product: "vip-ios")["out_trade_no"] as? String)
        IAPEndToEndTests.dropNotifications(scene.rig)
        let again = try scene.resubscribeWithoutToken()
        // The purchase looked interrupted: the app gives up on its order.
        let closed = try await scene.rig.gateway.send(.post, "/v1/orders/\(open)/close", token: scene.rig.token("sibling"))
        #expect(closed.status == 200, "\(closed.json)")
        scene.rig.appStore.apply(AppStoreFaultPlan())
        _ = await scene.rig.iap.backfill(since: nil, claimant: "test", force: true)
        let credited = try #require(try await scene.rig.iap.store.appleTransaction(again.transactionID)?.outTradeNo)
        #expect(try await scene.rig.store.order(credited)?.userID == "sibling")
        #expect(try await scene.vip(of: "sibling")["active"] as? Bool == true)
        #expect(try await scene.vip()["active"] as? Bool == false)
    }

    /// The sibling buys the course on the learner's App Store account with their own order's token:
    /// the account has bought for two users of the app.
    static func siblingBuysACourse(_ scene: Scene) async throws {
        let course = try await scene.rig.createOrder("sibling")
        let bought = try scene.rig.buy("apple-learner", token: IAPEndToEndTests.token(course))
        #expect(try await scene.rig.report("sibling", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
        #expect(try await scene.rig.iap.store.appleTransaction(bought.transactionID)?.outTradeNo == course["out_trade_no"] as? String)
    }

    @Test("A downgrade to a product granting another entitlement ends the old one with its last period and grants the new one from the renewal",
          arguments: StoreKind.all)
    func aDowngradeEndsTheHigherTierAtTheRenewal(store: StoreKind) async throws {
        try await Self.downgrade(store, to: "lite.monthly") { scene, entitlements, renewal in
            #expect(entitlements.keys.sorted() == ["lite", "vip"])
            #expect(entitlements["vip"]?["active"] as? Bool == false)
            let truth = try scene.truth()
            #expect(entitlements["lite"]?["active"] as? Bool == true)
            #expect(entitlements["lite"]?["expires_at"] as? String
                    == Timestamp.rfc3339(Date(millisecondsSince1970: truth.expiresDate)))
            #expect(renewal.productID == "lite-ios" && renewal.flags.isEmpty, "\(renewal.flags)")
        }
    }

    @Test("Renewals into a product the catalog does not have grant nothing, extend nothing, and are flagged unknown_product only",
          arguments: StoreKind.all)
    func aDowngradeToAnUnknownProductGrantsNothing(store: StoreKind) async throws {
        try await Self.downgrade(store, to: "mystery.monthly") { _, entitlements, renewal in
            #expect(entitlements.keys.sorted() == ["vip"])
            #expect(entitlements["vip"]?["active"] as? Bool == false)
            #expect(renewal.productID == nil && renewal.flags == [.unknownProduct], "\(renewal.flags)")
        }
    }

    /// The learner's monthly subscription moved down to `product` (a lower level of its group),
    /// then renewed into it; `check` sees the learner's entitlements by name and the renewal's order.
    static func downgrade(
        _ store: StoreKind, to product: String,
        check: (Scene, [String: [String: Any]], OrderRecord) async throws -> Void
    ) async throws {
        let scene = try await Scene.subscribe(store)
        defer { Task { await scene.stop() } }
        scene.rig.appStore.configureSubscriptionProducts([
            AppStoreSubscriptionProduct(productID: product, groupIdentifier: "21000001", period: "P1M", level: 3),
        ])
        _ = try scene.rig.appStore.changeProduct(originalTransactionID: scene.original, to: product)
        await scene.advance(days: 32)
        let truth = try scene.truth()
        #expect(truth.productId == product)
        let renewal = try #require(try await scene.orders().first { $0.appleTransactionID == truth.latestTransactionId })
        let answer = try await scene.rig.gateway.send(.get, "/v1/users/learner/entitlements", token: scene.rig.token("learner"))
        let list = try #require(answer.json["entitlements"] as? [[String: Any]])
        try await check(scene, Dictionary(list.map { ($0["entitlement"] as? String ?? "", $0) }, uniquingKeysWith: { first, _ in first }),
                        renewal)
    }
}
