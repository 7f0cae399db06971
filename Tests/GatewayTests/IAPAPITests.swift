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
import WeChatPaySimulator

/// The iOS routes' contract: 404 while off, who may call them, the create's rules and idempotency,
/// every report refusal with its `finish_transaction`, support's look-up and recheck, and what the
/// rest of the gateway does with an iOS order (no WeChat call, no WeChat refund, no bill line).
@Suite(.serialized)
struct IAPAPITests {
    typealias E2E = IAPEndToEndTests

    @Test func theIOSRoutesAre404WhileAppStorePurchasesAreOff() async throws {
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        for path in ["/v1/iap/orders", "/v1/iap/transactions", "/appstore/notifications"] {
            let response = try await rig.send(.post, path, body: #"{"product_id":"swift-101","user_id":"u"}"#)
            #expect(response.status == 404, "\(path)")
            #expect(response.error?["code"] as? String == "not_found")
        }
        #expect(await TableRowCounts.of(rig.database)["orders"] == 0)
    }

    @Test func anIOSOrderIsCreatedForACatalogProductIdempotentlyWithATokenOfItsOwn() async throws {
        try await E2E.withRig(.inProcess) { rig in
            let body = #"{"product_id":"swift-101","out_trade_no":"ios-0001"}"#
            let first = try await rig.gateway.send(.post, "/v1/iap/orders", token: rig.token("user-a"), body: body)
            #expect(first.status == 201)
            #expect(first.json["amount"] as? Int == 990 && first.json["state"] as? String == "NOTPAY")
            let token = try #require(first.json["app_account_token"] as? String)
            #expect(UUID(uuidString: token) != nil && token == token.lowercased())
            #expect(first.json["apple_transaction_id"] is NSNull && first.json["environment"] is NSNull)
            let replay = try await rig.gateway.send(.post, "/v1/iap/orders", token: rig.token("user-a"), body: body)
            #expect(replay.status == 200 && replay.json["app_account_token"] as? String == token)
            // The same number by another user, or as a WeChat order: a conflict.
            let other = try await rig.gateway.send(.post, "/v1/iap/orders", token: rig.token("user-b"), body: body)
            #expect(other.status == 409)
            let wechat = try await rig.gateway.send(.post, "/v1/orders", body: #"{"amount":990,"description":"x","client_ip":"203.0.113.7","out_trade_no":"ios-0001"}"#)
            #expect(wechat.status == 409)
            // Every order has its own token.
            let second = try await rig.createOrder("user-a")
            #expect(E2E.token(second) != token)
            // A client token names the user; an app token may not.
            let proxied = try await rig.gateway.send(.post, "/v1/iap/orders",
                                                     body: #"{"product_id":"swift-201","user_id":"user-c","expires_in":600}"#)
            #expect(proxied.status == 201)
            #expect(try await rig.order(try #require(proxied.json["out_trade_no"] as? String))?.userID == "user-c")
            let forbidden = try await rig.gateway.send(.post, "/v1/iap/orders", token: rig.token("user-a"),
                                                       body: #"{"product_id":"swift-101","user_id":"user-c"}"#)
            #expect(forbidden.status == 400 && forbidden.error?["code"] as? String == "field_not_allowed")
            let noUser = try await rig.gateway.send(.post, "/v1/iap/orders", body: #"{"product_id":"swift-101"}"#)
            #expect(noUser.status == 400 && noUser.error?["field"] as? String == "user_id")
            for product in ["retired-100", "nope"] {
                let refused = try await rig.gateway.send(.post, "/v1/iap/orders", token: rig.token("user-a"),
                                                         body: #"{"product_id":"\#(product)"}"#)
                #expect(refused.status == 400 && refused.error?["code"] as? String == "unknown_product")
            }
            #expect(try await rig.gateway.send(.post, "/v1/iap/orders", token: GatewayRig.support, body: body).status == 403)
            #expect(try await rig.gateway.send(.post, "/v1/iap/orders", token: nil, body: body).status == 401)
            // A refused PUT keeps its body's reason on record as a refused POST does.
            #expect(try await rig.gateway.send(.put, "/v1/iap/transactions/2000000000000001/consumption", token: GatewayRig.support,
                                               body: #"{"reason":"asked by support"}"#).status == 403)
            let refused = try await rig.gateway.store.auditEntries(
                AuditQuery(action: "api PUT /v1/iap/transactions/{transaction_id}/consumption"), limit: 10, before: nil).entries
            #expect(refused.map(\.entry.detail) == ["reason: asked by support"])
            #expect(refused.map(\.entry.outcome) == ["forbidden"])
        }
    }

    @Test func everyReportRefusalSaysWhetherToFinishAndChangesNothing() async throws {
        try await E2E.withRig(.inProcess) { rig in
            E2E.dropNotifications(rig)
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: E2E.token(created))
            let before = await TableRowCounts.of(rig.gateway.database)
            let cases: [([String: String], Int, String, Bool)] = [
                ([:], 400, "invalid_request", false),
                (["receipt": bought.receipt], 400, "invalid_request", false),
                (["signed_transaction": bought.signedTransactionInfo, "transaction_id": bought.transactionID], 400, "invalid_request", false),
                (["transaction_id": "12ab"], 400, "invalid_request", false),
                (["signed_transaction": "a.b.c"], 422, "invalid_signed_data", false),
                (["transaction_id": "2000000999999999"], 422, "transaction_not_found", false),
                (["signed_transaction": bought.signedTransactionInfo, "color": "red"], 400, "invalid_request", false),
                (["signed_transaction": bought.signedTransactionInfo, "user_id": "user-b"], 400, "field_not_allowed", false),
            ]
            for (fields, status, code, finish) in cases {
                let answer = try await rig.report("user-a", fields)
                #expect(answer.status == status, "\(fields.keys.sorted())")
                #expect(answer.error?["code"] as? String == code, "\(fields.keys.sorted())")
                #expect(answer.json["finish_transaction"] as? Bool == finish, "\(fields.keys.sorted())")
            }
            let noToken = try await rig.gateway.send(.post, "/v1/iap/transactions", token: nil, body: "{}")
            #expect(noToken.status == 401 && noToken.json["finish_transaction"] as? Bool == false)
            #expect(await TableRowCounts.of(rig.gateway.database) == before)
            // Another app's transaction, a family member's, a product not in the catalog: never creditable.
            let foreign = AppStoreTransaction(
                transactionID: "2000000100009999", originalTransactionID: "2000000100009999", bundleID: "com.other.app",
                productID: IAPRig.appleProduct, type: .nonConsumable, environment: .production, purchaseDate: Date(), signedDate: Date())
            var shared = try #require(rig.appStore.transaction(bought.transactionID))
            shared.transactionID = "2000000100009998"
            shared.inAppOwnershipType = .familyShared
            // A product the catalog does not have, for which Apple charged nothing: nothing was paid.
            // (One Apple charged for is credited to an order flagged unknown_product: IAPRecoveryTests.)
            var unknown = shared
            unknown.transactionID = "2000000100009997"
            unknown.inAppOwnershipType = .purchased
            unknown.productID = "com.example.courses.not-sold"
            unknown.price = 0
            for transaction in [foreign, shared, unknown] {
                let answer = try await rig.report("user-a", ["signed_transaction": rig.appStore.pki.sign(payload: transaction.payload)])
                #expect(answer.status == 422)
                #expect(answer.error?["code"] as? String == "transaction_not_creditable")
                #expect(answer.json["finish_transaction"] as? Bool == true)
            }
            #expect(try await rig.order(E2E.number(created))?.state == .notPay)
        }
    }

    /// A report sent by the backend names its user in `user_id`, which follows the one user id rule
    /// (App/UserID.swift) as every other user_id does: refused before anything is asked or written,
    /// and the app keeps the transaction.
    @Test func aBackendReportsUserIDFollowsTheUserIDRule() async throws {
        try await E2E.withRig(.inProcess) { rig in
            let before = await TableRowCounts.of(rig.gateway.database)
            for userID in [#"alice\u202Ebob"#, #"a\u2028b"#] {
                let answer = try await rig.gateway.send(
                    .post, "/v1/iap/transactions", token: GatewayRig.client,
                    body: #"{"transaction_id":"2000000100000001","user_id":"\#(userID)"}"#)
                #expect(answer.status == 400)
                #expect(answer.error?["field"] as? String == "user_id")
                #expect(answer.error?["message"] as? String
                    == "user_id must be 1 to 64 bytes of UTF-8 without whitespace, control or invisible characters")
                #expect(answer.json["finish_transaction"] as? Bool == false)
            }
            #expect(await TableRowCounts.of(rig.gateway.database) == before)
        }
    }

    /// A report's body is read as a create's is: what is wrong with it is said in the same words.
    @Test func aReportBodyWithANameGivenTwiceIsSaidSoAndTheAppKeepsTheTransaction() async throws {
        try await E2E.withRig(.inProcess) { rig in
            let before = await TableRowCounts.of(rig.gateway.database)
            let cases = [
                (#"{"transaction_id":"2000000100000001","transaction_id":"2000000100000002"}"#, "the body gives a member name twice"),
                ("[1]", "the body must be a JSON object"),
            ]
            for (body, message) in cases {
                let answer = try await rig.gateway.send(.post, "/v1/iap/transactions", token: rig.token("user-a"), body: body)
                #expect(answer.status == 400 && answer.error?["message"] as? String == message, "\(answer.json)")
                #expect(answer.json["finish_transaction"] as? Bool == false)
            }
            #expect(await TableRowCounts.of(rig.gateway.database) == before)
        }
    }

    @Test func transactionIdAloneNeedsTheServerAPIAndAnUnreachableAppStoreIsA503() async throws {
        try await E2E.withRig(.inProcess, serverAPI: false) { rig in
            let answer = try await rig.report("user-a", ["transaction_id": "2000000100000001"])
            #expect(answer.status == 400 && answer.error?["field"] as? String == "transaction_id")
            #expect(answer.json["finish_transaction"] as? Bool == false)
        }
        try await E2E.withRig(.inProcess) { rig in
            E2E.dropNotifications(rig)
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: E2E.token(created))
            rig.appStore.apply(AppStoreFaultPlan(endpoints: ["transactions": AppStoreEndpointFaults(http5xxRate: 1)],
                                                 notify: NotifyFaults(dropRate: 1)))
            let down = try await rig.report("user-a", ["transaction_id": bought.transactionID])
            #expect(down.status == 503 && down.json["finish_transaction"] as? Bool == false)
            #expect(rig.appStore.counters["fault http_5xx"] ?? 0 >= 3)
            rig.appStore.apply(AppStoreFaultPlan(endpoints: ["transactions": AppStoreEndpointFaults(rogueChainRate: 1)],
                                                 notify: NotifyFaults(dropRate: 1)))
            let rogue = try await rig.report("user-a", ["transaction_id": bought.transactionID])
            #expect(rogue.status == 503)
            #expect(try await rig.order(E2E.number(created))?.state == .notPay)
        }
    }

    @Test func anIOSOrderNeverTouchesWeChatAndIsRefundedOnlyByApple() async throws {
        try await E2E.withRig(.inProcess) { rig in
            E2E.dropNotifications(rig)
            let created = try await rig.createOrder("user-a")
            let number = E2E.number(created)
            // A wait answers with the stored state without any orderquery.
            let waited = try await rig.gateway.send(.get, "/v1/orders/\(number)?wait=0.5")
            #expect(waited.status == 200 && waited.json["state"] as? String == "NOTPAY")
            // A WeChat notify naming it is refused, signed or not.
            let notify = try await rig.gateway.send(.post, "/wechat/notify", token: nil, body: rig.gateway.forgedNotify(number, amount: 990))
            #expect(String(decoding: notify.body, as: UTF8.self).contains("FAIL"))
            #expect(rig.gateway.simulator.orderCount == 0 && rig.gateway.simulator.requests.isEmpty)
            let bought = try rig.buy("apple-a", token: E2E.token(created))
            #expect(try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
            // Refunds on (the rig's WeChat simulator takes them in process): still not for an iOS order.
            #expect(rig.gateway.services.refunds.isConfigured)
            let refund = try await rig.gateway.send(.post, "/v1/orders/\(number)/refunds", body: #"{"amount":990,"reason":"x"}"#)
            #expect(refund.status == 409 && refund.error?["code"] as? String == "order_not_refundable")
            let shown = try await rig.gateway.send(.get, "/v1/orders/\(number)", token: rig.token("user-a"))
            #expect(shown.json["channel"] as? String == "apple" && shown.json["state"] as? String == "SUCCESS")
            #expect(rig.gateway.simulator.requests.isEmpty)
        }
    }

    @Test func anIOSOrderClosedLocallyIsStillSettledByALateTransactionFlaggedPaidAfterClose() async throws {
        try await E2E.withRig(.inProcess) { rig in
            E2E.dropNotifications(rig)
            let created = try await rig.createOrder("user-a")
            let closed = try await rig.gateway.send(.post, "/v1/orders/\(E2E.number(created))/close", token: rig.token("user-a"))
            #expect(closed.status == 200 && closed.json["state"] as? String == "CLOSED")
            let bought = try rig.buy("apple-a", token: E2E.token(created))
            let answer = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
            #expect(answer.status == 200 && answer.json["matched_by"] as? String == "app_account_token")
            #expect(E2E.order(answer)["flags"] as? [String] == ["paid_after_close"])
            let paid = try #require(try await rig.store.orderOutboxEvents(E2E.number(created)).first)
            #expect(paid.payload.contains(#""paid_after_close":true"#))
        }
    }

    @Test func aPurchaseWithNoOpenOrderGetsAFlaggedNewOrderForTheReportingUser() async throws {
        try await E2E.withRig(.inProcess) { rig in
            E2E.dropNotifications(rig)
            let bought = try rig.buy("apple-a", token: nil)
            let answer = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
            #expect(answer.status == 200 && answer.json["matched_by"] as? String == "new_order")
            let order = E2E.order(answer)
            #expect(order["flags"] as? [String] == ["matched_without_order"])
            #expect(order["state"] as? String == "SUCCESS" && order["amount"] as? Int == 990)
            let number = E2E.number(order)
            #expect(try await rig.order(number)?.userID == "user-a")
            let paid = try #require(try await rig.store.orderOutboxEvents(number).first)
            #expect(paid.payload.contains("matched_without_order"))
        }
    }

    @Test func supportFindsAPurchaseByItsAppleIdsWithItsStoryInWordsAndRechecksWithTheAppStore() async throws {
        try await E2E.withRig(.inProcess) { rig in
            E2E.dropNotifications(rig)
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: E2E.token(created))
            #expect(try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
            for query in ["apple_transaction_id=\(bought.transactionID)", "original_transaction_id=\(bought.originalTransactionID)"] {
                let found = try await rig.gateway.send(.get, "/v1/support/orders?\(query)", token: GatewayRig.support)
                #expect(found.status == 200)
                let orders = try #require(found.json["orders"] as? [[String: Any]])
                #expect(orders.map { $0["out_trade_no"] as? String } == [E2E.number(created)])
                let ledger = try #require(found.json["apple_transactions"] as? [[String: Any]])
                #expect(ledger.first?["matched_by"] as? String == "app_account_token")
                let words = (orders.first?["events"] as? [[String: String]] ?? []).compactMap { $0["detail"] }
                #expect(words.contains { $0.contains("verified locally") })
                #expect(words.contains { $0.contains("matched by app_account_token") })
            }
            // A purchase nobody could match yet is found too, with no order.
            let unmatched = try rig.buy("apple-q", token: nil)
            let notification = AppStoreNotification(
                notificationType: .oneTimeCharge, notificationUUID: UUID().uuidString.lowercased(), signedDate: Date(),
                bundleID: rig.appStore.configuration.bundleID, appAppleID: rig.appStore.configuration.appAppleID,
                environment: .production)
            let payload = rig.appStore.pki.sign(payload: notification.payload(signedTransactionInfo: unmatched.signedTransactionInfo,
                                                                              signedRenewalInfo: nil))
            #expect(try await rig.gateway.send(.post, "/appstore/notifications", token: nil,
                                               body: #"{"signedPayload":"\#(payload)"}"#).status == 200)
            let waiting = try await rig.gateway.send(.get, "/v1/support/orders?apple_transaction_id=\(unmatched.transactionID)",
                                                     token: GatewayRig.support)
            #expect((waiting.json["orders"] as? [Any])?.isEmpty == true)
            #expect((waiting.json["apple_transactions"] as? [[String: Any]])?.first?["out_trade_no"] is NSNull)
            // Recheck asks the App Store: Apple refunded it and no notification came.
            rig.appStore.apply(AppStoreFaultPlan(notify: NotifyFaults(dropRate: 1)))
            try rig.appStore.refund(transactionID: bought.transactionID)
            let rechecked = try await rig.gateway.send(.post, "/v1/support/orders/\(E2E.number(created))/recheck",
                                                       token: GatewayRig.support)
            #expect(rechecked.status == 200 && rechecked.json["state"] as? String == "REFUND")
            #expect(try await rig.store.events(E2E.number(created)).map(\.detail).contains { $0.contains("Get Transaction Info") })
            #expect(try await rig.gateway.send(.get, "/v1/support/orders?apple_transaction_id=x1", token: GatewayRig.support).status == 400)
        }
    }

    @Test func supportsRecheckOfAnOpenIOSOrderGoesOnItsTimelineAsARecheck() async throws {
        try await E2E.withRig(.inProcess) { rig in
            let created = try await rig.createOrder("user-r")
            let rechecked = try await rig.gateway.send(.post, "/v1/support/orders/\(E2E.number(created))/recheck",
                                                       token: GatewayRig.support)
            #expect(rechecked.status == 200 && rechecked.json["state"] as? String == "NOTPAY")
            // The history check's words say why ("support recheck"); its kind is the documented one.
            let lines = try await rig.store.events(E2E.number(created)).filter { $0.detail.contains("no App Store transaction") }
            #expect(lines.map(\.kind) == ["recheck"])
        }
    }

    @Test func theDailyRefundHistoryFindsARefundWhoseNotificationWasLost() async throws {
        try await E2E.withRig(.inProcess) { rig in
            E2E.dropNotifications(rig)
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: E2E.token(created))
            #expect(try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
            try rig.appStore.refund(transactionID: bought.transactionID)
            let report = await rig.iap.checkRefundHistory()
            #expect(report.accounts == 1 && report.refunded == 1 && report.errors == 0)
            #expect(try await rig.order(E2E.number(created))?.state == .refund)
            #expect(try await rig.store.orderOutboxEvents(E2E.number(created)).map(\.type) == ["order.paid", "order.refunded"])
            // Asked again: nothing more.
            #expect(await rig.iap.checkRefundHistory().refunded == 0)
            #expect(try await rig.store.orderOutboxEvents(E2E.number(created)).count == 2)
        }
    }

    @Test func aNotificationWithoutTokenIsCreditedToTheUserOfAnotherPurchaseOfTheSameAccount() async throws {
        try await E2E.withRig(.inProcess) { rig in
            let earlier = try await rig.createOrder("user-a", product: "swift-201")
            let first = try rig.buy("apple-a", token: E2E.token(earlier), product: "com.example.courses.swift201")
            #expect(try await rig.report("user-a", ["signed_transaction": first.signedTransactionInfo]).status == 200)
            let created = try await rig.createOrder("user-a")
            _ = try rig.buy("apple-a", token: nil)
            #expect(try await eventually { try await rig.order(E2E.number(created))?.state == .success })
            let words = try await rig.store.events(E2E.number(created)).map(\.detail).joined(separator: "\n")
            #expect(words.contains("another purchase of the same App Store account"))
        }
    }
}
