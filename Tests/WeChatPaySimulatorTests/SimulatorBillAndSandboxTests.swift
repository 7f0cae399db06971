// SPDX-License-Identifier: Apache-2.0
import Foundation
import SimulatorHarnessSupport
import TestSupport
import Testing
import WeChatPay
@testable import WeChatPaySimulator

struct SimulatorBillAndSandboxTests {
    /// 2025-11-30 08:00 Beijing; the bill of that day exists from 2025-12-01 09:00.
    static let start = Date(timeIntervalSince1970: 1_764_460_800)

    func billRequest(_ harness: SimulatorHarness, date: String, type: String = "ALL", gzip: Bool = false) -> SimulatorResponse {
        var request: Fields = ["appid": SimulatorHarness.appID, "mch_id": SimulatorHarness.mchID,
                               "nonce_str": UUID().uuidString.replacingOccurrences(of: "-", with: ""),
                               "bill_date": date, "bill_type": type]
        if gzip { request["tar_type"] = "GZIP" }
        request["sign"] = harness.signer.signature(for: request, type: .md5)
        return harness.simulator.handle(SimulatorRequest(path: "/pay/downloadbill", body: try! FlatXML.encode(request)))
    }

    @Test func theDailyBillListsPaymentsAndRefundsInWeChatsTextFormat() throws {
        let harness = SimulatorHarness(start: Self.start)
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("bill-0001", fee: 576, body: "课程, 进阶"))
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("bill-0002", fee: 100))
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("bill-0003", fee: 100))
        try harness.simulator.pay(outTradeNo: "bill-0001")
        try harness.simulator.pay(outTradeNo: "bill-0002")
        _ = harness.call("/secapi/pay/refund", ["out_trade_no": "bill-0002", "out_refund_no": "bill-r1",
                                                "total_fee": "100", "refund_fee": "40"])
        #expect(harness.decode(billRequest(harness, date: "20251130"))["return_msg"] == "Bill Creating")
        harness.clock.advance(by: 26 * 3600)
        let response = billRequest(harness, date: "20251130")
        #expect(!FlatXML.isDocumentLike(response.body))
        let bill = try Bill.parse(response.body)
        #expect(bill.rows.count == 3)
        #expect(bill.rows.first { $0.outTradeNo == "bill-0001" }?.settlementTotalFee == 576)
        #expect(bill.rows.first { $0.outTradeNo == "bill-0001" }?.body == "课程, 进阶")
        #expect(bill.rows.first { $0.outRefundNo == "bill-r1" }?.refundFee == 40)
        #expect(bill.rows.contains { $0.outTradeNo == "bill-0003" } == false)
        #expect(bill.summary.tradeCount == 3)
        #expect(bill.summary.settlementTotalFee == 676)
        #expect(bill.summary.refundFee == 40)
        let success = try Bill.parse(billRequest(harness, date: "20251130", type: "SUCCESS").body)
        #expect(success.rows.count == 2)
        let gzipped = billRequest(harness, date: "20251130", gzip: true)
        #expect(try Gzip.decompress(gzipped.body, maximumOutput: 1 << 20) == response.body)
    }

    @Test func aDayWithoutTradesHasNoBillAndAFutureDayIsInvalid() {
        let harness = SimulatorHarness(start: Self.start)
        harness.clock.advance(by: 3 * 86400)
        #expect(harness.decode(billRequest(harness, date: "20251129"))["return_msg"] == "No Bill Exist")
        #expect(harness.decode(billRequest(harness, date: "20261231"))["return_msg"] == "invalid bill_date")
        #expect(harness.decode(billRequest(harness, date: "2025-11-29"))["return_code"] == "FAIL")
    }

    @Test func aCompletedRefundNotifiesWithAnEncryptedReqInfo() async throws {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("rn-0001", fee: 300))
        try harness.simulator.pay(outTradeNo: "rn-0001")
        _ = harness.call("/secapi/pay/refund", ["out_trade_no": "rn-0001", "out_refund_no": "rn-r1", "total_fee": "300",
                                                "refund_fee": "300", "notify_url": "https://merchant.example/refund"])
        try await harness.withNotifyLoop {
            #expect(await eventually { harness.received.count == 1 })  // the payment notify
            try harness.simulator.completeRefund(outRefundNo: "rn-r1")
            #expect(await eventually { harness.received.count == 2 })
        }
        let notify = try #require(harness.received.all.last)
        #expect(notify["sign"] == nil)
        let refund = try RefundNotification.decrypt(
            notify, merchant: MerchantIdentity(appID: SimulatorHarness.appID, mchID: SimulatorHarness.mchID),
            key: SimulatorHarness.key)
        #expect(refund.outRefundNo == "rn-r1")
        #expect(refund.refundFee == 300)
        #expect(refund.refundStatus == .success)
        // The notify and refundquery describe the refund the same way.
        let query = harness.call("/pay/refundquery", ["out_refund_no": "rn-r1"])
        #expect(refund.refundAccount == query["refund_account_0"])
        #expect(refund.refundRecvAccount == query["refund_recv_accout_0"])
        #expect(query["refund_account_0"] == "REFUND_SOURCE_UNSETTLED_FUNDS")
    }

    @Test func theSandboxHandsOutAKeyAndAcceptsOnlyMD5SignedWithIt() throws {
        let harness = SimulatorHarness()
        var keyRequest: Fields = ["mch_id": SimulatorHarness.mchID, "nonce_str": "abc123"]
        keyRequest["sign"] = harness.signer.signature(for: keyRequest, type: .md5)
        let keyReply = harness.decode(harness.simulator.handle(SimulatorRequest(
            path: "/sandboxnew/pay/getsignkey", body: try FlatXML.encode(keyRequest))))
        let sandboxKey = try #require(keyReply["sandbox_signkey"])
        #expect(sandboxKey != "192006250b4c09247ec02edce69f6a2d")

        var query: Fields = ["appid": SimulatorHarness.appID, "mch_id": SimulatorHarness.mchID, "nonce_str": "q1",
                             "out_trade_no": "nothing-here"]
        query["sign"] = Signer(key: APIKey(sandboxKey)).signature(for: query, type: .md5)
        let reply = harness.decode(harness.simulator.handle(SimulatorRequest(
            path: "/sandboxnew/pay/orderquery", body: try FlatXML.encode(query))))
        #expect(reply["err_code"] == "ORDERNOTEXIST")
        try Signer(key: APIKey(sandboxKey)).verify(reply, expected: .md5)
        // The production key is not the sandbox's.
        query["sign"] = harness.signer.signature(for: query, type: .md5)
        let refused = harness.decode(harness.simulator.handle(SimulatorRequest(
            path: "/sandboxnew/pay/orderquery", body: try FlatXML.encode(query))))
        #expect(refused["return_msg"] == "签名错误")
    }
}

extension SimulatorBillAndSandboxTests {
    @Test func sandboxOrdersStayOutOfProductionAnswers() throws {
        let harness = SimulatorHarness()
        var keyRequest: Fields = ["mch_id": SimulatorHarness.mchID, "nonce_str": "abc123"]
        keyRequest["sign"] = harness.signer.signature(for: keyRequest, type: .md5)
        let sandboxKey = try #require(harness.decode(harness.simulator.handle(SimulatorRequest(
            path: "/sandboxnew/pay/getsignkey", body: try FlatXML.encode(keyRequest))))["sandbox_signkey"])
        var order: Fields = ["appid": SimulatorHarness.appID, "mch_id": SimulatorHarness.mchID, "nonce_str": "s1"]
        for field in SimulatorHarness.order("shared-0001") { order[field.name] = field.value }
        order["sign"] = Signer(key: APIKey(sandboxKey)).signature(for: order, type: .md5)
        let created = harness.decode(harness.simulator.handle(SimulatorRequest(
            path: "/sandboxnew/pay/unifiedorder", body: try FlatXML.encode(order))))
        #expect(created["result_code"] == "SUCCESS")
        try harness.simulator.pay(outTradeNo: "shared-0001")
        // Production has never seen the number: it is unknown there and free to use.
        #expect(harness.call("/pay/orderquery", ["out_trade_no": "shared-0001"])["err_code"] == "ORDERNOTEXIST")
        #expect(harness.call("/pay/unifiedorder", SimulatorHarness.order("shared-0001", fee: 1))["result_code"] == "SUCCESS")
    }
}

extension FlatXML {
    /// A bill is text, a failure is XML: WeChat's own rule of thumb is the first byte.
    static func isDocumentLike(_ body: [UInt8]) -> Bool { body.first == UInt8(ascii: "<") }
}
