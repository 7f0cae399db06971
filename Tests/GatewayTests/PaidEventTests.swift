// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// The `order.paid` outbox event, written by hand rather than by JSONEncoder: it must still be
/// valid JSON carrying exactly the order's values, whatever characters the client sent.
struct PaidEventTests {
    @Test(arguments: StoreKind.all) func aSettledNotifyWritesAnOrderPaidEventWhoseJSONCarriesTheOrdersValuesEscaped(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        let description = "Swift \"course\" \\ 课程 / end"
        let body = try JSONSerialization.data(withJSONObject: [
            "amount": 990, "description": description, "client_ip": "203.0.113.7", "out_trade_no": "paid-evt-01",
            "attach": "a\"b\\c", "user_id": "u-42",
        ])
        _ = try await harness.services.creation.create(try CreateOrderInput(json: Array(body)))
        try harness.simulator.pay(outTradeNo: "paid-evt-01")
        #expect(await eventually { (try? await harness.order("paid-evt-01"))?.string("state") == "SUCCESS" })
        let events = try await harness.store.outboxEvents("paid-evt-01")
        #expect(events.count == 1)
        let event = try #require(events.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.payload.utf8)) as? [String: Any])
        #expect(object["id"] as? String == event.id)
        #expect(object["type"] as? String == "order.paid")
        #expect(object["created_at"] is String)
        let data = try #require(object["data"] as? [String: Any])
        #expect(data["out_trade_no"] as? String == "paid-evt-01")
        #expect(data["amount"] as? Int == 990)
        #expect(data["description"] as? String == description)
        #expect(data["attach"] as? String == "a\"b\\c")
        #expect(data["user_id"] as? String == "u-42")
        #expect(data["product_id"] == nil)
        #expect((data["transaction_id"] as? String)?.isEmpty == false)
        #expect(data["paid_at"] is String)
        #expect(event.id.hasPrefix("evt_") && event.id.count == 36)
    }

    /// The webhook's `data` is the order as `GET /v1/orders/{id}` shows it, plus what only the
    /// business needs: one writer for the order's shape, so the two never drift apart.
    @Test(arguments: StoreKind.all) func theWebhookDataIsTheOrderAsTheQueryShowsItPlusAttachUserAndProduct(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(#"{"amount":1990,"description":"Swift","client_ip":"203.0.113.7","#
            + #""out_trade_no":"paid-evt-02","attach":"cart=7","user_id":"u-7","product_id":"swift-101"}"#)
        try harness.simulator.pay(outTradeNo: "paid-evt-02")
        #expect(await eventually { (try? await harness.order("paid-evt-02"))?.string("state") == "SUCCESS" })
        let shown = try await harness.order("paid-evt-02")
        let payload = try #require(try await harness.store.orderOutboxEvents("paid-evt-02").first?.payload)
        let event = try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
        let data = try #require(event["data"] as? [String: Any])
        #expect(data["state"] as? String == "SUCCESS")
        #expect(data["final"] as? Bool == true)
        for (key, value) in shown {
            #expect((data[key] as? NSObject)?.isEqual(value) == true, "\(key): \(data[key] ?? "absent") vs \(value)")
        }
        #expect(Set(data.keys).subtracting(shown.keys) == ["attach", "user_id", "product_id"])
        #expect(data["attach"] as? String == "cart=7" && data["user_id"] as? String == "u-7")
        #expect(data["product_id"] as? String == "swift-101")
        #expect(data["paid_after_close"] == nil)
    }

    /// An `order.paid`'s id is its payment's: unique, and led by the time paid (milliseconds, in
    /// hex), so ids append near the right edge of the outbox's index.
    @Test(arguments: StoreKind.all) func eventIDsAreUniqueAndLedByTheTimeOfPayment(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        var ids: Set<String> = []
        for index in 0..<3 {
            let outTradeNo = "paid-order-\(index)"
            _ = try await harness.create(
                #"{"amount":100,"description":"d","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)"}"#)
            try harness.simulator.pay(outTradeNo: outTradeNo)
            #expect(await eventually { (try? await harness.order(outTradeNo))?.string("state") == "SUCCESS" })
            let event = try #require(try await harness.store.outboxEvents(outTradeNo).first)
            let paidAt = try #require(try await harness.store.order(outTradeNo)?.paidAt)
            #expect(event.id.dropFirst(4).prefix(12) == String(format: "%012llx", UInt64((paidAt.timeIntervalSince1970 * 1000).rounded())))
            ids.insert(event.id)
        }
        #expect(ids.count == 3)
    }
}
