// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

struct MessagesRefundTests {
    static let sampleRequest = RefundRequest(
        order: .transactionID("4200000123202401011234567890"), outRefundNo: "R20240101-001", totalFee: 1200,
        refundFee: 200, refundDescription: "部分退款", refundAccount: .unsettledFunds,
        notifyURL: "https://pay.example.com/wechat/refund-notify")

    static let sampleResponse = RefundResponse(
        transactionID: "4200000123202401011234567890", outTradeNo: "T20240101001", outRefundNo: "R20240101-001",
        refundID: "50000408942018111907145868882", refundFee: 200, totalFee: 1200, cashFee: 1200)

    @Test func aRequestRoundTripsThroughItsFields() throws {
        let fields = Self.sampleRequest.businessFields()
        #expect(fields["transaction_id"] == "4200000123202401011234567890")
        #expect(fields["out_trade_no"] == nil)
        #expect(fields["refund_account"] == "REFUND_SOURCE_UNSETTLED_FUNDS")
        #expect(try RefundRequest(fields: fields) == Self.sampleRequest)
    }

    @Test func transactionIDWinsOverTheOrderNumber() throws {
        var fields = Self.sampleRequest.businessFields()
        fields["out_trade_no"] = "T1"
        #expect(try RefundRequest(fields: fields).order == .transactionID("4200000123202401011234567890"))
    }

    @Test(arguments: ["out_refund_no", "total_fee", "refund_fee"])
    func eachMissingRequiredFieldIsLackParams(name: String) {
        var fields = Self.sampleRequest.businessFields()
        fields[name] = nil
        #expect(throws: WeChatPayMessageError.missingField(name)) { try RefundRequest(fields: fields) }
    }

    @Test func aRefundWithoutAnyOrderIdentifierIsLackParams() {
        var fields = Self.sampleRequest.businessFields()
        fields["transaction_id"] = nil
        let error = #expect(throws: WeChatPayMessageError.self) { try RefundRequest(fields: fields) }
        #expect(error?.isMissingField == true)
    }

    @Test(arguments: [
        ("refund_fee", "1201"), ("refund_fee", "0"), ("refund_account", "REFUND_SOURCE_ELSEWHERE"),
        ("out_refund_no", String(repeating: "r", count: 65)), ("refund_fee_type", "yuan"),
        ("refund_desc", String(repeating: "退", count: 81)), ("notify_url", "refund-notify"),
    ])
    func anInvalidValueIsParamError(name: String, value: String) {
        var fields = Self.sampleRequest.businessFields()
        fields[name] = value
        #expect(throws: WeChatPayMessageError.invalidField(name)) { try RefundRequest(fields: fields) }
    }

    @Test func aResponseRoundTripsAndKeepsCouponDetailsInItsFields() throws {
        var fields = Self.sampleResponse.businessFields()
        fields["coupon_refund_count"] = "1"
        fields["coupon_refund_id_0"] = "10000"
        let response = try RefundResponse(verifiedFields: fields)
        #expect(response.refundID == "50000408942018111907145868882")
        #expect(response.couponRefundCount == 1)
        #expect(response.fields["coupon_refund_id_0"] == "10000")
        #expect(try RefundResponse(verifiedFields: Self.sampleResponse.businessFields()) == Self.sampleResponse)
    }

    @Test(arguments: ["refund_id", "out_refund_no", "refund_fee", "transaction_id"])
    func aResponseWithoutARequiredFieldIsRefused(name: String) {
        var fields = Self.sampleResponse.businessFields()
        fields[name] = nil
        #expect(throws: WeChatPayMessageError.missingField(name)) { try RefundResponse(verifiedFields: fields) }
    }

    @Test func aResponseWithANegativeAmountIsRefused() {
        var fields = Self.sampleResponse.businessFields()
        fields["refund_fee"] = "-200"
        #expect(throws: WeChatPayMessageError.invalidField("refund_fee")) { try RefundResponse(verifiedFields: fields) }
    }
}
