// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

struct MessagesCloseOrderTests {
    @Test func aRequestSendsTheOrderNumberAndRoundTrips() throws {
        let request = CloseOrderRequest(outTradeNo: "T20240101001")
        #expect(request.businessFields() == ["out_trade_no": "T20240101001"])
        #expect(try CloseOrderRequest(fields: request.businessFields()) == request)
    }

    @Test func aRequestWithoutTheOrderNumberIsLackParams() {
        #expect(throws: WeChatPayMessageError.missingField("out_trade_no")) { try CloseOrderRequest(fields: Fields()) }
    }

    @Test(arguments: ["T 1", "订单", String(repeating: "9", count: 33)])
    func aMalformedOrderNumberIsParamError(value: String) {
        #expect(throws: WeChatPayMessageError.invalidField("out_trade_no")) { try CloseOrderRequest(fields: ["out_trade_no": value]) }
    }

    @Test func aTransactionIDDoesNotReplaceTheOrderNumber() {
        #expect(throws: WeChatPayMessageError.missingField("out_trade_no")) {
            try CloseOrderRequest(fields: ["transaction_id": "4200"])
        }
    }

    @Test func orderPaidAndOrderClosedAreOutcomesAndOtherCodesAreNot() {
        let fields: Fields = ["result_code": "FAIL", "err_code": "ORDERPAID"]
        #expect(CloseOrderResponse.acceptingBusinessFailure(.orderPaid, verifiedFields: fields)?.outcome == .alreadyPaid)
        #expect(CloseOrderResponse.acceptingBusinessFailure(.orderClosed, verifiedFields: fields)?.outcome == .alreadyClosed)
        #expect(CloseOrderResponse.acceptingBusinessFailure(.systemError, verifiedFields: fields) == nil)
        #expect(CloseOrderResponse.acceptingBusinessFailure(WeChatPayErrorCode(rawValue: "NEW"), verifiedFields: fields) == nil)
    }

    @Test func eachOutcomeNamesTheErrCodeASimulatorSends() {
        #expect(CloseOrderResponse.Outcome.allCases.map(\.errorCode) == [nil, .orderPaid, .orderClosed])
    }

    @Test func aSuccessfulCloseKeepsItsResultMessage() throws {
        let response = try CloseOrderResponse(verifiedFields: ["result_code": "SUCCESS", "result_msg": "OK"])
        #expect(response.outcome == .closed)
        #expect(response.resultMessage == "OK")
    }
}
