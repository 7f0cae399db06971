// SPDX-License-Identifier: Apache-2.0
import Foundation
import SimulatorHarnessSupport
import TestSupport
import Testing
import WeChatPay
@testable import WeChatPaySimulator

struct SimulatorRefundCompletionTests {
    static func refund(_ harness: SimulatorHarness, _ outRefundNo: String, fee: Int, mutate: (inout Fields) -> Void = { _ in })
        -> Fields
    {
        harness.call("/secapi/pay/refund", ["out_trade_no": "auto-0001", "out_refund_no": outRefundNo, "total_fee": "1000",
                                            "refund_fee": String(fee), "notify_url": "https://merchant.example/refund"],
                     mutate: mutate)
    }

    @Test func withADelayAcceptedRefundsCompleteSuccessByThemselvesWithTheirNotify() async throws {
        let harness = SimulatorHarness { $0.refundCompletionDelay = 60 }
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("auto-0001", fee: 1000))
        try harness.simulator.pay(outTradeNo: "auto-0001")
        #expect(Self.refund(harness, "auto-r1", fee: 400)["result_code"] == "SUCCESS")
        try await harness.withNotifyLoop {
            try await Task.sleep(for: .milliseconds(100))
            #expect(harness.simulator.order("auto-0001")?.refunds.first?.status == "PROCESSING")
            harness.clock.advance(by: 61)
            #expect(await eventually { harness.simulator.order("auto-0001")?.refunds.first?.status == "SUCCESS" })
            #expect(await eventually { harness.received.all.contains { $0["req_info"] != nil } })
        }
        let notify = try #require(harness.received.all.first { $0["req_info"] != nil })
        let decrypted = try RefundNotification.decrypt(
            notify, merchant: MerchantIdentity(appID: SimulatorHarness.appID, mchID: SimulatorHarness.mchID), key: SimulatorHarness.key)
        #expect(decrypted.outRefundNo == "auto-r1" && decrypted.refundFee == 400 && decrypted.refundStatus == .success)
    }

    @Test func everyRefundNumbersRequestsAndParameterSetsAreKept() throws {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("auto-0001", fee: 1000))
        try harness.simulator.pay(outTradeNo: "auto-0001")
        _ = Self.refund(harness, "log-r1", fee: 100)
        _ = Self.refund(harness, "log-r1", fee: 100)   // a retry: new nonce, same parameters
        _ = Self.refund(harness, "log-r2", fee: 100)
        _ = Self.refund(harness, "log-r2", fee: 101)   // changed: refused, and visible here
        #expect(harness.simulator.refundRequests["log-r1"] == RefundRequestLog(requests: 2, parameterSets: harness.simulator.refundRequests["log-r1"]!.parameterSets))
        #expect(harness.simulator.refundRequests["log-r1"]?.parameterSets.count == 1)
        #expect(harness.simulator.refundRequests["log-r2"]?.requests == 2)
        #expect(harness.simulator.refundRequests["log-r2"]?.parameterSets.count == 2)
        let (status, body) = SimulatorControlAPI(simulator: harness.simulator).handle(
            method: "GET", path: "/simulator/refundrequests", body: [])
        #expect(status == 200)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: [String: Int]])
        #expect(json["log-r2"] == ["requests": 2, "parameterSets": 2])
    }
}
