// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import StorageCore
import StoreTestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// The daily bill comparison reads the bill's refund lines too: a matching refund is matched, a
/// refund the bill shows SUCCESS but the gateway still has PROCESSING is settled only after its own
/// refundquery, and every other difference is reported and applied nowhere.
struct BillRefundsTests {
    @Test(arguments: StoreKind.all)
    func theBillsRefundLinesAreMatchedSettledByRefundqueryOrReported(store: StoreKind) async throws {
        let rig = try await RefundRig.start(.inProcess, store: store)
        defer { Task { await rig.stop() } }
        // Keep everything on one Beijing day, whatever time the test runs.
        let secondOfDay = (Int(rig.clock.now().timeIntervalSince1970) + BeijingTime.offsetSeconds) % 86400
        if secondOfDay > 86400 - 1800 { rig.clock.advance(by: 2400) }
        let day = rig.clock.now()
        let dayStart = try #require(BeijingTime.parseDay(BeijingTime.formatDay(day)))

        try await rig.paidOrder("bill-r-match")
        _ = try await rig.refund("bill-r-match", amount: 100, number: "bill-r-match-1")
        try rig.simulator.completeRefund(outRefundNo: "bill-r-match-1")
        #expect(await rig.refund("bill-r-match-1", becomes: .success))

        // Its notify lost: WeChat says SUCCESS, the gateway still PROCESSING (no reconciler runs).
        try await rig.paidOrder("bill-r-lost")
        try await rig.paidOrder("bill-r-absent")
        _ = try await rig.refund("bill-r-lost", amount: 200, number: "bill-r-lost-1")
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        try rig.simulator.completeRefund(outRefundNo: "bill-r-lost-1")
        // A refund made at WeChat by someone else (the merchant platform): unknown here.
        let client = WeChatPayClient(
            merchant: MerchantCredentials(appID: GatewayConfiguration.demoAppID, mchID: GatewayConfiguration.demoMchID,
                                          key: APIKey(GatewayConfiguration.demoKey), signType: .hmacSHA256),
            transport: SimulatorTransport(simulator: rig.simulator), nonces: RandomNonceSource())
        _ = try await client.send(RefundRequest(order: .outTradeNo("bill-r-match"), outRefundNo: "bill-r-elsewhere",
                                                totalFee: 990, refundFee: 50))
        // A refund the gateway holds as accepted that WeChat never had.
        _ = try await rig.store.createRefund(
            NewRefund(outRefundNo: "bill-r-absent-1", outTradeNo: "bill-r-absent", amount: 300, reason: "r", notifyURL: nil,
                      parametersDigest: "d", createdAt: rig.clock.now()),
            maximumPerOrder: 50, event: NewOrderEvent(kind: "refund_requested", detail: "test", at: rig.clock.now()))
        _ = try await rig.store.recordRefundAccepted("bill-r-absent-1", refundID: "50300000000000000000000000009",
                                                     at: rig.clock.now(), event: nil)
        let before = try await rig.store.refund("bill-r-absent-1")

        rig.clock.advance(by: (dayStart + 86400 + 10 * 3600 + 60).timeIntervalSince(rig.clock.now()))
        let compact = BeijingTime.formatDay(day)
        let report = try await BillReconciler(services: rig.gateway.services)
            .reconcile(day: "\(compact.prefix(4))-\(compact.dropFirst(4).prefix(2))-\(compact.suffix(2))")

        #expect(report.billRefunds == 3)
        #expect(report.refundsMatched == 1)
        #expect(report.localRefunds == 3)
        let kinds = Dictionary(report.differences.map { ($0.detail.split(separator: ":").first.map(String.init) ?? "", $0.kind) },
                               uniquingKeysWith: { a, _ in a })
        #expect(kinds["bill-r-lost-1"] == .refundSettledFromBill)
        #expect(kinds["bill-r-elsewhere"] == .unknownRefund)
        #expect(kinds["bill-r-absent-1"] == .refundAbsentFromBill)
        #expect(report.differences.count == 3)
        #expect(!report.isClean)
        // Settled through the door, by its own refundquery; the others untouched.
        let settled = try #require(try await rig.store.refund("bill-r-lost-1"))
        #expect(settled.state == .success)
        #expect(try await rig.store.events("bill-r-lost").contains { $0.detail == "bill-r-lost-1: PROCESSING -> SUCCESS: bill: refundquery" })
        #expect(try await rig.events("bill-r-lost", type: "refund.succeeded").count == 1)
        #expect(try await rig.store.refund("bill-r-absent-1") == before)
        #expect(try await rig.store.refund("bill-r-elsewhere") == nil)
        #expect(try await rig.store.events("bill-r-absent").contains { $0.kind == "bill" && $0.detail.contains("refund_absent_from_bill") })
        #expect(report.render().contains("refund lines matched: 1"))
    }
}
