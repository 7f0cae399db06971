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

/// No paid purchase is ever lost, and Apple's own recovery and refund-defence APIs, end to end over
/// real sockets (the gateway on 127.0.0.1, the App Store simulator's Server API on a port of its
/// own, its notifications POSTed to the gateway): a product missing from the catalog, the
/// notification history backfill, StoreKit 1 receipts decided by the Server API, consumption
/// requests, Look Up Order ID, and refunds Apple reversed.
@Suite(.serialized)
struct IAPRecoveryTests {
    typealias E2E = IAPEndToEndTests

    static func withRig(_ mode: GatewayRig.Mode = .sockets, store: StoreKind = .sqlite,
                        recovery: AppStoreRecoveryPolicy = AppStoreRecoveryPolicy(), environment: [String: String] = [:],
                        _ body: (IAPRig) async throws -> Void) async throws {
        let rig = try await IAPRig.start(mode, store: store, recovery: recovery, environment: environment)
        do {
            try await body(rig)
            await rig.stop()
        } catch {
            await rig.stop()
            throw error
        }
    }

    // MARK: - A product missing from the catalog

    @Test(arguments: StoreKind.all)
    func aPurchaseOfAProductMissingFromTheCatalogIsCreditedAtApplesPriceFlaggedAndListedForAttention(store: StoreKind) async throws {
        try await Self.withRig(store: store) { rig in
            E2E.dropNotifications(rig)
            let bought = try rig.buy("apple-a", token: nil, product: "com.example.courses.added-in-connect", price: 13990,
                                     currency: "USD")
            let answer = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
            #expect(answer.status == 200)
            #expect(answer.json["finish_transaction"] as? Bool == true)
            #expect(answer.json["matched_by"] as? String == "new_order")
            let order = E2E.order(answer)
            #expect(order["amount"] as? Int == 1399)
            #expect(order["currency"] as? String == "USD")
            #expect(order["state"] as? String == "SUCCESS")
            #expect(order["apple_product_id"] as? String == "com.example.courses.added-in-connect")
            let number = E2E.number(order)
            let stored = try #require(try await rig.order(number))
            #expect(stored.flags == [.unknownProduct, .matchedWithoutOrder])
            #expect(stored.productID == nil)
            // The business hears of it, flagged, like any paid order.
            let paid = try #require(try await rig.store.orderOutboxEvents(number).first)
            #expect(paid.type == "order.paid")
            #expect(paid.payload.contains(#""unknown_product""#) && paid.payload.contains(#""currency":"USD""#))
            // A CNY price is in fen: 13.99 yuan.
            let yuan = try rig.buy("apple-b", token: nil, product: "com.example.courses.other-new", price: 13990, currency: "CNY")
            let credited = try await rig.report("user-b", ["signed_transaction": yuan.signedTransactionInfo])
            #expect(E2E.order(credited)["amount"] as? Int == 1399 && E2E.order(credited)["currency"] as? String == "CNY")
            // Support's attention list: flagged orders, newest first; one flag at a time; a flag not needing a person refused.
            let list = try await rig.gateway.send(.get, "/v1/support/attention?limit=1", token: GatewayRig.support)
            #expect(list.status == 200)
            let first = try #require((list.json["orders"] as? [[String: Any]])?.first)
            #expect(first["out_trade_no"] as? String == E2E.number(E2E.order(credited)))
            #expect((first["flags"] as? [String]) == ["matched_without_order", "unknown_product"])
            let cursor = try #require(list.json["next_cursor"] as? String)
            let next = try await rig.gateway.send(.get, "/v1/support/attention?limit=1&cursor=\(cursor)", token: GatewayRig.support)
            #expect(((next.json["orders"] as? [[String: Any]])?.first?["out_trade_no"] as? String) == number)
            let flagged = try await rig.gateway.send(.get, "/v1/support/attention?flag=unknown_product", token: GatewayRig.support)
            #expect((flagged.json["orders"] as? [[String: Any]])?.count == 2)
            let bad = try await rig.gateway.send(.get, "/v1/support/attention?flag=something_else", token: GatewayRig.support)
            #expect(bad.status == 400 && bad.error?["field"] as? String == "flag")
            #expect(try await rig.gateway.send(.get, "/v1/support/attention").status == 403)
            // A price no App Store sells at (up to the largest a transaction can carry) makes no
            // order: the purchase is kept for a person, and the gateway answers on.
            for (index, price) in [Int64.max, AppStorePrice.maximumMilli + 1].enumerated() {
                let absurd = try rig.buy("apple-c", token: nil, product: "com.example.courses.absurd-\(index)", price: price,
                                         currency: "USD")
                let refused = try await rig.report("user-c", ["signed_transaction": absurd.signedTransactionInfo])
                #expect(refused.status == 422 && refused.error?["code"] as? String == "transaction_not_creditable", "\(refused.json)")
                #expect((refused.error?["message"] as? String)?.contains("beyond any App Store price") == true, "\(refused.json)")
            }
            #expect(try await rig.gateway.send(.get, "/healthz").status == 200)
        }
    }

    @Test(arguments: StoreKind.all)
    func aPurchaseOfAProductMissingFromTheCatalogBecomesItsSaleOnceACatalogGivesItsAppStoreID(store: StoreKind) async throws {
        try await Self.withRig(store: store) { rig in
            E2E.dropNotifications(rig)
            let bought = try rig.buy("apple-a", token: nil, product: "com.example.courses.added-in-connect", price: 13990,
                                     currency: "CNY")
            let number = E2E.number(E2E.order(try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])))
            let before = rig.gateway.services.context.catalog.catalog
            #expect(try await Entitlements.read(userID: "user-a", from: rig.store, catalog: before).grants.isEmpty)
            // The catalog mistake mended: the purchase becomes the new product's sale, announced.
            let mended = Catalog(products: before.products + [CatalogProduct(
                id: "added-course", amount: 1399, description: "新课", appleProductID: "com.example.courses.added-in-connect")])
            #expect(try await mended.bind(in: rig.store, at: rig.gateway.clock.now()) == nil)
            let stored = try #require(try await rig.order(number))
            #expect(stored.productID == "added-course")
            #expect(try await rig.store.events(number).contains { $0.kind == "appstore_product" })
            #expect(try await rig.store.outboxEvents(number).map(\.type).contains(EntitlementEvents.type))
            #expect(try await Entitlements.read(userID: "user-a", from: rig.store, catalog: mended).grants.map(\.entitlement)
                    == ["added-course"])
            // And it stays that product's: its terms are fixed now.
            let changed = Catalog(products: before.products + [CatalogProduct(
                id: "added-course", amount: 1399, description: "新课", appleProductID: "com.example.courses.added-in-connect",
                kind: .membership(try #require(MembershipPeriod("P1M"))))])
            #expect(try await changed.bind(in: rig.store, at: rig.gateway.clock.now()) != nil)
        }
    }

    // MARK: - Get Notification History

    @Test(arguments: StoreKind.all)
    func aFirstPurchaseWhoseReportAndNotificationWereBothLostIsCreditedByTheBackfill(store: StoreKind) async throws {
        try await Self.withRig(store: store) { rig in
            E2E.dropNotifications(rig)
            // The user's first purchase: no earlier transaction for Get Transaction History to start from.
            let created = try await rig.createOrder("user-new")
            let bought = try rig.buy("apple-new", token: E2E.token(created))
            _ = await eventually(timeout: .seconds(60)) { !rig.appStore.notificationHistory.isEmpty }
            // The reconciler's history look-up cannot find it; the notification history can.
            let report = await rig.sweep()
            #expect(report.backfillRan)
            #expect(report.notificationsRecovered == 1)
            let order = try #require(try await rig.order(E2E.number(created)))
            #expect(order.state == .success)
            #expect(order.appleTransactionID == bought.transactionID)
            let ledger = try #require(try await rig.store.appleTransaction(bought.transactionID))
            #expect(ledger.source == "notification history ONE_TIME_CHARGE")
            #expect(ledger.matchedBy == .appAccountToken)
            let events = try await rig.store.events(E2E.number(created)).map(\.detail)
            #expect(events.contains { $0.contains("read from Get Notification History") })
            #expect(rig.metric(#"wxpay_appstore_backfill_recovered_total"#) == 1)
            #expect(rig.metric(#"wxpay_appstore_backfill_runs_total{outcome="ok"}"#) == 1)
            #expect(rig.metric("wxpay_appstore_backfill_last_success_timestamp_seconds") > 0)
            // The progress is durable: the next run starts where this one ended (with the overlap).
            let progress = try #require(try await rig.store.backfillProgress(environment: "Production"))
            #expect(progress.through != nil && progress.lastSuccessAt != nil)
            #expect(rig.appStore.counters["production notificationHistory"] ?? 0 >= 1)
        }
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func aNotificationDeliveredAndBackfilledHasOneEffect(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: E2E.token(created))
            #expect(try await eventually { try await rig.order(E2E.number(created))?.state == .success })
            _ = await eventually(timeout: .seconds(60)) { rig.appStore.pendingNotifications == 0 }
            let first = await rig.sweep()
            #expect(first.backfillRan && first.notificationsRecovered == 0)
            // Not due again within the interval; by hand it reads everything again, and changes nothing.
            #expect(!(await rig.sweep()).backfillRan)
            let again = await rig.iap.backfill(since: Date().addingTimeInterval(-3600), claimant: "test", force: true)
            #expect(again.succeeded && again.recovered == 0 && again.alreadyHandled >= 1)
            #expect(try await rig.store.orderOutboxEvents(E2E.number(created)).count == 1)
            let transitions = try await rig.store.events(E2E.number(created)).filter { $0.kind == OrderEvent.stateChangedKind }
            #expect(transitions.count == 1)
            #expect(try await rig.store.orders(appleTransactionID: bought.transactionID).count == 1)
        }
    }

    @Test func aBackfillThatFailsPartWayGoesOnFromItsLastPageAndALeaseHeldElsewhereIsNotRead() async throws {
        try await Self.withRig { rig in
            E2E.dropNotifications(rig)
            var orders: [String] = []
            for index in 0..<25 {
                let created = try await rig.createOrder("user-\(index)")
                orders.append(E2E.number(created))
                _ = try rig.buy("apple-\(index)", token: E2E.token(created))
            }
            // Another instance holds the lease: this one reads nothing.
            let now = rig.gateway.services.context.now()
            _ = try await rig.store.claimBackfill(environment: "Production", claimant: "elsewhere", now: now,
                                                  leaseUntil: now.addingTimeInterval(600), lastRunBefore: nil)
            #expect(!(await rig.iap.backfill(since: nil, claimant: "here", force: true)).environments.contains("Production"))
            _ = try await rig.store.finishBackfill(environment: "Production", claimant: "elsewhere", through: nil, error: nil, at: now)
            // The second page fails: the first is answered, then Apple keeps failing (5xx on every retry).
            rig.appStore.apply(AppStoreFaultPlan(endpoints: ["notificationHistory": AppStoreEndpointFaults(http5xxRate: 1, after: 1)],
                                                 notify: NotifyFaults(dropRate: 1)))
            let onePage = await rig.iap.backfill(since: nil, claimant: "here", force: true)
            #expect(onePage.recovered == 20 && !onePage.errors.isEmpty)
            let saved = try #require(try await rig.store.backfillProgress(environment: "Production"))
            #expect(saved.paginationToken != nil && saved.window != nil && saved.through == nil)
            rig.appStore.apply(AppStoreFaultPlan(notify: NotifyFaults(dropRate: 1)))
            let rest = await rig.iap.backfill(since: nil, claimant: "later", force: true)
            // It goes on from the saved page: only the last 5 are read (and the sandbox's one empty page).
            #expect(rest.succeeded && rest.recovered == 5 && rest.seen == 5, "\(rest)")
            for number in orders { #expect(try await rig.order(number)?.state == .success) }
            #expect(rig.metric(#"wxpay_appstore_backfill_runs_total{outcome="failed"}"#) >= 1)
        }
    }

    // MARK: - StoreKit 1 receipts, decided by the Server API

    @Test(arguments: GatewayRig.Mode.allCases)
    func aStoreKit1ReceiptReportedWhileAnotherUserIsLoggedInCreditsTheOrderOfItsToken(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            E2E.dropNotifications(rig)
            // User A orders; StoreKit 1 keeps the order's UUID from applicationUsername as the appAccountToken.
            let ordered = try await rig.createOrder("user-a")
            let other = try await rig.createOrder("user-b")
            let bought = try rig.buy("apple-shared-phone", token: E2E.token(ordered))
            #expect(try AppReceipt(base64: bought.receipt).contains(transactionID: bought.transactionID))
            // User B is logged in when the app reports the receipt: A's order is credited, and B
            // learns only that the purchase is credited elsewhere.
            let answer = try await rig.report("user-b", ["receipt": bought.receipt, "transaction_id": bought.transactionID])
            #expect(answer.status == 200)
            #expect(Set(answer.json.keys) == ["credited_elsewhere", "finish_transaction"])
            #expect(answer.json["finish_transaction"] as? Bool == true)
            let credited = try #require(try await rig.order(E2E.number(ordered)))
            #expect(credited.state == .success && credited.appleTransactionID == bought.transactionID)
            #expect(try await rig.order(E2E.number(other))?.state == .notPay)
            let events = try await rig.store.events(E2E.number(ordered)).map(\.detail)
            #expect(events.contains { $0.contains("app receipt (read locally") && $0.contains("Get Transaction Info") })
            #expect(events.contains { $0.contains("(the account was switched): credited to user-a") })
            // verifyReceipt was never asked: the Server API decided.
            #expect(rig.appStore.counters["production verifyReceipt"] == nil)
            // A receipt that is not an app receipt: 400, keep the transaction.
            let garbage = try await rig.report("user-a", ["receipt": "bm90IGEgcmVjZWlwdA==", "transaction_id": bought.transactionID])
            #expect(garbage.status == 400 && garbage.json["finish_transaction"] as? Bool == false)
        }
    }

    // MARK: - Issue 23, item 2: a bare transaction id proves nothing about who holds the purchase

    @Test(arguments: GatewayRig.Mode.allCases)
    func aBareTransactionIdOfAnotherUsersOrderAnswersOnlyThatItIsCreditedElsewhere(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode, environment: ["GATEWAY_APP_REPORT_RATE": "8"]) { rig in
            E2E.dropNotifications(rig)
            let created = try await rig.createOrder("owner")
            let bought = try rig.buy("apple-owner", token: E2E.token(created))
            #expect(try await rig.report("owner", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
            let before = try await rig.store.events(E2E.number(created)).count
            // Someone else guesses the (sequential) id: finish it, credited elsewhere, nothing of the owner's.
            let guessed = try await rig.report("prober", ["transaction_id": bought.transactionID])
            #expect(guessed.status == 200)
            #expect(Set(guessed.json.keys) == ["credited_elsewhere", "finish_transaction"])
            let text = String(decoding: guessed.body, as: UTF8.self)
            for secret in ["owner", E2E.number(created), E2E.token(created), "990"] { #expect(!text.contains(secret), "\(secret)") }
            // The owner reporting the id is answered in full.
            let own = try await rig.report("owner", ["transaction_id": bought.transactionID])
            #expect(own.status == 200 && E2E.number(E2E.order(own)) == E2E.number(created))
            // A signed transaction came from StoreKit on the paying device: its account-switch answer stays.
            let switched = try await rig.report("prober", ["signed_transaction": bought.signedTransactionInfo])
            #expect(switched.status == 200 && switched.json["credited_user_id"] as? String == "owner")
            // However often it is reported, the order's timeline grows by at most one line a minute.
            for _ in 0..<4 { _ = try await rig.report("prober", ["transaction_id": bought.transactionID]) }
            let lines = try await rig.store.events(E2E.number(created)).dropFirst(before).filter { $0.kind == "appstore_report" }
            #expect(lines.count == 1)
            // And a user's reports are limited, as creates are: 429 with Retry-After, keep the transaction.
            var limited: GatewayRig.Response?
            for _ in 0..<10 {
                let answer = try await rig.report("prober", ["transaction_id": bought.transactionID])
                if answer.status == 429 { limited = answer; break }
            }
            let refused = try #require(limited)
            #expect(refused.headers["Retry-After"].flatMap { Int($0) } ?? 0 >= 1)
            #expect(refused.json["finish_transaction"] as? Bool == false)
            #expect(refused.error?["code"] as? String == "rate_limited")
            // Another user is not held up by it.
            #expect(try await rig.report("owner", ["transaction_id": bought.transactionID]).status == 200)
            // A minute later the timeline takes one more line.
            rig.gateway.clock.advance(by: 61)
            _ = try await rig.report("owner", ["transaction_id": bought.transactionID])
            let later = try await rig.store.events(E2E.number(created)).dropFirst(before).filter { $0.kind == "appstore_report" }
            #expect(later.count == 2)
        }
    }

    // MARK: - Consumption requests

    static let consented = #"{"customer_consented":true,"delivery_status":"DELIVERED","sample_content_provided":false,"consumption_percentage":25000,"refund_preference":"GRANT_PRORATED"}"#

    /// A credited consumable and Apple's consumption request about it, recorded by the gateway.
    static func requested(_ rig: IAPRig, user: String = "user-a") async throws -> (order: String, transaction: String) {
        let created = try await rig.createOrder(user)
        let bought = try rig.buy("apple-\(user)", token: E2E.token(created), type: "Consumable")
        #expect(try await rig.report(user, ["signed_transaction": bought.signedTransactionInfo]).status == 200)
        try rig.appStore.requestConsumption(transactionID: bought.transactionID, reason: "UNSATISFIED_WITH_PURCHASE")
        let recorded = try await eventually {
            try await !rig.store.consumptionRequests(transactionID: bought.transactionID).isEmpty
        }
        #expect(recorded)
        return (E2E.number(created), bought.transactionID)
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func aConsumptionRequestAnsweredByTheBusinessIsSentToAppleOnce(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            let (order, transaction) = try await Self.requested(rig)
            // The business hears of it: the webhook event names the order, the transaction and the deadline.
            let event = try #require(try await rig.store.orderOutboxEvents(order).first { $0.type == "appstore.consumption_requested" })
            let data = try #require(GatewayRig.object(Array(event.payload.utf8))["data"] as? [String: Any])
            #expect(data["transaction_id"] as? String == transaction)
            #expect(data["reason"] as? String == "UNSATISFIED_WITH_PURCHASE")
            #expect((data["order"] as? [String: Any])?["out_trade_no"] as? String == order)
            #expect(data["deadline"] is String)
            // Its answer goes to Apple at once.
            let path = "/v1/iap/transactions/\(transaction)/consumption"
            let answer = try await rig.gateway.send(.put, path, body: Self.consented)
            #expect(answer.status == 200)
            #expect(answer.json["state"] as? String == "sent" && answer.json["answered_by"] as? String == "business")
            let received = rig.appStore.consumptionReceived
            #expect(received.map(\.transactionId) == [transaction])
            let body = GatewayRig.object(Array(received[0].body.utf8))
            #expect(body["customerConsented"] as? Bool == true && body["consumptionPercentage"] as? Int == 25000)
            #expect(body["refundPreference"] as? String == "GRANT_PRORATED" && body["deliveryStatus"] as? String == "DELIVERED")
            // The same answer again is answered as it stands; another one is refused; nothing more is sent.
            #expect(try await rig.gateway.send(.put, path, body: Self.consented).json["state"] as? String == "sent")
            let other = try await rig.gateway.send(.put, path, body: Self.consented.replacingOccurrences(of: "25000", with: "0")
                .replacingOccurrences(of: #","refund_preference":"GRANT_PRORATED""#, with: ""))
            #expect(other.status == 409 && other.error?["code"] as? String == "consumption_already_answered")
            #expect(rig.appStore.consumptionReceived.count == 1)
            // What Apple would refuse is refused here, naming the field; an unknown transaction is 404; app tokens may not answer.
            let bad = try await rig.gateway.send(.put, path, body: #"{"customer_consented":true,"delivery_status":"LOST","sample_content_provided":false}"#)
            #expect(bad.status == 400 && bad.error?["field"] as? String == "delivery_status")
            // Apple takes GRANT_PRORATED only for a part: above 0 and below 100000 (all of it is GRANT_FULL).
            let all = try await rig.gateway.send(.put, path, body: Self.consented.replacingOccurrences(of: "25000", with: "100000"))
            #expect(all.status == 400 && all.error?["field"] as? String == "refund_preference", "\(all.json)")
            #expect(try await rig.gateway.send(.put, "/v1/iap/transactions/2000000999999999/consumption", body: Self.consented).status == 404)
            #expect(try await rig.gateway.send(.put, path, token: rig.token("user-a"), body: Self.consented).status == 403)
            let timeline = try await rig.store.events(order).filter { $0.kind == "appstore_consumption" }.map(\.detail)
            #expect(timeline.count == 3)
            #expect(timeline[0].contains("asks for consumption information") && timeline[2].contains("accepted"))
        }
    }

    @Test func theDefaultsAnswerAnUnansweredRequestAfterTheConfiguredDeadlineButNeverWithoutConsentOrLate() async throws {
        let defaults = try ConsumptionAnswer.parse(Array(Self.consented.utf8))
        try await Self.withRig(recovery: AppStoreRecoveryPolicy(consumptionDefaults: defaults, consumptionDeadline: 60)) { rig in
            let (order, transaction) = try await Self.requested(rig)
            // Before the deadline nothing is sent.
            _ = await rig.sweep(after: 3600)
            #expect(rig.appStore.consumptionReceived.isEmpty)
            rig.gateway.clock.advance(by: 61)
            let report = await rig.sweep(after: 3600)
            #expect(report.consumptionSent == 1)
            #expect(rig.appStore.consumptionReceived.map(\.transactionId) == [transaction])
            let request = try #require(try await rig.store.consumptionRequests(transactionID: transaction).first)
            #expect(request.state == .sent && request.answeredBy == .defaults)
            // The business answering now is too late: the defaults went.
            let late = try await rig.gateway.send(.put, "/v1/iap/transactions/\(transaction)/consumption", body: Self.consented)
            #expect(late.status == 409 && late.error?["code"] as? String == "consumption_already_answered")
            #expect(try await rig.store.events(order).contains { $0.detail.contains("the configured defaults answer") })
        }
        // Defaults without the customer's consent send nothing.
        var withoutConsent = defaults
        withoutConsent.customerConsented = false
        try await Self.withRig(recovery: AppStoreRecoveryPolicy(consumptionDefaults: withoutConsent, consumptionDeadline: 60)) { rig in
            let (_, transaction) = try await Self.requested(rig)
            rig.gateway.clock.advance(by: 61)
            _ = await rig.sweep(after: 3600)
            #expect(try await rig.store.consumptionRequests(transactionID: transaction).first?.state == .notSent)
            #expect(rig.appStore.consumptionReceived.isEmpty)
        }
        // The business without consent: recorded, nothing sent, and the defaults never go after it.
        try await Self.withRig(recovery: AppStoreRecoveryPolicy(consumptionDefaults: defaults, consumptionDeadline: 60)) { rig in
            let (_, transaction) = try await Self.requested(rig)
            let answer = try await rig.gateway.send(.put, "/v1/iap/transactions/\(transaction)/consumption",
                                                    body: Self.consented.replacingOccurrences(of: #""customer_consented":true"#,
                                                                                              with: #""customer_consented":false"#))
            #expect(answer.status == 200 && answer.json["state"] as? String == "not_sent")
            rig.gateway.clock.advance(by: 61)
            _ = await rig.sweep(after: 3600)
            #expect(rig.appStore.consumptionReceived.isEmpty)
        }
        // Nobody answers and Apple's 12 hours pass: expired, and a late answer is refused.
        try await Self.withRig { rig in
            let (order, transaction) = try await Self.requested(rig)
            rig.gateway.clock.advance(by: 12 * 3600 + 1)
            _ = await rig.sweep(after: 24 * 3600)
            #expect(try await rig.store.consumptionRequests(transactionID: transaction).first?.state == .expired)
            let late = try await rig.gateway.send(.put, "/v1/iap/transactions/\(transaction)/consumption", body: Self.consented)
            #expect(late.status == 409 && late.error?["code"] as? String == "consumption_request_expired")
            #expect(rig.appStore.consumptionReceived.isEmpty)
            #expect(try await rig.store.events(order).contains { $0.detail.contains("12 hours") })
        }
    }

    @Test func anAnswerAppleRefusesCanBeCorrectedAndTheCorrectionIsSent() async throws {
        try await Self.withRig { rig in
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-user-a", token: E2E.token(created), type: "Auto-Renewable Subscription")
            #expect(try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
            try rig.appStore.requestConsumption(transactionID: bought.transactionID, reason: "UNSATISFIED_WITH_PURCHASE")
            #expect(try await eventually { try await !rig.store.consumptionRequests(transactionID: bought.transactionID).isEmpty })
            // Apple takes no consumption percentage for an auto-renewable subscription (4000209).
            let path = "/v1/iap/transactions/\(bought.transactionID)/consumption"
            let refused = try await rig.gateway.send(.put, path, body: Self.consented)
            #expect(refused.status == 200 && refused.json["state"] as? String == "refused", "\(refused.json)")
            // The same answer again stands as it is, and is not sent again.
            #expect(try await rig.gateway.send(.put, path, body: Self.consented).json["state"] as? String == "refused")
            #expect(rig.appStore.consumptionReceived.isEmpty)
            // The corrected answer is recorded in its place and sent.
            let corrected = #"{"customer_consented":true,"delivery_status":"DELIVERED","sample_content_provided":false,"refund_preference":"DECLINE"}"#
            let sent = try await rig.gateway.send(.put, path, body: corrected)
            #expect(sent.status == 200 && sent.json["state"] as? String == "sent", "\(sent.status) \(sent.body.count) \(String(decoding: sent.body, as: UTF8.self))")
            #expect(sent.json["last_error"] == nil || sent.json["last_error"] is NSNull)
            #expect(rig.appStore.consumptionReceived.map(\.transactionId) == [bought.transactionID])
            // Once Apple took it, another answer is refused as before.
            let other = try await rig.gateway.send(.put, path, body: Self.consented)
            #expect(other.status == 409 && other.error?["code"] as? String == "consumption_already_answered")
        }
    }

    @Test func anAnswerAppleCannotTakeNowIsSentAgainUntilItIsAccepted() async throws {
        try await Self.withRig { rig in
            let (_, transaction) = try await Self.requested(rig)
            rig.appStore.apply(AppStoreFaultPlan(endpoints: ["consumption": AppStoreEndpointFaults(http5xxRate: 1, limit: 3)]))
            let answer = try await rig.gateway.send(.put, "/v1/iap/transactions/\(transaction)/consumption", body: Self.consented)
            #expect(answer.status == 200 && answer.json["state"] as? String == "answered")
            #expect(answer.json["last_error"] is String)
            rig.gateway.clock.advance(by: 3600)
            let report = await rig.sweep(after: 24 * 3600)
            #expect(report.consumptionSent == 1)
            #expect(rig.appStore.consumptionReceived.count == 1)
        }
    }

    // MARK: - Look Up Order ID

    @Test(arguments: GatewayRig.Mode.allCases)
    func supportFindsThePurchasesOfAnAppleOrderIdAndCreditsOneThatWasNeverSeen(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            E2E.dropNotifications(rig)
            let reported = try await rig.createOrder("user-a")
            let first = try rig.buy("apple-a", token: E2E.token(reported))
            #expect(try await rig.report("user-a", ["signed_transaction": first.signedTransactionInfo]).status == 200)
            let lookup = try await rig.gateway.send(.get, "/v1/support/orders?apple_order_id=\(first.orderID)", token: GatewayRig.support)
            #expect(lookup.status == 200)
            #expect((lookup.json["apple_order"] as? [String: Any])?["status"] as? String == "valid")
            #expect((lookup.json["orders"] as? [[String: Any]])?.map { $0["out_trade_no"] as? String } == [E2E.number(reported)])
            #expect((lookup.json["apple_transactions"] as? [[String: Any]])?.first?["transaction_id"] as? String == first.transactionID)
            // A purchase whose report and notification were lost: the invoice the customer quotes finds it, and it is credited.
            let lost = try await rig.createOrder("user-b")
            let second = try rig.buy("apple-b", token: E2E.token(lost))
            let found = try await rig.gateway.send(.get, "/v1/support/orders?apple_order_id=\(second.orderID)", token: GatewayRig.support)
            #expect((found.json["orders"] as? [[String: Any]])?.first?["state"] as? String == "SUCCESS")
            #expect(try await rig.order(E2E.number(lost))?.appleTransactionID == second.transactionID)
            // An id Apple does not know, and one that is not an id.
            let unknown = try await rig.gateway.send(.get, "/v1/support/orders?apple_order_id=ZZZZZZZZZZ", token: GatewayRig.support)
            #expect((unknown.json["apple_order"] as? [String: Any])?["status"] as? String == "invalid")
            #expect((unknown.json["orders"] as? [Any])?.isEmpty == true)
            #expect(try await rig.gateway.send(.get, "/v1/support/orders?apple_order_id=mv%20x", token: GatewayRig.support).status == 400)
            // The look-up is on record with what it looked for.
            let entries = try await rig.gateway.services.audit.entries(AuditQuery(action: "api_lookup"), limit: 10, before: nil)
                .entries
            #expect(entries.contains { $0.entry.target == "apple_order_id=\(first.orderID)" })
        }
    }

    // MARK: - REFUND_REVERSED

    @Test(arguments: GatewayRig.Mode.allCases)
    func aRefundAppleReversedReturnsTheOrderToSuccessAndALateCopyOfThatRefundIsNotApplied(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: E2E.token(created))
            #expect(try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
            let refunded = try rig.appStore.refund(transactionID: bought.transactionID)
            #expect(try await eventually { try await rig.order(E2E.number(created))?.state == .refund })
            try rig.appStore.reverseRefund(transactionID: bought.transactionID)
            #expect(try await eventually { try await rig.order(E2E.number(created))?.state == .success })
            let events = try await rig.store.orderOutboxEvents(E2E.number(created))
            #expect(events.map(\.type) == ["order.paid", "order.refunded", "order.refund_reversed"])
            let data = try #require(GatewayRig.object(Array(events[2].payload.utf8))["data"] as? [String: Any])
            #expect(data["state"] as? String == "SUCCESS" && data["refunded_amount"] as? Int == 0)
            let shown = try await rig.gateway.send(.get, "/v1/orders/\(E2E.number(created))")
            #expect(shown.json["state"] as? String == "SUCCESS" && shown.json["refunded_amount"] as? Int == 0)
            // The same refund, arriving again (a copy Apple's history still holds): not applied.
            let notification = AppStoreNotification(
                notificationType: .refund, notificationUUID: UUID().uuidString.lowercased(), signedDate: Date(),
                bundleID: refunded.bundleID, appAppleID: rig.appStore.configuration.appAppleID, environment: .production)
            let payload = rig.appStore.pki.sign(payload: notification.payload(
                signedTransactionInfo: rig.appStore.pki.sign(payload: refunded.payload), signedRenewalInfo: nil))
            let posted = try await rig.gateway.send(.post, "/appstore/notifications", token: nil, body: #"{"signedPayload":"\#(payload)"}"#)
            #expect(posted.status == 200)
            #expect(try await rig.order(E2E.number(created))?.state == .success)
            #expect(try await rig.store.orderOutboxEvents(E2E.number(created)).count == 3)
            #expect(try await rig.store.events(E2E.number(created)).contains { $0.kind == "appstore_refund" && $0.detail.contains("not applied") })
        }
    }
}
