// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import Observability
import StorageCore
import StoreTestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// Only a refund's own notify or refundquery decides a refund, and an order's state follows its
/// refunds: WeChat's orderquery answers `trade_state=REFUND` as soon as a refund is requested (it
/// may still end REFUNDCLOSE), so that word never moves an order to REFUND, whoever asked.
struct OrderFollowsItsRefundsTests {
    static func state(_ rig: RefundRig, _ outTradeNo: String) async throws -> String? {
        try await rig.send(.get, "/v1/orders/\(outTradeNo)").json["state"] as? String
    }

    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func aRecheckDuringAPendingRefundLeavesTheOrderPaid(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rf-pending", amount: 990)
        #expect(try await rig.refund("rf-pending", amount: 990, number: "rf-pending-r1").status == 201)

        // WeChat now answers REFUND for the order; support rechecks it (the console's viewer can too).
        let rechecked = try await rig.send(.post, "/v1/support/orders/rf-pending/recheck", token: RefundRig.support)
        #expect(rechecked.status == 200)
        #expect(rechecked.json["state"] as? String == "SUCCESS")
        #expect(rechecked.json["refunded_amount"] as? Int == 0)
        let events = try await rig.store.events("rf-pending")
        #expect(events.contains { $0.kind == "orderquery" && $0.detail.hasSuffix("trade_state=REFUND") })
        #expect(try await rig.events("rf-pending", type: "order.refunded").isEmpty)
        // A refund of its own is pending, so nothing is flagged for a person either.
        #expect(try await rig.store.order("rf-pending")?.flags.isEmpty == true)

        // The refund fails: the order was never refunded, and a sweep or the bill asking changes nothing.
        try rig.simulator.completeRefund(outRefundNo: "rf-pending-r1", status: "REFUNDCLOSE")
        #expect(await rig.refund("rf-pending-r1", becomes: .refundClose))
        _ = try await rig.send(.post, "/v1/support/orders/rf-pending/recheck", token: RefundRig.support)
        _ = await rig.services.queries.queryAndSettle("rf-pending", reason: "sweep", source: "reconcile", includingFinal: true)
        #expect(try await Self.state(rig, "rf-pending") == "SUCCESS")
        #expect(try await rig.events("rf-pending", type: "order.refunded").isEmpty)

        // A refund that succeeds moves it, through the refund door, with its refund.succeeded.
        #expect(try await rig.refund("rf-pending", amount: 500, number: "rf-pending-r2").status == 201)
        try rig.simulator.completeRefund(outRefundNo: "rf-pending-r2")
        #expect(await rig.refund("rf-pending-r2", becomes: .success))
        let order = try await rig.send(.get, "/v1/orders/rf-pending")
        #expect(order.json["state"] as? String == "REFUND")
        #expect(order.json["refunded_amount"] as? Int == 500)
        #expect(try await rig.events("rf-pending", type: "refund.succeeded").count == 1)
        #expect(try await rig.events("rf-pending", type: "order.refunded").isEmpty)
        let intoRefund = try await rig.store.events("rf-pending").filter {
            $0.kind == OrderEvent.stateChangedKind && $0.detail.hasPrefix("SUCCESS -> REFUND")
        }
        #expect(intoRefund.map(\.detail) == ["SUCCESS -> REFUND: refund rf-pending-r2 succeeded"])
    }

    @Test(arguments: StoreKind.all)
    func aRefundMadeOutsideTheGatewayFlagsThePaidOrderForSupportOnce(store: StoreKind) async throws {
        let rig = try await RefundRig.start(.inProcess, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rf-elsewhere", amount: 990)
        // Refunded by hand in the merchant platform: WeChat holds a refund the gateway never asked for.
        try await rig.refundByHand("rf-elsewhere", number: "by-hand-1", amount: 990)

        for _ in 0..<2 {
            let rechecked = try await rig.send(.post, "/v1/support/orders/rf-elsewhere/recheck", token: RefundRig.support)
            #expect(rechecked.json["state"] as? String == "SUCCESS")
            #expect(rechecked.json["flags"] as? [String] == ["refund_outside_gateway"])
        }
        let lines = try await rig.store.events("rf-elsewhere").filter { $0.kind == "refund_outside_gateway" }
        #expect(lines.count == 1)
        #expect(try await rig.events("rf-elsewhere", type: "order.refunded").isEmpty)
        #expect(rig.metrics.counter("wxpay_refunds_outside_gateway_total") == 1)

        // Support tells the business and marks it handled: orderquery's REFUND, saying nothing new,
        // does not bring it back.
        let handled = try await rig.send(.post, "/v1/support/orders/rf-elsewhere/attention/handled", token: RefundRig.support,
                                         body: #"{"reason":"told the business"}"#)
        #expect(handled.status == 200)
        for _ in 0..<2 {
            let rechecked = try await rig.send(.post, "/v1/support/orders/rf-elsewhere/recheck", token: RefundRig.support)
            #expect(rechecked.json["flags"] as? [String] == ["handled.refund_outside_gateway"])
        }
        #expect(try await rig.store.events("rf-elsewhere").filter { $0.kind == "refund_outside_gateway" }.count == 1)
        #expect(rig.metrics.counter("wxpay_refunds_outside_gateway_total") == 1)
    }

    @Test(arguments: StoreKind.all)
    func aRefundWeChatRefusedWhenAskedDoesNotHideOneMadeOutsideTheGateway(store: StoreKind) async throws {
        let rig = try await RefundRig.start(.inProcess, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rf-refused", amount: 990)
        try await rig.refundByHand("rf-refused", number: "by-hand-3", amount: 990)
        // The gateway's own refund comes after: WeChat refuses it, nothing being left to refund.
        let refused = try await rig.refund("rf-refused", amount: 500, number: "rf-refused-r1")
        #expect(refused.json["state"] as? String == "REFUNDCLOSE")
        let record = try #require(try await rig.store.refund("rf-refused-r1"))
        #expect(record.state == .refundClose && record.refundID == nil && record.failureReason != nil)

        let rechecked = try await rig.send(.post, "/v1/support/orders/rf-refused/recheck", token: RefundRig.support)
        #expect(rechecked.json["state"] as? String == "SUCCESS")
        #expect(rechecked.json["flags"] as? [String] == ["refund_outside_gateway"])
        #expect(rig.metrics.counter("wxpay_refunds_outside_gateway_total") == 1)
    }

    @Test(arguments: StoreKind.all)
    func anOrderWeChatFirstReportsAsRefundIsSettledPaidNotRefunded(store: StoreKind) async throws {
        let rig = try await RefundRig.start(.inProcess, store: store)
        defer { Task { await rig.stop() } }
        // Paid with the notify lost, then refunded by hand: the first the gateway hears is REFUND.
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        let created = try await rig.send(.post, "/v1/orders",
                                         body: #"{"amount":990,"description":"d","client_ip":"203.0.113.7","out_trade_no":"rf-first"}"#)
        #expect(created.status == 201)
        try rig.simulator.pay(outTradeNo: "rf-first")
        try await rig.refundByHand("rf-first", number: "by-hand-2", amount: 990)

        let after = try #require(await rig.services.queries.queryAndSettle("rf-first", reason: "sweep", source: "reconcile"))
        #expect(after.state == .success)
        #expect(after.flags == [.refundOutsideGateway])
        #expect(try await rig.events("rf-first", type: "order.paid").count == 1)
        #expect(try await rig.events("rf-first", type: "order.refunded").isEmpty)
    }

    @Test func theDoorToRefundOutsideRefundsTakesOnlyAppStoreOrders() async throws {
        let rig = try await RefundRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rf-door", amount: 990)
        let order = try #require(try await rig.store.order("rf-door"))
        let result = try await rig.services.context.settlement.refunded(order, source: "a word from elsewhere")
        #expect(!result.didChange)
        #expect(try await rig.store.order("rf-door")?.state == .success)
        #expect(try await rig.events("rf-door", type: "order.refunded").isEmpty)
    }
}
