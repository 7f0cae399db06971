// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay
@testable import WeChatPaySimulator

struct SimulatorOrderTests {
    @Test func aValidUnifiedOrderAnswersASignedPrepayID() throws {
        let harness = SimulatorHarness()
        let reply = harness.call("/pay/unifiedorder", SimulatorHarness.order("course-0001"))
        #expect(reply["return_code"] == "SUCCESS")
        #expect(reply["result_code"] == "SUCCESS")
        #expect(reply["prepay_id"]?.hasPrefix("wx") == true)
        #expect(reply["trade_type"] == "APP")
        try harness.signer.verify(reply, expected: .md5)
    }

    @Test func answersAreSignedWithTheRequestsSignType() throws {
        let harness = SimulatorHarness()
        let reply = harness.call("/pay/unifiedorder", SimulatorHarness.order("course-hmac"), signType: .hmacSHA256)
        #expect(reply["sign"]?.count == 64)
        try harness.signer.verify(reply, expected: .hmacSHA256)
    }

    @Test func reEntryWithIdenticalParametersReturnsTheSamePrepayID() {
        let harness = SimulatorHarness()
        let first = harness.call("/pay/unifiedorder", SimulatorHarness.order("course-0002"))
        let second = harness.call("/pay/unifiedorder", SimulatorHarness.order("course-0002"))
        #expect(second["result_code"] == "SUCCESS")
        #expect(first["prepay_id"] == second["prepay_id"])
    }

    @Test func aPrepayIDOlderThanTwoHoursIsReplacedOnReEntry() {
        let harness = SimulatorHarness()
        let first = harness.call("/pay/unifiedorder", SimulatorHarness.order("course-0003"))
        harness.clock.advance(by: 2 * 3600 + 1)
        let second = harness.call("/pay/unifiedorder", SimulatorHarness.order("course-0003"))
        #expect(second["result_code"] == "SUCCESS")
        #expect(second["prepay_id"] != nil && first["prepay_id"] != second["prepay_id"])
    }

    @Test func changedParametersUnderTheSameOutTradeNoGiveOutTradeNoUsed() {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("course-0004", fee: 100))
        let changed = harness.call("/pay/unifiedorder", SimulatorHarness.order("course-0004", fee: 1))
        #expect(changed["result_code"] == "FAIL")
        #expect(changed["err_code"] == "OUT_TRADE_NO_USED")
    }

    @Test func aPaidOrderAnswersOrderPaidAndAClosedOneOrderClosed() throws {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("paid-0001"))
        try harness.simulator.pay(outTradeNo: "paid-0001")
        #expect(harness.call("/pay/unifiedorder", SimulatorHarness.order("paid-0001"))["err_code"] == "ORDERPAID")

        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("closed-0001"))
        harness.clock.advance(by: 301)
        #expect(harness.call("/pay/closeorder", ["out_trade_no": "closed-0001"])["result_code"] == "SUCCESS")
        #expect(harness.call("/pay/unifiedorder", SimulatorHarness.order("closed-0001"))["err_code"] == "ORDERCLOSED")
    }

    @Test func aBadSignatureIsAProtocolFailureAndCreatesNothing() {
        let harness = SimulatorHarness()
        let reply = harness.call("/pay/unifiedorder", SimulatorHarness.order("forged-0001")) { $0["total_fee"] = "1" }
        #expect(reply["return_code"] == "FAIL")
        #expect(reply["return_msg"] == "签名错误")
        #expect(reply["sign"] == nil)
        #expect(harness.simulator.order("forged-0001") == nil)
    }

    @Test func aMissingRequiredFieldIsLackParams() {
        let harness = SimulatorHarness()
        var order = SimulatorHarness.order("lack-0001")
        order["notify_url"] = nil
        let reply = harness.call("/pay/unifiedorder", order)
        #expect(reply["result_code"] == "FAIL")
        #expect(reply["err_code"] == "LACK_PARAMS")
    }

    @Test(arguments: [
        ("total_fee", "1.00"), ("total_fee", "0"), ("out_trade_no", "has space"), ("notify_url", "https://m.example/n?x=1"),
        ("spbill_create_ip", "not-an-ip"), ("trade_type", "CARD"), ("fee_type", "USD"), ("time_expire", "20991340000000"),
    ])
    func malformedParametersAreInvalidRequests(name: String, value: String) {
        let harness = SimulatorHarness()
        var order = SimulatorHarness.order("bad-0001")
        order[name] = value
        let reply = harness.call("/pay/unifiedorder", order)
        #expect(reply["result_code"] == "FAIL")
        #expect(reply["err_code"] == "INVALID_REQUEST")
        #expect(harness.simulator.order("bad-0001") == nil)
    }

    @Test func malformedXMLAndAnUnknownMerchantAreProtocolFailures() {
        let harness = SimulatorHarness()
        let broken = harness.decode(harness.simulator.handle(SimulatorRequest(path: "/pay/orderquery", body: Array("<xml><a>".utf8))))
        #expect(broken["return_code"] == "FAIL")
        #expect(broken["return_msg"] == "XML格式错误")
        let stranger = harness.call("/pay/orderquery", ["out_trade_no": "x"]) { $0["mch_id"] = "999" }
        #expect(stranger["return_code"] == "FAIL")
        let get = harness.simulator.handle(SimulatorRequest(method: "GET", path: "/pay/orderquery", body: []))
        #expect(harness.decode(get)["return_code"] == "FAIL")
    }

    @Test func anUnknownSignTypeIsRefused() {
        let harness = SimulatorHarness()
        let reply = harness.call("/pay/orderquery", ["out_trade_no": "x", "sign_type": "SHA1"])
        #expect(reply["return_code"] == "FAIL")
    }

    @Test func orderQueryFollowsTheOrderFromNotPaidToSuccess() throws {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("query-0001", fee: 990,
                                                                      extra: ["attach": "user=42"]))
        let before = harness.call("/pay/orderquery", ["out_trade_no": "query-0001"])
        #expect(before["trade_state"] == "NOTPAY")
        let paid = try harness.simulator.pay(outTradeNo: "query-0001")
        let after = harness.call("/pay/orderquery", ["out_trade_no": "query-0001"], signType: .hmacSHA256)
        try harness.signer.verify(after, expected: .hmacSHA256)
        #expect(after["trade_state"] == "SUCCESS")
        #expect(after["total_fee"] == "990")
        #expect(after["attach"] == "user=42")
        #expect(after["transaction_id"] == paid.transactionID)
        #expect(after["time_end"]?.count == 14)
        // transaction_id takes precedence over out_trade_no.
        let byTransaction = harness.call("/pay/orderquery", ["transaction_id": paid.transactionID!, "out_trade_no": "nope"])
        #expect(byTransaction["out_trade_no"] == "query-0001")
    }

    @Test func queryingAnUnknownOrderIsOrderNotExist() {
        let harness = SimulatorHarness()
        #expect(harness.call("/pay/orderquery", ["out_trade_no": "never-made"])["err_code"] == "ORDERNOTEXIST")
        #expect(harness.call("/pay/orderquery", [:])["err_code"] == "LACK_PARAMS")
    }

    @Test func closeOrderIsRefusedWithinFiveMinutesOfCreation() {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("close-0001"))
        harness.clock.advance(by: 299)
        let early = harness.call("/pay/closeorder", ["out_trade_no": "close-0001"])
        #expect(early["result_code"] == "FAIL")
        #expect(harness.simulator.order("close-0001")?.state == "NOTPAY")
        harness.clock.advance(by: 2)
        #expect(harness.call("/pay/closeorder", ["out_trade_no": "close-0001"])["result_code"] == "SUCCESS")
        #expect(harness.call("/pay/orderquery", ["out_trade_no": "close-0001"])["trade_state"] == "CLOSED")
        #expect(harness.call("/pay/closeorder", ["out_trade_no": "close-0001"])["err_code"] == "ORDERCLOSED")
    }

    @Test func closingAPaidOrderAnswersOrderPaid() throws {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("close-paid"))
        try harness.simulator.pay(outTradeNo: "close-paid")
        harness.clock.advance(by: 600)
        #expect(harness.call("/pay/closeorder", ["out_trade_no": "close-paid"])["err_code"] == "ORDERPAID")
    }

    @Test func anOrderPastItsTimeExpireIsClosedAndCannotBePaid() {
        let harness = SimulatorHarness()
        let expire = BeijingTime.format(harness.clock.now() + 600)
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("expire-0001", extra: ["time_expire": expire]))
        harness.clock.advance(by: 601)
        #expect(harness.call("/pay/orderquery", ["out_trade_no": "expire-0001"])["trade_state"] == "CLOSED")
        #expect(throws: SimulatorControlError.self) { try harness.simulator.pay(outTradeNo: "expire-0001") }
    }

    @Test func aFailedPaymentEndsPayError() throws {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("fail-0001"))
        try harness.simulator.failPayment(outTradeNo: "fail-0001")
        #expect(harness.call("/pay/orderquery", ["out_trade_no": "fail-0001"])["trade_state"] == "PAYERROR")
    }

    @Test func reusedNoncesAreCounted() {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/orderquery", ["out_trade_no": "a"], nonce: "same")
        _ = harness.call("/pay/orderquery", ["out_trade_no": "a"], nonce: "same")
        #expect(harness.simulator.counters.reusedNonces == 1)
    }
}
