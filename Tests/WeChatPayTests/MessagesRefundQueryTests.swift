// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

struct MessagesRefundQueryTests {
    static let twoRefunds: Fields = [
        "transaction_id": "4200000123202401011234567890", "out_trade_no": "T1", "total_fee": "1200", "cash_fee": "1200",
        "refund_count": "2", "total_refund_count": "2",
        "out_refund_no_0": "R1", "refund_id_0": "50000001", "refund_channel_0": "ORIGINAL", "refund_fee_0": "200",
        "refund_status_0": "SUCCESS", "refund_recv_accout_0": "支付用户的零钱",
        "refund_success_time_0": "2024-01-02 10:00:00", "coupon_refund_id_0_0": "10000",
        "out_refund_no_1": "R2", "refund_id_1": "50000002", "refund_fee_1": "300", "refund_status_1": "PROCESSING",
    ]

    @Test func onlyTheWinningIdentifierIsSentByPrecedence() {
        let cases: [(RefundQueryIdentifier?, String)] = [
            (.byPrecedence(refundID: "5", outRefundNo: "R", transactionID: "4", outTradeNo: "T"), "refund_id"),
            (.byPrecedence(refundID: "", outRefundNo: "R", transactionID: "4", outTradeNo: "T"), "out_refund_no"),
            (.byPrecedence(transactionID: "4", outTradeNo: "T"), "transaction_id"),
            (.byPrecedence(outTradeNo: "T"), "out_trade_no"),
        ]
        for (identifier, name) in cases {
            let fields = RefundQueryRequest(identifier!).businessFields()
            #expect(fields.names == [name])
        }
        #expect(RefundQueryIdentifier.byPrecedence() == nil)
    }

    @Test func aReceivedRequestFollowsTheSamePrecedence() throws {
        let all: Fields = ["out_trade_no": "T", "transaction_id": "4", "out_refund_no": "R", "refund_id": "5", "offset": "10"]
        let request = try RefundQueryRequest(fields: all)
        #expect(request.identifier == .refundID("5"))
        #expect(request.offset == 10)
        #expect(request.additionalFields.count == 0)
        var fewer = all
        fewer["refund_id"] = nil
        #expect(try RefundQueryRequest(fields: fewer).identifier == .outRefundNo("R"))
    }

    @Test func aRequestWithoutIdentifierIsLackParamsAndABadOffsetParamError() {
        #expect(throws: WeChatPayMessageError.self) { try RefundQueryRequest(fields: ["offset": "1"]) }
        #expect(throws: WeChatPayMessageError.invalidField("offset")) {
            try RefundQueryRequest(fields: ["out_trade_no": "T", "offset": "-1"])
        }
    }

    @Test func indexedRefundsDecodeInOrderWithTypedStatus() throws {
        let response = try RefundQueryResponse(verifiedFields: Self.twoRefunds)
        #expect(response.refunds.count == 2)
        #expect(response.refunds[0].outRefundNo == "R1")
        #expect(response.refunds[0].status == .success)
        #expect(response.refunds[0].refundRecvAccount == "支付用户的零钱")
        #expect(response.refunds[0].successTime == BeijingTime.parse("20240102100000"))
        #expect(response.refunds[1].status == .processing)
        #expect(response.refunds[1].successTime == nil)
        #expect(response.fields["coupon_refund_id_0_0"] == "10000")
        #expect(response.totalRefundCount == 2)
    }

    @Test func aBuiltResponseDecodesToItself() throws {
        let response = try RefundQueryResponse(verifiedFields: Self.twoRefunds)
        let rebuilt = RefundQueryResponse(
            transactionID: response.transactionID, outTradeNo: response.outTradeNo, totalFee: response.totalFee,
            cashFee: response.cashFee, totalRefundCount: response.totalRefundCount, refunds: response.refunds)
        let decoded = try RefundQueryResponse(verifiedFields: rebuilt.businessFields())
        #expect(decoded == rebuilt)
    }

    @Test(arguments: ["refund_status_1", "refund_id_0", "out_refund_no_1", "refund_fee_0", "refund_count"])
    func aMissingIndexedFieldIsRefusedByName(name: String) {
        var fields = Self.twoRefunds
        fields[name] = nil
        #expect(throws: WeChatPayMessageError.missingField(name)) { try RefundQueryResponse(verifiedFields: fields) }
    }

    @Test func aRefundCountBeyondTheFieldsPresentIsRefusedWithoutLooping() {
        var fields = Self.twoRefunds
        fields["refund_count"] = "999999999999"
        #expect(throws: WeChatPayMessageError.invalidField("refund_count")) { try RefundQueryResponse(verifiedFields: fields) }
    }

    @Test func anUnknownRefundStatusIsKeptAndNotFinal() throws {
        var fields = Self.twoRefunds
        fields["refund_status_1"] = "PENDING_BANK"
        let response = try RefundQueryResponse(verifiedFields: fields)
        #expect(response.refunds[1].status == .unknown("PENDING_BANK"))
        #expect(!response.refunds[1].status.isFinal)
    }

    @Test(arguments: [("SUCCESS", true), ("REFUNDCLOSE", true), ("PROCESSING", false), ("CHANGE", true)])
    func everyDocumentedRefundStatusRoundTrips(raw: String, final: Bool) {
        let status = RefundStatus(rawValue: raw)
        #expect(status.rawValue == raw)
        if case .unknown = status { Issue.record("\(raw) decoded as unknown") }
        #expect(status.isFinal == final)
        #expect(status.needsManualHandling == (raw == "CHANGE"))
    }

    @Test func aMalformedSuccessTimeIsRefused() {
        var fields = Self.twoRefunds
        fields["refund_success_time_0"] = "20240102100000"
        #expect(throws: WeChatPayMessageError.invalidField("refund_success_time_0")) {
            try RefundQueryResponse(verifiedFields: fields)
        }
    }
}
