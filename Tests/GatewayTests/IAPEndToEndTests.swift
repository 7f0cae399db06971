// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
@testable import Gateway
import HTTP
import SimulatorKit
import StorageCore
import StoreTestSupport
import TestSupport
import Testing

/// The seeds' scenarios of iOS purchases, end to end: the app's calls to the gateway, the gateway's
/// calls to the App Store simulator (Server API, verifyReceipt) and the simulator's notifications to
/// the gateway — over real sockets, and the same bodies in process.
@Suite(.serialized)
struct IAPEndToEndTests {
    static func withRig(_ mode: GatewayRig.Mode, store: StoreKind = .sqlite, acceptSandbox: Bool = true,
                        serverAPI: Bool = true, verifiedReceipts: Bool = true, _ body: (IAPRig) async throws -> Void) async throws {
        let rig = try await IAPRig.start(mode, store: store, acceptSandbox: acceptSandbox, serverAPI: serverAPI,
                                         verifiedReceipts: verifiedReceipts)
        do {
            try await body(rig)
            await rig.stop()
        } catch {
            await rig.stop()
            throw error
        }
    }

    static func dropNotifications(_ rig: IAPRig) {
        rig.appStore.apply(AppStoreFaultPlan(notify: NotifyFaults(dropRate: 1)))
    }

    static func number(_ order: [String: Any]) -> String { order["out_trade_no"] as? String ?? "" }
    static func token(_ order: [String: Any]) -> String { order["app_account_token"] as? String ?? "" }
    static func order(_ response: GatewayRig.Response) -> [String: Any] { response.json["order"] as? [String: Any] ?? [:] }

    /// `users` each buy a course on one App Store account with their own token and report it: the
    /// account is shared, as the gateway learns from its history.
    static func shareAccount(_ account: String, between users: [String], _ rig: IAPRig) async throws {
        for user in users {
            let earlier = try await rig.createOrder(user, product: "swift-201")
            let bought = try rig.buy(account, token: token(earlier), product: "com.example.courses.swift201")
            #expect(try await rig.report(user, ["signed_transaction": bought.signedTransactionInfo]).status == 200)
        }
    }

    // MARK: - The app killed before the callback (seeds 001, 004)

    @Test(arguments: GatewayRig.Mode.allCases)
    func theAppKilledBeforeTheCallbackReportsAtTheNextLaunchWithoutTheOrderNumber(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            Self.dropNotifications(rig)
            // StoreKit 2: the token travels inside the signed transaction.
            let created = try await rig.createOrder("user-a")
            #expect(created["channel"] as? String == "apple" && created["state"] as? String == "NOTPAY")
            #expect(created["apple_product_id"] as? String == IAPRig.appleProduct)
            let bought = try rig.buy("apple-a", token: Self.token(created))
            // … the app dies; at the next launch the unfinished transaction comes back, without out_trade_no.
            let answer = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
            #expect(answer.status == 200)
            #expect(answer.json["finish_transaction"] as? Bool == true)
            #expect(answer.json["matched_by"] as? String == "app_account_token")
            #expect(answer.json["credited_user_id"] as? String == "user-a")
            let order = Self.order(answer)
            #expect(order["out_trade_no"] as? String == Self.number(created))
            #expect(order["state"] as? String == "SUCCESS")
            #expect(order["environment"] as? String == "Production")
            #expect(order["apple_transaction_id"] as? String == bought.transactionID)
            #expect(order["original_transaction_id"] as? String == bought.originalTransactionID)

            // StoreKit 1: the receipt and the transaction id, no token and no order number: 凑单.
            let second = try await rig.createOrder("user-a", product: "swift-201")
            let legacy = try rig.buy("apple-a", token: nil, product: "com.example.courses.swift201")
            let matched = try await rig.report("user-a", ["receipt": legacy.receipt, "transaction_id": legacy.transactionID])
            #expect(matched.status == 200)
            #expect(matched.json["matched_by"] as? String == "user_product")
            #expect(Self.order(matched)["out_trade_no"] as? String == Self.number(second))
            // With the Server API key the receipt is read locally and the transaction decided by Get Transaction Info.
            let events = try await rig.store.events(Self.number(second)).map(\.detail)
            #expect(events.contains { $0.contains("app receipt (read locally") && $0.contains("Get Transaction Info") })
            #expect(events.contains { $0.contains("凑单") })
            #expect(rig.appStore.counters["production verifyReceipt"] == nil)
        }
    }

    // MARK: - Interrupted purchases (seeds 000, 003)

    @Test(arguments: GatewayRig.Mode.allCases)
    func anInterruptedPurchaseIsCreditedWhenItsSecondTransactionComesWithoutTheToken(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            let created = try await rig.createOrder("user-a")
            let (failed, completed) = try rig.appStore.interruptedPurchase(SimulatedPurchase(
                user: "apple-a", productID: IAPRig.appleProduct, appAccountToken: UUID(uuidString: Self.token(created))))
            #expect(failed.appAccountToken != nil)
            #expect(completed.appAccountToken == nil)
            // The failed one the app finishes at once (nothing to report); the second arrives without the token.
            let answer = try await rig.report("user-a", ["signed_transaction": completed.signedTransactionInfo])
            #expect(answer.status == 200)
            #expect(answer.json["matched_by"] as? String == "user_product")
            #expect(answer.json["finish_transaction"] as? Bool == true)
            #expect(Self.order(answer)["out_trade_no"] as? String == Self.number(created))
            #expect(try await rig.order(Self.number(created))?.state == .success)
        }
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func onASharedAccountAnInterruptedPurchaseGoesToTheUserWithTheOrderOpenAndOtherwiseWaitsForItsReport(mode: GatewayRig.Mode)
        async throws
    {
        try await Self.withRig(mode) { rig in
            // Two users of one iPad, one App Store account: each has bought with a token before.
            try await Self.shareAccount("apple-family-ipad", between: ["user-a", "user-b"], rig)
            // A orders, and the purchase is interrupted: its completed transaction has no token, and
            // Apple's notification of it comes before the app's report.
            let created = try await rig.createOrder("user-a")
            let (_, completed) = try rig.appStore.interruptedPurchase(SimulatedPurchase(
                user: "apple-family-ipad", productID: IAPRig.appleProduct, appAccountToken: UUID(uuidString: Self.token(created))))
            let credited = try await eventually(timeout: .seconds(60)) {
                try await rig.order(Self.number(created))?.state == .success
            }
            #expect(credited, "the notification credits A's open order, not the account's last buyer")
            let answer = try await rig.report("user-a", ["signed_transaction": completed.signedTransactionInfo])
            #expect(answer.status == 200 && answer.json["credited_user_id"] as? String == "user-a")
            #expect(answer.json["finish_transaction"] as? Bool == true)
            #expect(Self.order(answer)["out_trade_no"] as? String == Self.number(created))

            // B buys the same way without an order open: nobody's here until B's app reports.
            let (_, unordered) = try rig.appStore.interruptedPurchase(SimulatedPurchase(
                user: "apple-family-ipad", productID: IAPRig.appleProduct, appAccountToken: nil))
            let recorded = try await eventually(timeout: .seconds(60)) {
                try await rig.iap.store.appleTransaction(unordered.transactionID) != nil
            }
            #expect(recorded)
            #expect(try await rig.iap.store.appleTransaction(unordered.transactionID)?.outTradeNo == nil)
            _ = await rig.sweep()
            #expect(try await rig.iap.store.appleTransaction(unordered.transactionID)?.outTradeNo == nil)
            let reported = try await rig.report("user-b", ["signed_transaction": unordered.signedTransactionInfo])
            #expect(reported.status == 200 && reported.json["credited_user_id"] as? String == "user-b")
        }
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func onAPhonePassedOnTheNewUsersInterruptedPurchaseWaitsForTheirReportInsteadOfGoingToTheOneBefore(mode: GatewayRig.Mode)
        async throws
    {
        try await Self.withRig(mode) { rig in
            // The App Store account has only ever bought for user-a.
            try await Self.shareAccount("apple-passed-on", between: ["user-a"], rig)
            // user-b, new on the phone, orders; the purchase is interrupted (its completed
            // transaction has no token) and Apple's notification of it comes before the app's report.
            let created = try await rig.createOrder("user-b")
            let (_, completed) = try rig.appStore.interruptedPurchase(SimulatedPurchase(
                user: "apple-passed-on", productID: IAPRig.appleProduct, appAccountToken: UUID(uuidString: Self.token(created))))
            let recorded = try await eventually(timeout: .seconds(60)) {
                try await rig.iap.store.appleTransaction(completed.transactionID) != nil
            }
            #expect(recorded)
            #expect(try await rig.iap.store.appleTransaction(completed.transactionID)?.outTradeNo == nil,
                    "user-b had an order open for it and user-a none: not user-a's")
            _ = await rig.sweep()
            #expect(try await rig.iap.store.appleTransaction(completed.transactionID)?.outTradeNo == nil)
            let answer = try await rig.report("user-b", ["signed_transaction": completed.signedTransactionInfo])
            #expect(answer.status == 200 && answer.json["credited_user_id"] as? String == "user-b", "\(answer.json)")
            #expect(answer.json["matched_by"] as? String == "user_product")
            #expect(Self.order(answer)["out_trade_no"] as? String == Self.number(created))

            // An account's only user still gets a purchase of theirs made without an order when
            // nobody had one open for it (an offer code, a purchase on the App Store's page).
            try await Self.shareAccount("apple-one-user", between: ["user-c"], rig)
            let own = try rig.buy("apple-one-user", token: nil, product: "com.example.courses.swift201")
            let credited = try await eventually(timeout: .seconds(60)) {
                try await rig.iap.store.appleTransaction(own.transactionID)?.outTradeNo != nil
            }
            #expect(credited)
            let ownOrder = try await rig.iap.store.appleTransaction(own.transactionID)?.outTradeNo
            #expect(try await rig.order(ownOrder ?? "")?.userID == "user-c")
        }
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func onASharedAccountTheReconcilersReadingAndSupportKeepToTheSameRule(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            try await Self.shareAccount("apple-shared", between: ["user-a", "user-b"], rig)
            // Both have an order open for the product when A's interrupted purchase is made.
            let orderB = try await rig.createOrder("user-b")
            let orderA = try await rig.createOrder("user-a")
            let (_, completed) = try rig.appStore.interruptedPurchase(SimulatedPurchase(
                user: "apple-shared", productID: IAPRig.appleProduct, appAccountToken: UUID(uuidString: Self.token(orderA))))
            #expect(try await eventually(timeout: .seconds(60)) {
                try await rig.iap.store.appleTransaction(completed.transactionID) != nil
            })
            // The reconciler reads both users' account: it takes the purchase for neither order.
            _ = await rig.sweep()
            #expect(try await rig.iap.store.appleTransaction(completed.transactionID)?.outTradeNo == nil)
            #expect(try await rig.order(Self.number(orderB))?.state == .notPay)
            #expect(try await rig.order(Self.number(orderA))?.state == .notPay)
            let answer = try await rig.report("user-a", ["signed_transaction": completed.signedTransactionInfo])
            #expect(answer.status == 200 && answer.json["credited_user_id"] as? String == "user-a")

            // A purchase nobody had an order open for: an order B opens afterwards is not the one it paid.
            let (_, later) = try rig.appStore.interruptedPurchase(SimulatedPurchase(
                user: "apple-shared", productID: "com.example.courses.swift201", appAccountToken: nil))
            #expect(try await eventually(timeout: .seconds(60)) { try await rig.iap.store.appleTransaction(later.transactionID) != nil })
            // A second after it, as a quick user of the same iPad might: by the sweep, or by a bare
            // transaction id (weak evidence), B's new order does not take it.
            rig.gateway.clock.advance(by: 1)
            let afterwards = try await rig.createOrder("user-b", product: "swift-201")
            _ = await rig.sweep()
            #expect(try await rig.iap.store.appleTransaction(later.transactionID)?.outTradeNo == nil)
            #expect(try await rig.order(Self.number(afterwards))?.state == .notPay)
            let weak = try await rig.report("user-b", ["transaction_id": later.transactionID])
            #expect(weak.status == 409 && weak.error?["code"] as? String == "transaction_unclaimed", "\(weak.json)")
            #expect(try await rig.order(Self.number(afterwards))?.state == .notPay)
            // Support assigns it to an order of one of the account's users, not of anyone else's.
            let outsider = try await rig.createOrder("user-c", product: "swift-201")
            let path = "/v1/support/apple-transactions/\(later.transactionID)/assign"
            let refused = try await rig.gateway.send(.post, path, token: GatewayRig.support,
                                                     body: #"{"out_trade_no":"\#(Self.number(outsider))","reason":"customer wrote in"}"#)
            #expect(refused.status == 409 && refused.error?["code"] as? String == "order_not_assignable", "\(refused.json)")
            let assigned = try await rig.gateway.send(.post, path, token: GatewayRig.support,
                                                      body: #"{"out_trade_no":"\#(Self.number(afterwards))","reason":"customer wrote in"}"#)
            #expect(assigned.status == 200, "\(assigned.json)")
            #expect(try await rig.order(Self.number(afterwards))?.state == .success)
        }
    }

    /// The shared-account rule's "open when it was bought": made before the purchase (no margin for
    /// the clocks) and not yet expired — an order past its expiry that the reconciler has not
    /// closed yet is no longer open.
    @Test func anOrderCountsForASharedAccountsPurchaseOnlyIfItWasOpenWhenTheyBought() {
        let bought = Date(timeIntervalSince1970: 1_800_000_000)
        let purchase = VerifiedPurchase(
            facts: AppleTransactionFacts(transactionID: "2000000100000009", originalTransactionID: "2000000100000009",
                                         productID: IAPRig.appleProduct, environment: "Production", purchaseDate: bought),
            via: "notification", verification: "test")
        func order(madeAt made: TimeInterval, expiresAfter lifetime: TimeInterval) -> OrderRecord {
            var order = IAPService.madeOrder(for: purchase, user: "user-b", amount: 990, currency: nil, description: "x",
                                             productID: nil, at: bought.addingTimeInterval(made))
            order.expiresAt = order.createdAt.addingTimeInterval(lifetime)
            return order
        }
        #expect(IAPService.wasOpen(order(madeAt: -60, expiresAfter: 7200), at: purchase))
        #expect(IAPService.wasOpen(order(madeAt: 0, expiresAfter: 7200), at: purchase))
        #expect(!IAPService.wasOpen(order(madeAt: 1, expiresAfter: 7200), at: purchase), "made a second after")
        #expect(!IAPService.wasOpen(order(madeAt: -7500, expiresAfter: 7200), at: purchase), "expired before")
        #expect(!IAPService.wasOpen(order(madeAt: -7200, expiresAfter: 7200), at: purchase), "expiring as it was bought")
    }

    // MARK: - Account switch (seeds 003, 004)

    @Test(arguments: GatewayRig.Mode.allCases)
    func userAPaysUserBIsLoggedInWhenTheAppReportsAndAsOrderIsCredited(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            let ordered = try await rig.createOrder("user-a")
            let other = try await rig.createOrder("user-b")
            let bought = try rig.buy("apple-shared-phone", token: Self.token(ordered))
            let answer = try await rig.report("user-b", ["signed_transaction": bought.signedTransactionInfo,
                                                         "out_trade_no": Self.number(other)])
            #expect(answer.status == 200)
            #expect(answer.json["credited_user_id"] as? String == "user-a")
            #expect(answer.json["matched_by"] as? String == "app_account_token")
            #expect(Self.order(answer)["out_trade_no"] as? String == Self.number(ordered))
            #expect(try await rig.order(Self.number(other))?.state == .notPay)
            // Reported again from B's session: the same answer, nothing more.
            let again = try await rig.report("user-b", ["signed_transaction": bought.signedTransactionInfo])
            #expect(again.status == 200 && again.json["credited_user_id"] as? String == "user-a")
            let timeline = try await rig.store.events(Self.number(ordered)).map(\.detail).joined(separator: "\n")
            #expect(timeline.contains("the account was switched"))
            #expect(try await rig.store.orderOutboxEvents(Self.number(ordered)).count == 1)
        }
    }

    // MARK: - Reinstall (seed 001)

    @Test func afterAReinstallTheOrderNumberIsGoneButTheTokenMatches() async throws {
        try await Self.withRig(.sockets) { rig in
            Self.dropNotifications(rig)
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: Self.token(created))
            // The reinstalled app has only what StoreKit gives it again: the transaction id.
            let answer = try await rig.report("user-a", ["transaction_id": bought.transactionID])
            #expect(answer.status == 200)
            #expect(answer.json["matched_by"] as? String == "app_account_token")
            #expect(Self.order(answer)["out_trade_no"] as? String == Self.number(created))
            let events = try await rig.store.events(Self.number(created)).map(\.detail)
            #expect(events.contains { $0.contains("Get Transaction Info") })
            #expect(rig.appStore.counters["production transactions"] ?? 0 >= 1)
        }
    }

    // MARK: - Double tap (seed 004)

    @Test func aDoubleTapMakesTwoOrdersForOnePurchaseOneIsPaidTheOtherExpires() async throws {
        try await Self.withRig(.sockets) { rig in
            let first = try await rig.createOrder("user-a")
            let second = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: Self.token(second))
            let answer = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
            #expect(Self.order(answer)["out_trade_no"] as? String == Self.number(second))
            #expect(try await rig.order(Self.number(first))?.state == .notPay)
            // Two hours later the reconciler finds nothing more for it, and closes it locally.
            rig.gateway.clock.advance(by: 7200 + 60)
            _ = await rig.sweep()
            #expect(try await rig.order(Self.number(first))?.state == .closed)
            #expect(try await rig.order(Self.number(second))?.state == .success)
            #expect(try await rig.store.orderOutboxEvents(Self.number(first)).isEmpty)
        }
    }

    // MARK: - The same transaction twice (seed 004; reliability C7)

    @Test(arguments: GatewayRig.Mode.allCases)
    func aTransactionReportedTwiceByOneUserIsIdempotentAndByAnotherIsRefused(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            Self.dropNotifications(rig)
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: nil)
            let first = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
            let again = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
            #expect(first.status == 200 && again.status == 200)
            #expect(Self.order(again)["out_trade_no"] as? String == Self.number(created))
            #expect(again.json["matched_by"] as? String == first.json["matched_by"] as? String)
            #expect(try await rig.store.orderOutboxEvents(Self.number(created)).count == 1)
            // Someone else replays it, a minute later: it is spent. (Reports add at most one line a
            // minute to an order's timeline: the replay's line waits for the minute to pass.)
            _ = try await rig.createOrder("user-b")
            rig.gateway.clock.advance(by: 61)
            let replay = try await rig.report("user-b", ["signed_transaction": bought.signedTransactionInfo])
            #expect(replay.status == 409)
            #expect(replay.error?["code"] as? String == "transaction_already_used")
            #expect(replay.json["finish_transaction"] as? Bool == true)
            #expect(try await rig.store.orders(appleTransactionID: bought.transactionID).map(\.outTradeNo) == [Self.number(created)])
            #expect(try await rig.store.events(Self.number(created)).map(\.detail).contains { $0.contains("refused 409") })
        }
    }

    // MARK: - Receipts: 21007, 21005, status 0 is not proof (seeds 001, 002, 004)

    @Test func aSandboxReceiptSentToProductionIsVerifiedInTheSandboxAndMarkedSo() async throws {
        // Without the Server API key, receipts are verifyReceipt's.
        try await Self.withRig(.sockets, serverAPI: false) { rig in
            Self.dropNotifications(rig)
            let created = try await rig.createOrder("reviewer")
            let bought = try rig.buy("app-review", token: nil, environment: .sandbox)
            let answer = try await rig.report("reviewer", ["receipt": bought.receipt, "transaction_id": bought.transactionID])
            #expect(answer.status == 200)
            #expect(Self.order(answer)["environment"] as? String == "Sandbox")
            #expect(Self.order(answer)["out_trade_no"] as? String == Self.number(created))
            #expect(rig.appStore.counters["production verifyReceipt"] ?? 0 >= 1)
            #expect(rig.appStore.counters["sandbox verifyReceipt"] ?? 0 >= 1)
            let paid = try #require(try await rig.store.orderOutboxEvents(Self.number(created)).first)
            #expect(paid.payload.contains(#""environment":"Sandbox""#))
        }
        // A gateway that does not take the sandbox: never creditable, finish it, nothing written —
        // whether verifyReceipt says so (21007 not followed) or Get Transaction Info finds it only
        // in the sandbox.
        for serverAPI in [false, true] {
            try await Self.withRig(.sockets, acceptSandbox: false, serverAPI: serverAPI) { rig in
                Self.dropNotifications(rig)
                let created = try await rig.createOrder("reviewer")
                let bought = try rig.buy("app-review", token: Self.token(created), environment: .sandbox)
                for fields in [["receipt": bought.receipt, "transaction_id": bought.transactionID],
                               ["signed_transaction": bought.signedTransactionInfo]] {
                    let answer = try await rig.report("reviewer", fields)
                    #expect(answer.status == 422)
                    #expect(answer.error?["code"] as? String == "transaction_not_creditable")
                    #expect(answer.json["finish_transaction"] as? Bool == true)
                }
                #expect(try await rig.order(Self.number(created))?.state == .notPay)
            }
        }
    }

    @Test func status21005IsRetriedAndAnAppStoreThatKeepsFailingIsA503ThatKeepsTheTransaction() async throws {
        try await Self.withRig(.sockets, serverAPI: false) { rig in
            Self.dropNotifications(rig)
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: nil)
            rig.appStore.apply(AppStoreFaultPlan(endpoints: ["verifyReceipt": AppStoreEndpointFaults(receiptStatus: 21005, limit: 1)],
                                                 notify: NotifyFaults(dropRate: 1)))
            let retried = try await rig.report("user-a", ["receipt": bought.receipt, "transaction_id": bought.transactionID])
            #expect(retried.status == 200)
            #expect(Self.order(retried)["out_trade_no"] as? String == Self.number(created))

            let later = try await rig.createOrder("user-a", product: "swift-201")
            let second = try rig.buy("apple-a", token: nil, product: "com.example.courses.swift201")
            rig.appStore.apply(AppStoreFaultPlan(endpoints: ["verifyReceipt": AppStoreEndpointFaults(receiptStatus: 21005)],
                                                 notify: NotifyFaults(dropRate: 1)))
            let down = try await rig.report("user-a", ["receipt": second.receipt, "transaction_id": second.transactionID])
            #expect(down.status == 503)
            #expect(down.error?["code"] as? String == "appstore_unavailable")
            #expect(down.json["finish_transaction"] as? Bool == false)
            #expect(try await rig.order(Self.number(later))?.state == .notPay)
            #expect(try await rig.store.appleTransaction(second.transactionID) == nil)
        }
    }

    @Test(arguments: [false, true])
    func aValidReceiptWithoutTheReportedTransactionIsRefusedAndChangesNothing(serverAPI: Bool) async throws {
        try await Self.withRig(.sockets, serverAPI: serverAPI) { rig in
            Self.dropNotifications(rig)
            let created = try await rig.createOrder("user-a")
            let mine = try rig.buy("apple-a", token: nil)
            let someoneElses = try rig.buy("apple-z", token: nil)
            let before = await TableRowCounts.of(rig.gateway.database)
            // status 0 for A's receipt — but the transaction is not in its in_app.
            let answer = try await rig.report("user-a", ["receipt": mine.receipt, "transaction_id": someoneElses.transactionID])
            #expect(answer.status == 422)
            #expect(answer.error?["code"] as? String == "transaction_not_in_receipt")
            #expect(answer.json["finish_transaction"] as? Bool == false)
            #expect(await TableRowCounts.of(rig.gateway.database) == before)
            #expect(try await rig.order(Self.number(created))?.state == .notPay)
        }
    }

    // MARK: - Forgeries

    @Test(arguments: GatewayRig.Mode.allCases)
    func aTransactionOrNotificationSignedByAnOutsideCAIsRefusedAndWritesNothing(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            Self.dropNotifications(rig)
            let created = try await rig.createOrder("user-a")
            let genuine = try #require(rig.appStore.transaction(try rig.buy("apple-a", token: Self.token(created)).transactionID))
            let forged = rig.appStore.roguePKI.sign(payload: genuine.payload)
            let before = await TableRowCounts.of(rig.gateway.database)
            let answer = try await rig.report("user-a", ["signed_transaction": forged])
            #expect(answer.status == 422)
            #expect(answer.error?["code"] as? String == "invalid_signed_data")
            #expect(answer.json["finish_transaction"] as? Bool == false)
            let notification = AppStoreNotification(
                notificationType: .oneTimeCharge, notificationUUID: UUID().uuidString.lowercased(), signedDate: Date(),
                bundleID: genuine.bundleID, appAppleID: rig.appStore.configuration.appAppleID, environment: .production)
            let payload = rig.appStore.roguePKI.sign(payload: notification.payload(signedTransactionInfo: forged, signedRenewalInfo: nil))
            let posted = try await rig.gateway.send(.post, "/appstore/notifications", token: nil,
                                                    body: #"{"signedPayload":"\#(payload)"}"#)
            #expect(posted.status == 400)
            let garbage = try await rig.gateway.send(.post, "/appstore/notifications", token: nil, body: "not json")
            #expect(garbage.status == 400)
            #expect(await TableRowCounts.of(rig.gateway.database) == before)
            #expect(try await rig.order(Self.number(created))?.state == .notPay)
        }
    }

    // MARK: - Never reported (seed 002: the server must recover it)

    @Test(arguments: GatewayRig.Mode.allCases)
    func aPurchaseNeverReportedIsCreditedByItsNotification(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: Self.token(created))
            let credited = try await eventually { try await rig.order(Self.number(created))?.state == .success }
            #expect(credited)
            let events = try await rig.store.events(Self.number(created)).map(\.detail)
            #expect(events.contains { $0.contains("ONE_TIME_CHARGE") && $0.contains("verified") })
            #expect(try await rig.store.orders(appleTransactionID: bought.transactionID).count == 1)
            // The app reports later all the same: 200, finish.
            let late = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
            #expect(late.status == 200 && late.json["finish_transaction"] as? Bool == true)
        }
    }

    @Test func withNotificationsDroppedTheReconcilerFindsTheUnreportedPurchaseInTheAccountsHistory() async throws {
        try await Self.withRig(.sockets) { rig in
            Self.dropNotifications(rig)
            // An earlier purchase of the account, reported and credited: the handle on the account.
            let earlier = try await rig.createOrder("user-a", product: "swift-201")
            let first = try rig.buy("apple-a", token: Self.token(earlier), product: "com.example.courses.swift201")
            #expect(try await rig.report("user-a", ["signed_transaction": first.signedTransactionInfo]).status == 200)
            // Then a purchase with no report and no notification (StoreKit 1: no token either).
            let created = try await rig.createOrder("user-a")
            let lost = try rig.buy("apple-a", token: nil)
            let report = await rig.sweep()
            #expect(report.settled >= 1)
            let order = try #require(try await rig.order(Self.number(created)))
            #expect(order.state == .success)
            #expect(order.appleTransactionID == lost.transactionID)
            let events = try await rig.store.events(Self.number(created)).map(\.detail)
            #expect(events.contains { $0.contains("Get Transaction History") })
            #expect(rig.appStore.counters["production history"] ?? 0 >= 1)
        }
    }

    // MARK: - Refunds and duplicates

    @Test(arguments: GatewayRig.Mode.allCases)
    func aRefundNotificationMovesTheOrderToRefundAndAnnouncesIt(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: Self.token(created))
            #expect(try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
            try rig.appStore.refund(transactionID: bought.transactionID, reason: 1)
            let refunded = try await eventually { try await rig.order(Self.number(created))?.state == .refund }
            #expect(refunded)
            let events = try await rig.store.orderOutboxEvents(Self.number(created))
            #expect(events.map(\.type) == ["order.paid", "order.refunded"])
            let data = try #require(GatewayRig.object(Array(events[1].payload.utf8))["data"] as? [String: Any])
            #expect(data["state"] as? String == "REFUND")
            #expect(data["refunded_amount"] as? Int == 990)
            #expect(data["apple_transaction_id"] as? String == bought.transactionID)
            // data is the order as GET shows it (plus the business's extras).
            let shown = try await rig.gateway.send(.get, "/v1/orders/\(Self.number(created))")
            for (key, value) in shown.json { #expect("\(data[key] ?? "missing")" == "\(value)", "\(key)") }
            // A refund is never credited again.
            let again = try await rig.report("user-a", ["transaction_id": bought.transactionID])
            #expect(again.status == 200 && (Self.order(again)["state"] as? String) == "REFUND")
        }
    }

    /// The report, its repeats and the notification racing on either store, over sockets: one credit.
    @Test(arguments: StoreKind.all)
    func aPurchaseReportedWhileItsNotificationArrivesIsCreditedOnceOnEitherStore(store: StoreKind) async throws {
        try await Self.withRig(.sockets, store: store) { rig in
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: Self.token(created))
            let answers = try await withThrowingTaskGroup(of: GatewayRig.Response.self) { group in
                for _ in 0..<4 {
                    group.addTask { try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo]) }
                }
                var all: [GatewayRig.Response] = []
                for try await answer in group { all.append(answer) }
                return all
            }
            #expect(answers.allSatisfy { $0.status == 200 && $0.json["finish_transaction"] as? Bool == true })
            #expect(Set(answers.map { Self.order($0)["out_trade_no"] as? String ?? "" }) == [Self.number(created)])
            _ = await eventually(timeout: .seconds(60)) { rig.appStore.pendingNotifications == 0 }
            #expect(try await rig.store.orderOutboxEvents(Self.number(created)).count == 1)
            #expect(try await rig.store.orders(appleTransactionID: bought.transactionID).map(\.outTradeNo) == [Self.number(created)])
            let ledger = try #require(try await rig.store.appleTransaction(bought.transactionID))
            #expect(ledger.outTradeNo == Self.number(created) && ledger.matchedBy == .appAccountToken)
            let transitions = try await rig.store.events(Self.number(created)).filter {
                $0.kind == OrderEvent.stateChangedKind && $0.detail.contains("-> SUCCESS")
            }
            #expect(transitions.count == 1)
        }
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func duplicateNotificationsHaveOneEffect(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            rig.appStore.apply(AppStoreFaultPlan(notify: NotifyFaults(duplicateRate: 1, duplicateCopies: 3)))
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: Self.token(created))
            #expect(try await eventually { try await rig.order(Self.number(created))?.state == .success })
            // The same notification by hand, twice: acknowledged, no second effect.
            let genuine = try #require(rig.appStore.transaction(bought.transactionID))
            let notification = AppStoreNotification(
                notificationType: .oneTimeCharge, notificationUUID: UUID().uuidString.lowercased(), signedDate: Date(),
                bundleID: genuine.bundleID, appAppleID: rig.appStore.configuration.appAppleID, environment: .production)
            let payload = rig.appStore.pki.sign(payload: notification.payload(
                signedTransactionInfo: bought.signedTransactionInfo, signedRenewalInfo: nil))
            for expected in ["ok", "duplicate"] {
                let posted = try await rig.gateway.send(.post, "/appstore/notifications", token: nil,
                                                        body: #"{"signedPayload":"\#(payload)"}"#)
                #expect(posted.status == 200 && posted.json["status"] as? String == expected)
            }
            _ = await eventually(timeout: .seconds(30)) { rig.appStore.pendingNotifications == 0 }
            #expect(try await rig.store.orderOutboxEvents(Self.number(created)).count == 1)
            let transitions = try await rig.store.events(Self.number(created)).filter {
                $0.kind == OrderEvent.stateChangedKind && $0.detail.contains("-> SUCCESS")
            }
            #expect(transitions.count == 1)
            #expect(try await rig.store.appStoreNotification(notification.notificationUUID) != nil)
        }
    }
}
