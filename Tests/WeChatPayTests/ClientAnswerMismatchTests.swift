// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

/// A correctly signed answer about another order than the one asked about (a proxy or a
/// connection pool mixing up answers; the battery's T3 injects it) is refused by the pipeline,
/// never handed to the caller: believing another order's SUCCESS would be a ghost payment.
struct ClientAnswerMismatchTests {
    static let otherOrderPaid: Fields = [
        "trade_state": "SUCCESS", "out_trade_no": "OTHER-0001", "transaction_id": "4200000000202611300000000042",
        "total_fee": "990", "fee_type": "CNY", "cash_fee": "990", "time_end": "20261130120000", "trade_type": "APP",
        "bank_type": "OTHERS", "openid": "oOther",
    ]

    @Test func anOrderqueryAnswerAboutAnotherOrderIsRefusedAsRetryable() async {
        let fake = FakeWeChatPay { received in FakeWeChatPay.reply(signedSuccess(Self.otherOrderPaid, received)) }
        do {
            let response = try await fake.client().send(OrderQueryRequest(outTradeNo: "ASKED-0001"))
            Issue.record("an answer about \(response.outTradeNo) was accepted for ASKED-0001")
        } catch {
            #expect(error.kind == .answerMismatch)
            #expect(error.shortDescription == "answer_mismatch")
            #expect(error.advice == .retrySameParameters && error.isRetryable)
            #expect(error.mayHaveTakenEffect)
            #expect(error.description.contains("out_trade_no"))
        }
    }

    @Test func anOrderqueryByTransactionIDMustAnswerThatTransaction() async throws {
        let fake = FakeWeChatPay { received in FakeWeChatPay.reply(signedSuccess(Self.otherOrderPaid, received)) }
        let asked = OrderQueryRequest(order: .transactionID("4200000000202611300000000042"))
        #expect(try await fake.client().send(asked).outTradeNo == "OTHER-0001")
        await #expect(throws: WeChatPayError.answerMismatch(field: "transaction_id", api: .orderQuery)) {
            _ = try await fake.client().send(OrderQueryRequest(order: .transactionID("4200000000202611300000000043")))
        }
    }

    @Test func theAnswerAboutTheOrderAskedIsAccepted() async throws {
        let fake = FakeWeChatPay { received in
            var business = Self.otherOrderPaid
            business["out_trade_no"] = received.fields["out_trade_no"] ?? ""
            return FakeWeChatPay.reply(signedSuccess(business, received))
        }
        #expect(try await fake.client().send(OrderQueryRequest(outTradeNo: "ASKED-0001")).tradeState == .success)
    }

    @Test func aRefundAnswerAboutAnotherRefundOrOrderIsRefused() {
        let request = MessagesRefundTests.sampleRequest
        var response = MessagesRefundTests.sampleResponse
        #expect(request.mismatchedField(in: response) == nil)
        response.outRefundNo = "R20240101-002"
        #expect(request.mismatchedField(in: response) == "out_refund_no")
        response = MessagesRefundTests.sampleResponse
        response.transactionID = "4200000123202401019999999999"
        #expect(request.mismatchedField(in: response) == "transaction_id")
    }
}
