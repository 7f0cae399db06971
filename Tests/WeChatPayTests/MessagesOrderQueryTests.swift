// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay

struct MessagesOrderQueryTests {
    static let paid = OrderQueryResponse(
        tradeState: .success, outTradeNo: "T1", transactionID: "4200000123202401011234567890", totalFee: 1200,
        feeType: "CNY", cashFee: 1000, couponFee: 200,
        coupons: [Coupon(id: "10000", type: "CASH", fee: 150), Coupon(id: "10001", fee: 50)], tradeType: .app,
        openID: "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o", isSubscribe: "N", bankType: "CMC", attach: "a",
        timeEnd: BeijingTime.parse("20240101101010"), tradeStateDesc: "支付成功")

    @Test func aRequestByOutTradeNoSendsOnlyIt() throws {
        let request = OrderQueryRequest(outTradeNo: "T1")
        #expect(request.businessFields() == ["out_trade_no": "T1"])
        #expect(try OrderQueryRequest(fields: request.businessFields()) == request)
    }

    @Test func transactionIDWinsWhenBothIdentifiersArrive() throws {
        let request = try OrderQueryRequest(fields: ["out_trade_no": "T1", "transaction_id": "4200"])
        #expect(request.order == .transactionID("4200"))
    }

    @Test func aRequestWithoutAnyIdentifierIsLackParams() {
        let error = #expect(throws: WeChatPayMessageError.self) { try OrderQueryRequest(fields: ["appid": "wx"]) }
        #expect(error?.errorCode == .lackParams)
    }

    @Test func aMalformedIdentifierIsParamError() {
        #expect(throws: WeChatPayMessageError.invalidField("out_trade_no")) {
            try OrderQueryRequest(fields: ["out_trade_no": "T 1"])
        }
    }

    @Test func aPaidAnswerRoundTripsWithItsCoupons() throws {
        let fields = Self.paid.businessFields()
        #expect(fields["coupon_count"] == "2")
        #expect(fields["coupon_id_1"] == "10001")
        #expect(fields["time_end"] == "20240101101010")
        let decoded = try OrderQueryResponse(verifiedFields: fields)
        #expect(decoded == Self.paid)
        #expect(decoded.tradeState.isFinal)
    }

    @Test func anUnpaidAnswerNeedsOnlyTheStateAndTheOrderNumber() throws {
        let response = try OrderQueryResponse(verifiedFields: ["trade_state": "NOTPAY", "out_trade_no": "T1"])
        #expect(response.tradeState == .notPay)
        #expect(!response.tradeState.isFinal)
        #expect(response.totalFee == nil)
    }

    @Test(arguments: ["transaction_id", "total_fee", "trade_state", "out_trade_no"])
    func aPaidAnswerMissingWhatSettlementNeedsIsRefused(name: String) {
        var fields = Self.paid.businessFields()
        fields[name] = nil
        #expect(throws: WeChatPayMessageError.missingField(name)) { try OrderQueryResponse(verifiedFields: fields) }
    }

    @Test(arguments: [("total_fee", "12.00"), ("time_end", "2024-01-01"), ("coupon_fee_0", "x"), ("coupon_count", "999")])
    func aPaidAnswerWithAMalformedValueIsRefused(name: String, value: String) {
        var fields = Self.paid.businessFields()
        fields[name] = value
        #expect(throws: WeChatPayMessageError.invalidField(name)) { try OrderQueryResponse(verifiedFields: fields) }
    }

    @Test func anUnknownTradeStateIsKeptAndNotFinal() throws {
        let response = try OrderQueryResponse(verifiedFields: ["trade_state": "FROZEN", "out_trade_no": "T1"])
        #expect(response.tradeState == .unknown("FROZEN"))
        #expect(!response.tradeState.isFinal)
    }

    @Test(arguments: [
        ("SUCCESS", true), ("REFUND", true), ("NOTPAY", false), ("CLOSED", true), ("REVOKED", true),
        ("USERPAYING", false), ("PAYERROR", true), ("ACCEPT", false),
    ])
    func everyDocumentedTradeStateRoundTripsWithItsFinality(raw: String, final: Bool) {
        let state = TradeState(rawValue: raw)
        #expect(state.rawValue == raw)
        if case .unknown = state { Issue.record("\(raw) decoded as unknown") }
        #expect(state.isFinal == final)
    }
}
