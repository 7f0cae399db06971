// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

struct MessagesErrorCodeTests {
    /// The advice for each documented code when the endpoint is not known, from the tables of §2.
    static let defaults: [(String, WeChatPayAdvice)] = [
        ("SYSTEMERROR", .retrySameParameters), ("BIZERR_NEED_RETRY", .retrySameParameters),
        ("ORDERPAID", .treatAsPaid), ("ORDERCLOSED", .useNewOutTradeNo), ("OUT_TRADE_NO_USED", .useNewOutTradeNo),
        ("INVALID_REQUEST", .fixRequest), ("NOTENOUGH", .payerAction), ("NOAUTH", .fixConfiguration),
        ("APPID_NOT_EXIST", .fixConfiguration), ("MCHID_NOT_EXIST", .fixConfiguration),
        ("APPID_MCHID_NOT_MATCH", .fixConfiguration), ("LACK_PARAMS", .fixRequest), ("SIGNERROR", .fixConfiguration),
        ("XML_FORMAT_ERROR", .fixConfiguration), ("REQUIRE_POST_METHOD", .fixConfiguration),
        ("POST_DATA_EMPTY", .fixConfiguration), ("NOT_UTF8", .fixConfiguration), ("ORDERNOTEXIST", .doesNotExist),
        ("TRADE_STATE_ERROR", .query), ("TRADE_OVERDUE", .refundOffline), ("ERROR", .manualReview),
        ("USER_ACCOUNT_ABNORMAL", .refundOffline), ("INVALID_REQ_TOO_MUCH", .retryLater),
        ("INVALID_TRANSACTIONID", .fixRequest), ("PARAM_ERROR", .fixRequest), ("FREQUENCY_LIMITED", .retryLater),
        ("REFUNDNOTEXIST", .doesNotExist),
    ]

    @Test(arguments: defaults)
    func everyDocumentedCodeHasItsAdvice(raw: String, advice: WeChatPayAdvice) {
        let code = WeChatPayErrorCode(rawValue: raw)
        #expect(code.isDocumented)
        #expect(code.advice == advice)
        #expect(code.description == raw)
    }

    @Test func theDocumentedListIsExactlyTheTable() {
        #expect(Set(WeChatPayErrorCode.documented.map(\.rawValue)) == Set(Self.defaults.map(\.0)))
        #expect(WeChatPayErrorCode.documented.count == Self.defaults.count)
    }

    @Test func codesThatMeanDifferentThingsPerEndpointFollowTheEndpoint() {
        #expect(WeChatPayErrorCode.orderClosed.advice(for: .closeOrder) == .treatAsClosed)
        #expect(WeChatPayErrorCode.orderClosed.advice(for: .unifiedOrder) == .useNewOutTradeNo)
        #expect(WeChatPayErrorCode.notEnough.advice(for: .refund) == .topUpBalance)
        #expect(WeChatPayErrorCode.notEnough.advice(for: .unifiedOrder) == .payerAction)
        #expect(WeChatPayErrorCode.invalidRequest.advice(for: .unifiedOrder) == .useNewOutTradeNo)
        #expect(WeChatPayErrorCode.invalidRequest.advice(for: .refund) == .fixRequest)
        #expect(WeChatPayErrorCode.orderPaid.advice(for: .closeOrder) == .treatAsPaid)
    }

    @Test func anUnknownCodeAdvisesAQueryAndMayHaveTakenEffect() {
        let code = WeChatPayErrorCode(rawValue: "BRAND_NEW_CODE")
        #expect(!code.isDocumented)
        #expect(code.advice == .query)
        #expect(code.mayHaveTakenEffect)
        #expect(code.description == "BRAND_NEW_CODE")
    }

    @Test func onlySystemErrorAmongDocumentedCodesMayHaveTakenEffect() {
        let effective = WeChatPayErrorCode.documented.filter(\.mayHaveTakenEffect)
        #expect(effective == [.systemError])
    }

    @Test func aCodeThatDoesNotLookLikeOneIsNotPrinted() {
        #expect(WeChatPayErrorCode(rawValue: "<script>").description == "<unrecognized err_code>")
        #expect(WeChatPayErrorCode(rawValue: String(repeating: "A", count: 41)).description == "<unrecognized err_code>")
        #expect(WeChatPayErrorCode(rawValue: "").description == "<unrecognized err_code>")
    }

    @Test func onlyRetryAdviceIsRetryable() {
        #expect(WeChatPayAdvice.allCases.filter(\.isRetryable) == [.retrySameParameters, .retryLater])
    }
}
