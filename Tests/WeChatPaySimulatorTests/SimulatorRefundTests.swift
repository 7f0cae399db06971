// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay
@testable import WeChatPaySimulator

struct SimulatorRefundTests {
    /// A harness with one paid order of 1,000 fen.
    func paidOrder(_ outTradeNo: String = "refund-0001") throws -> (SimulatorHarness, SimulatedOrderSnapshot) {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order(outTradeNo, fee: 1000))
        return (harness, try harness.simulator.pay(outTradeNo: outTradeNo))
    }

    func refund(_ harness: SimulatorHarness, _ outRefundNo: String, fee: Int, total: Int = 1000,
                order: String = "refund-0001") -> Fields {
        harness.call("/secapi/pay/refund", ["out_trade_no": order, "out_refund_no": outRefundNo,
                                            "total_fee": String(total), "refund_fee": String(fee)])
    }

    @Test func aRefundOfAPaidOrderIsAcceptedAndTheOrderTurnsRefund() throws {
        let (harness, paid) = try paidOrder()
        let reply = refund(harness, "r-1", fee: 300)
        #expect(reply["result_code"] == "SUCCESS")
        #expect(reply["refund_fee"] == "300")
        #expect(reply["transaction_id"] == paid.transactionID)
        try harness.signer.verify(reply, expected: .md5)
        #expect(harness.call("/pay/orderquery", ["out_trade_no": "refund-0001"])["trade_state"] == "REFUND")
    }

    @Test func theSameOutRefundNoIsOneRefundAndChangedAmountsAreRefused() throws {
        let (harness, _) = try paidOrder()
        let first = refund(harness, "r-1", fee: 300)
        let retry = refund(harness, "r-1", fee: 300)
        #expect(retry["refund_id"] == first["refund_id"])
        #expect(harness.simulator.order("refund-0001")?.refunds.count == 1)
        #expect(refund(harness, "r-1", fee: 400)["err_code"] == "INVALID_REQUEST")
    }

    @Test func refundsCannotExceedThePaidAmount() throws {
        let (harness, _) = try paidOrder()
        #expect(refund(harness, "r-1", fee: 700)["result_code"] == "SUCCESS")
        #expect(refund(harness, "r-2", fee: 301)["err_code"] == "INVALID_REQUEST")
        #expect(refund(harness, "r-3", fee: 300)["result_code"] == "SUCCESS")
        #expect(refund(harness, "r-4", fee: 1, total: 999)["err_code"] == "INVALID_REQUEST")
    }

    @Test func anOrderTakesAtMostFiftyRefunds() throws {
        let (harness, _) = try paidOrder()
        for n in 0..<50 { #expect(refund(harness, "r-\(n)", fee: 1)["result_code"] == "SUCCESS") }
        #expect(refund(harness, "r-50", fee: 1)["err_code"] == "INVALID_REQUEST")
    }

    @Test func anUnpaidOrderCannotBeRefunded() {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("refund-0001", fee: 1000))
        #expect(refund(harness, "r-1", fee: 1)["err_code"] == "ORDERNOTEXIST")
    }

    @Test func theRefundEndpointAsksForAClientCertificateWhenTLSIsOn() throws {
        let (harness, _) = try paidOrder()
        harness.simulator.setRequiresClientCertificates(true)
        var request: Fields = ["appid": SimulatorHarness.appID, "mch_id": SimulatorHarness.mchID, "nonce_str": "n1",
                               "out_trade_no": "refund-0001", "out_refund_no": "r-1", "total_fee": "1000",
                               "refund_fee": "1"]
        request["sign"] = harness.signer.signature(for: request, type: .md5)
        let body = try FlatXML.encode(request)
        let refused = harness.simulator.handle(SimulatorRequest(path: "/secapi/pay/refund", body: body))
        #expect(refused.status == 400)
        let accepted = harness.simulator.handle(SimulatorRequest(path: "/secapi/pay/refund", body: body,
                                                                 clientCertificateVerified: true))
        #expect(harness.decode(accepted)["result_code"] == "SUCCESS")
    }

    @Test func refundQueryFollowsTheDocumentedPrecedence() throws {
        let (harness, paid) = try paidOrder()
        let r1 = refund(harness, "r-1", fee: 100)
        _ = refund(harness, "r-2", fee: 200)
        // refund_id wins over out_refund_no, which wins over the order identifiers.
        let byID = harness.call("/pay/refundquery", ["refund_id": r1["refund_id"]!, "out_refund_no": "r-2",
                                                     "out_trade_no": "refund-0001"])
        #expect(byID["refund_count"] == "1")
        #expect(byID["out_refund_no_0"] == "r-1")
        let byNo = harness.call("/pay/refundquery", ["out_refund_no": "r-2", "transaction_id": paid.transactionID!])
        #expect(byNo["out_refund_no_0"] == "r-2")
        #expect(byNo["refund_status_0"] == "PROCESSING")
        let byOrder = harness.call("/pay/refundquery", ["transaction_id": paid.transactionID!])
        #expect(byOrder["total_refund_count"] == "2")
        #expect(byOrder["refund_fee_1"] == "200")
        #expect(harness.call("/pay/refundquery", ["out_refund_no": "r-9"])["err_code"] == "REFUNDNOTEXIST")
    }

    @Test func refundQueryPagesTenAtATimeAndRefusesAnOffsetPastTheEnd() throws {
        let (harness, _) = try paidOrder()
        for n in 0..<12 { _ = refund(harness, "r-\(n)", fee: 1) }
        let first = harness.call("/pay/refundquery", ["out_trade_no": "refund-0001"])
        #expect(first["refund_count"] == "10")
        #expect(first["total_refund_count"] == "12")
        let second = harness.call("/pay/refundquery", ["out_trade_no": "refund-0001", "offset": "10"])
        #expect(second["refund_count"] == "2")
        #expect(second["out_refund_no_0"] == "r-10")
        #expect(harness.call("/pay/refundquery", ["out_trade_no": "refund-0001", "offset": "12"])["err_code"] == "PARAM_ERROR")
    }
}
