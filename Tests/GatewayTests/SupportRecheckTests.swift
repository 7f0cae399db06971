// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import StorageCore
import Testing
import WeChatPay
import WeChatPaySimulator

/// Support's recheck asks WeChat about every order, final ones included, and settles the answer
/// through the one door: a CLOSED order WeChat holds paid becomes SUCCESS flagged paid-after-close
/// (and the business hears it), a SUCCESS order stays SUCCESS whatever WeChat says (C1).
struct SupportRecheckTests {
    static func orderQueries(_ harness: GatewayRig, _ outTradeNo: String) -> Int {
        harness.simulator.requests.filter { $0.path == "/pay/orderquery" && $0.fields["out_trade_no"] == outTradeNo }.count
    }

    @Test func aClosedOrderThatWeChatReportsPaidSettlesAsPaidAfterClose() async throws {
        let harness = try await GatewayRig.start(.inProcess)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(
            #"{"amount":990,"description":"late","client_ip":"203.0.113.7","out_trade_no":"recheck-closed"}"#)
        harness.clock.advance(by: 301)
        #expect(GatewayRig.object(try await harness.services.closing.close("recheck-closed")).string("state") == "CLOSED")
        // The payment raced the close and its notify is lost: only a person asking can find it.
        harness.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        let paid = try harness.simulator.pay(outTradeNo: "recheck-closed", afterClose: true)
        let before = Self.orderQueries(harness, "recheck-closed")

        let answer = GatewayRig.object(try await harness.services.support.recheck("recheck-closed"))
        #expect(answer.string("state") == "SUCCESS")
        #expect(answer.string("transaction_id") == paid.transactionID)
        #expect(Self.orderQueries(harness, "recheck-closed") == before + 1)
        let order = try #require(try await harness.store.order("recheck-closed"))
        #expect(order.flags.contains(.paidAfterClose))
        #expect(try await Battery.transitionsIntoSuccess(harness.store, "recheck-closed") == 1)
        let outbox = try await harness.store.outboxEvents("recheck-closed")
        #expect(outbox.count == 1)
        #expect(outbox.first?.payload.contains(#""paid_after_close":true"#) == true)
        // Asking again changes nothing more.
        _ = try await harness.services.support.recheck("recheck-closed")
        #expect(try await harness.store.outboxEvents("recheck-closed").count == 1)
        #expect(Self.orderQueries(harness, "recheck-closed") == before + 2)
    }

    @Test func aSuccessOrderStaysSuccessWhateverWeChatAnswers() async throws {
        let harness = try await GatewayRig.start(.inProcess)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(
            #"{"amount":990,"description":"paid","client_ip":"203.0.113.7","out_trade_no":"recheck-paid"}"#)
        // Settled by a verified notify while WeChat's book (the simulator) still says NOTPAY, then
        // CLOSED once the order has expired there: the answers that must not undo a payment.
        let notify = Battery.genuineNotify(outTradeNo: "recheck-paid", transactionID: "4200000000202611300000004242",
                                           totalFee: 990, nonce: "paid")
        #expect(String(decoding: await harness.services.notifies.handleNotify(notify), as: UTF8.self).contains(Battery.acknowledged))
        for advance: TimeInterval in [0, 3 * 3600] {
            harness.clock.advance(by: advance)
            let before = Self.orderQueries(harness, "recheck-paid")
            let answer = GatewayRig.object(try await harness.services.support.recheck("recheck-paid"))
            #expect(Self.orderQueries(harness, "recheck-paid") == before + 1, "WeChat was not asked")
            #expect(answer.string("state") == "SUCCESS")
            #expect(answer.string("transaction_id") == "4200000000202611300000004242")
        }
        let events = try await harness.store.events("recheck-paid")
        let answers = events.filter { $0.kind == "orderquery" }.map(\.detail)
        #expect(answers == ["support recheck: orderquery trade_state=NOTPAY", "support recheck: orderquery trade_state=CLOSED"])
        #expect(events.filter { $0.kind == OrderEvent.stateChangedKind }.count == 1)
        #expect(try await harness.store.order("recheck-paid")?.state == .success)
    }

    @Test func theSupportLookupTakesExactlyOneIdentifier() async throws {
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("lookup-0001")
        for query in ["out_trade_no=lookup-0001&user_id=u-42", "transaction_id=x&user_id=u-42", ""] {
            let answer = try await rig.send(.get, "/v1/support/orders?\(query)", token: GatewayRig.support)
            #expect(answer.status == 400, "\(query)")
            #expect(answer.error?["code"] as? String == "invalid_request")
        }
        let one = try await rig.send(.get, "/v1/support/orders?user_id=u-42", token: GatewayRig.support)
        #expect((one.json["orders"] as? [[String: Any]])?.count == 1)
    }
}
