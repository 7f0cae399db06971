// SPDX-License-Identifier: Apache-2.0
import Synchronization
import Testing
import WeChatPay

struct ClientPipelineTests {
    static let prepay: Fields = ["trade_type": "APP", "prepay_id": "wx201410272009395522657a690389285100"]

    // MARK: - What is sent

    @Test func aUnifiedOrderReturnsThePrepayIDAndKeepsEveryReceivedField() async throws {
        let fake = FakeWeChatPay { received in
            var business = Self.prepay
            business["future_field"] = "kept"
            return FakeWeChatPay.reply(signedSuccess(business, received))
        }
        let response = try await fake.client().send(sampleUnifiedOrder())
        #expect(response.prepayID == "wx201410272009395522657a690389285100")
        #expect(response.tradeType == .app)
        #expect(response.fields["future_field"] == "kept")
        #expect(response.fields["result_code"] == "SUCCESS")
    }

    @Test func theRequestSentIsSignedWithTheMerchantKeyAndDeclaresItsSignType() async throws {
        let fake = FakeWeChatPay { received in FakeWeChatPay.reply(signedSuccess(Self.prepay, received)) }
        _ = try await fake.client().send(sampleUnifiedOrder())
        let sent = try #require(fake.received.first)
        #expect(sent.api == .unifiedOrder)
        #expect(sent.request.path == "/pay/unifiedorder")
        #expect(!sent.request.needsClientCertificate)
        #expect(sent.signatureVerified)
        #expect(sent.fields["sign_type"] == "HMAC-SHA256")
        #expect(sent.fields["sign"]?.count == 64)
        #expect(sent.fields["appid"] == "wxd930ea5d5a258f4f")
        #expect(sent.fields["mch_id"] == "10000100")
        #expect(sent.fields["body"] == "腾讯充值中心-QQ会员充值")
        #expect(sent.fields["total_fee"] == "1200")
        // Independently of the fake: the signature verifies with the official key and HMAC-SHA256.
        try Signer(key: TestMerchant.key).verify(sent.fields, expected: .hmacSHA256)
        #expect(throws: SignatureError.self) { try Signer(key: APIKey("another-key")).verify(sent.fields, expected: .hmacSHA256) }
    }

    @Test func nonceStrComesFromTheInjectedSource() async throws {
        let fake = FakeWeChatPay { received in FakeWeChatPay.reply(signedSuccess(Self.prepay, received)) }
        let client = fake.client(nonces: CountingNonceSource(prefix: "Injected", start: 41))
        _ = try await client.send(sampleUnifiedOrder())
        _ = try await client.send(sampleUnifiedOrder())
        #expect(fake.received.map { $0.fields["nonce_str"] } == ["Injected0000000041", "Injected0000000042"])
    }

    @Test func aNonceSourceProducingAnInvalidNonceStopsTheRequestBeforeTheTransport() async {
        struct BadNonces: NonceSource { func nextNonce() -> String { "not a nonce!" } }
        let fake = FakeWeChatPay { received in FakeWeChatPay.reply(signedSuccess(Self.prepay, received)) }
        let error = await #expect(throws: WeChatPayError.self) {
            try await fake.client(nonces: BadNonces()).send(sampleUnifiedOrder())
        }
        #expect(error?.shortDescription == "invalid_nonce")
        #expect(error?.mayHaveTakenEffect == false)
        #expect(fake.received.isEmpty)
    }

    @Test func anInvalidRequestIsRefusedWithTheFieldNameAndNeverSent() async {
        let fake = FakeWeChatPay { received in FakeWeChatPay.reply(signedSuccess(Self.prepay, received)) }
        let error = await #expect(throws: WeChatPayError.self) {
            try await fake.client().send(sampleUnifiedOrder(totalFee: 0))
        }
        #expect(error?.kind == .invalidRequest)
        #expect(error?.messageError == .invalidField("total_fee"))
        #expect(error?.advice == .fixRequest)
        #expect(error?.mayHaveTakenEffect == false)
        #expect(fake.received.isEmpty)
    }

    @Test func emptyCredentialsAreAConfigurationErrorAndNothingIsSent() async {
        var merchant = TestMerchant.credentials
        merchant.key = APIKey("")
        let fake = FakeWeChatPay(merchant: merchant) { received in FakeWeChatPay.reply(signedSuccess(Self.prepay, received)) }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.shortDescription == "invalid_configuration")
        #expect(error?.advice == .fixConfiguration)
        #expect(fake.received.isEmpty)
    }

    @Test func aValueXMLCannotCarryIsRefusedBeforeSending() async {
        var order = sampleUnifiedOrder()
        order.attach = "bell\u{7}"
        let fake = FakeWeChatPay { received in FakeWeChatPay.reply(signedSuccess(Self.prepay, received)) }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(order) }
        #expect(error?.shortDescription == "unencodable_request")
        #expect(fake.received.isEmpty)
    }

    @Test func theRefundGoesToTheCertificateEndpoint() async throws {
        let fake = FakeWeChatPay { received in
            FakeWeChatPay.reply(signedSuccess(MessagesRefundTests.sampleResponse.businessFields(), received))
        }
        let response = try await fake.client().send(MessagesRefundTests.sampleRequest)
        #expect(response.refundID == "50000408942018111907145868882")
        let sent = try #require(fake.received.first)
        #expect(sent.request.path == "/secapi/pay/refund")
        #expect(sent.request.needsClientCertificate)
        #expect(sent.signatureVerified)
    }

    // MARK: - return_code, HTTP and transport

    @Test func returnCodeFailBecomesAProtocolFailureWithASanitizedShortMessage() async {
        let hostile = "签名错误\nFAKE LOG LINE \u{202E}\u{85}" + String(repeating: "A", count: 5000)
        let fake = FakeWeChatPay { _ in FakeWeChatPay.reply(ResponseEnvelope.protocolFailure(message: hostile)) }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.kind == .protocolFailure)
        #expect(error?.advice == .fixConfiguration)
        #expect(error?.mayHaveTakenEffect == false)
        let message = try? #require(error?.returnMessage)
        #expect(message?.hasPrefix("签名错误 FAKE LOG LINE") == true)
        #expect(message?.contains("\n") == false)
        #expect(message?.contains("\u{202E}") == false)
        #expect(message?.contains("\u{85}") == false)
        #expect((message?.count ?? .max) <= 129)
        #expect((error?.description.count ?? .max) < 300)
    }

    @Test func aSystemBusyReturnMessageIsRetryable() async {
        let fake = FakeWeChatPay { _ in FakeWeChatPay.reply(ResponseEnvelope.protocolFailure(message: "系统繁忙,请稍后再试")) }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.advice == .retrySameParameters)
        #expect(error?.mayHaveTakenEffect == true)
    }

    @Test func anHTTP500IsAThrownRetryableErrorThatMayHaveTakenEffect() async {
        let fake = FakeWeChatPay { received in
            // Even a well-signed SUCCESS body does not count when the status says otherwise.
            FakeWeChatPay.reply(signedSuccess(Self.prepay, received), status: 500)
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.kind == .httpStatus)
        #expect(error?.httpStatus == 500)
        #expect(error?.advice == .retrySameParameters)
        #expect(error?.mayHaveTakenEffect == true)
    }

    @Test func anHTTP400IsAConfigurationErrorWithoutEffect() async {
        let fake = FakeWeChatPay { _ in TransportResponse(status: 400, body: Array("The SSL certificate error".utf8)) }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(MessagesRefundTests.sampleRequest) }
        #expect(error?.httpStatus == 400)
        #expect(error?.advice == .fixConfiguration)
        #expect(error?.mayHaveTakenEffect == false)
        #expect(error?.description.contains("SSL") == false)
    }

    @Test(arguments: [true, false])
    func aTransportTimeoutIsPropagatedWithWhetherItMayHaveBeenDelivered(delivered: Bool) async {
        let fake = FakeWeChatPay { _ throws(TransportError) in
            throw TransportError(kind: .timeout, mayHaveBeenDelivered: delivered)
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.kind == .transport)
        #expect(error?.transportError == TransportError(kind: .timeout, mayHaveBeenDelivered: delivered))
        #expect(error?.mayHaveTakenEffect == delivered)
        #expect(error?.advice == .retrySameParameters)
        #expect(error?.shortDescription == "transport_timeout")
    }

    @Test func aNonUTF8BodyIsAMalformedResponse() async {
        let fake = FakeWeChatPay { _ in
            TransportResponse(status: 200, body: Array("<xml><return_code>SUCCESS</return_code><x>".utf8) + [0xC3, 0x28] + Array("</x></xml>".utf8))
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.kind == .malformedResponse)
        #expect(error?.xmlError == .invalidUTF8)
        #expect(error?.mayHaveTakenEffect == true)
        #expect(error?.advice == .retrySameParameters)
    }

    @Test func aTruncatedBodyIsAMalformedResponse() async throws {
        let signed = FakeWeChatPay { received in FakeWeChatPay.reply(signedSuccess(Self.prepay, received)) }
        let body = try #require(try await Self.firstReplyBody(of: signed))
        for cut in [1, body.count / 2, body.count - 1] {
            let fake = FakeWeChatPay { _ in TransportResponse(status: 200, body: Array(body.prefix(cut))) }
            let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
            #expect(error?.kind == .malformedResponse)
        }
        let empty = FakeWeChatPay { _ in TransportResponse(status: 200, body: []) }
        let error = await #expect(throws: WeChatPayError.self) { try await empty.client().send(sampleUnifiedOrder()) }
        #expect(error?.xmlError == .empty)
    }

    // MARK: - The response signature

    @Test func aSuccessWithABadSignatureIsRefused() async {
        let fake = FakeWeChatPay { received in
            var fields = signedSuccess(Self.prepay, received)
            fields["prepay_id"] = "wx_attacker_prepay"
            return FakeWeChatPay.reply(fields)
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.kind == .badSignature)
        #expect(error?.signatureError == .mismatch)
        #expect(error?.mayHaveTakenEffect == true)
    }

    @Test func aSuccessSignedWithAnotherKeyIsRefused() async {
        let fake = FakeWeChatPay { received in
            FakeWeChatPay.reply(signedSuccess(Self.prepay, received, key: APIKey("ffffffffffffffffffffffffffffffff")))
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.signatureError == .mismatch)
    }

    @Test func aSuccessWithoutSignIsRefusedNeverAccepted() async {
        let fake = FakeWeChatPay { received in
            var fields = signedSuccess(Self.prepay, received)
            fields["sign"] = nil
            return FakeWeChatPay.reply(fields)
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.signatureError == .missingSignature)
        #expect(error?.shortDescription == "missing_sign")
    }

    @Test func aBusinessFailureWithoutSignIsRefusedBeforeItsErrCodeIsBelieved() async {
        let fake = FakeWeChatPay { received in
            var fields = signedFailure(.orderPaid, received)
            fields["sign"] = nil
            return FakeWeChatPay.reply(fields)
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(CloseOrderRequest(outTradeNo: "T1")) }
        #expect(error?.signatureError == .missingSignature)
        #expect(error?.errorCode == nil)
    }

    @Test func aResponseThatDeclaresAWeakerSignTypeIsRefused() async {
        // A valid MD5 signature over a document that declares sign_type=MD5, answering an
        // HMAC-SHA256 request: verifying it as MD5 would be a downgrade.
        let fake = FakeWeChatPay { received in
            var fields = signedSuccess(Self.prepay, received)
            fields["sign_type"] = "MD5"
            return FakeWeChatPay.reply(resigned(fields, type: .md5))
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.signatureError == .signTypeMismatch(expected: .hmacSHA256))
    }

    @Test func aResponseSignedWithMD5WithoutDeclaringItIsRefused() async {
        let fake = FakeWeChatPay { received in FakeWeChatPay.reply(signedSuccess(Self.prepay, received, signType: .md5)) }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.signatureError == .mismatch)
    }

    @Test func anMD5MerchantAcceptsMD5Responses() async throws {
        var merchant = TestMerchant.credentials
        merchant.signType = .md5
        let fake = FakeWeChatPay(merchant: merchant) { received in FakeWeChatPay.reply(signedSuccess(Self.prepay, received)) }
        _ = try await fake.client().send(sampleUnifiedOrder())
        #expect(fake.received.first?.fields["sign_type"] == "MD5")
        #expect(fake.received.first?.fields["sign"]?.count == 32)
        #expect(fake.received.first?.signatureVerified == true)
    }

    @Test(arguments: ["appid", "mch_id"])
    func aSignedResponseNamingAnotherMerchantIsRefused(field: String) async {
        let fake = FakeWeChatPay { received in
            var fields = signedSuccess(Self.prepay, received)
            fields[field] = "someone-else"
            return FakeWeChatPay.reply(resigned(fields, type: .hmacSHA256))
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.kind == .merchantMismatch)
        #expect(error?.advice == .fixConfiguration)
    }

    @Test func descriptionsNeverContainTheKeyOrASignature() async {
        let fake = FakeWeChatPay { received in
            var fields = signedSuccess(Self.prepay, received)
            fields["prepay_id"] = "tampered"
            return FakeWeChatPay.reply(fields)
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        let sentSign = fake.received.first?.fields["sign"] ?? "?"
        for text in [error?.description ?? "", error?.debugDescription ?? "", String(describing: TestMerchant.credentials)] {
            #expect(!text.contains("192006250b4c09247ec02edce69f6a2d"))
            #expect(!text.contains(sentSign))
            #expect(!text.contains(String(sentSign.prefix(16))))
        }
    }

    // MARK: - result_code and err_code

    static let errorCodeTable: [(WeChatPayErrorCode, WeChatPayAPI, WeChatPayAdvice)] = [
        (.systemError, .unifiedOrder, .retrySameParameters),
        (.systemError, .orderQuery, .retrySameParameters),
        (.systemError, .refund, .retrySameParameters),
        (.bizErrNeedRetry, .refund, .retrySameParameters),
        (.orderPaid, .unifiedOrder, .treatAsPaid),
        (.orderClosed, .unifiedOrder, .useNewOutTradeNo),
        (.outTradeNoUsed, .unifiedOrder, .useNewOutTradeNo),
        (.invalidRequest, .unifiedOrder, .useNewOutTradeNo),
        (.invalidRequest, .refundQuery, .fixRequest),
        (.notEnough, .unifiedOrder, .payerAction),
        (.notEnough, .refund, .topUpBalance),
        (.noAuth, .unifiedOrder, .fixConfiguration),
        (.appIDNotExist, .unifiedOrder, .fixConfiguration),
        (.mchIDNotExist, .refund, .fixConfiguration),
        (.appIDMchIDNotMatch, .unifiedOrder, .fixConfiguration),
        (.lackParams, .unifiedOrder, .fixRequest),
        (.signError, .orderQuery, .fixConfiguration),
        (.xmlFormatError, .closeOrder, .fixConfiguration),
        (.requirePostMethod, .refund, .fixConfiguration),
        (.postDataEmpty, .unifiedOrder, .fixConfiguration),
        (.notUTF8, .unifiedOrder, .fixConfiguration),
        (.orderNotExist, .orderQuery, .doesNotExist),
        (.orderNotExist, .refund, .doesNotExist),
        (.tradeStateError, .closeOrder, .query),
        (.tradeOverdue, .refund, .refundOffline),
        (.error, .refund, .manualReview),
        (.userAccountAbnormal, .refund, .refundOffline),
        (.invalidReqTooMuch, .refund, .retryLater),
        (.invalidTransactionID, .refund, .fixRequest),
        (.paramError, .refundQuery, .fixRequest),
        (.frequencyLimited, .refund, .retryLater),
        (.refundNotExist, .refundQuery, .doesNotExist),
        (WeChatPayErrorCode(rawValue: "SOMETHING_NEW"), .unifiedOrder, .query),
        (WeChatPayErrorCode(rawValue: ""), .refund, .query),
    ]

    @Test(arguments: errorCodeTable)
    func eachErrCodeBecomesABusinessErrorWithItsAdvice(code: WeChatPayErrorCode, api: WeChatPayAPI, advice: WeChatPayAdvice) async {
        let fake = FakeWeChatPay { received in FakeWeChatPay.reply(signedFailure(code, received)) }
        let client = fake.client()
        let error: WeChatPayError?
        switch api {
        case .unifiedOrder: error = await #expect(throws: WeChatPayError.self) { try await client.send(sampleUnifiedOrder()) }
        case .orderQuery: error = await #expect(throws: WeChatPayError.self) { try await client.send(OrderQueryRequest(outTradeNo: "T1")) }
        case .closeOrder: error = await #expect(throws: WeChatPayError.self) { try await client.send(CloseOrderRequest(outTradeNo: "T1")) }
        case .refund: error = await #expect(throws: WeChatPayError.self) { try await client.send(MessagesRefundTests.sampleRequest) }
        case .refundQuery:
            error = await #expect(throws: WeChatPayError.self) { try await client.send(RefundQueryRequest(.outRefundNo("R1"))) }
        case .downloadBill, .getSignKey: error = nil
        }
        #expect(error?.kind == .business)
        #expect(error?.errorCode == code)
        #expect(error?.api == api)
        #expect(error?.advice == advice)
        #expect(error?.errorCodeDescription == (code.rawValue.isEmpty ? "描述 " : "描述 \(code.rawValue)"))
        #expect(error?.mayHaveTakenEffect == (code == .systemError || !code.isDocumented))
    }

    @Test func aHostileErrCodeNeverReachesTheDescription() async {
        let hostile = WeChatPayErrorCode(rawValue: "X\nY" + String(repeating: "Z", count: 400))
        let fake = FakeWeChatPay { received in FakeWeChatPay.reply(signedFailure(hostile, received)) }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.advice == .query)
        #expect(error?.description.contains("ZZZZ") == false)
        #expect(error?.description.contains("\n") == false)
    }

    @Test func aMissingOrUnknownResultCodeIsAnInvalidResponse() async {
        for resultCode in [nil, "MAYBE"] as [String?] {
            let fake = FakeWeChatPay { received in
                var fields = signedSuccess(Self.prepay, received)
                fields["result_code"] = resultCode
                return FakeWeChatPay.reply(resigned(fields, type: .hmacSHA256))
            }
            let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
            #expect(error?.kind == .invalidResponse)
            #expect(error?.messageError?.fieldName == "result_code")
        }
    }

    @Test func aSignedSuccessMissingARequiredFieldIsAnInvalidResponse() async {
        let fake = FakeWeChatPay { received in FakeWeChatPay.reply(signedSuccess(["trade_type": "APP"], received)) }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(sampleUnifiedOrder()) }
        #expect(error?.kind == .invalidResponse)
        #expect(error?.messageError == .missingField("prepay_id"))
        #expect(error?.advice == .retrySameParameters)
    }

    @Test func aPaidOrderQueryWithoutAnAmountIsRefusedRatherThanSettled() async {
        let fake = FakeWeChatPay { received in
            FakeWeChatPay.reply(signedSuccess(["trade_state": "SUCCESS", "out_trade_no": "T1", "transaction_id": "4200"], received))
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(OrderQueryRequest(outTradeNo: "T1")) }
        #expect(error?.messageError == .missingField("total_fee"))
    }

    @Test func closeOrderReportsOrderPaidAndOrderClosedAsOutcomes() async throws {
        for (code, outcome) in [(WeChatPayErrorCode.orderPaid, CloseOrderResponse.Outcome.alreadyPaid), (.orderClosed, .alreadyClosed)] {
            let fake = FakeWeChatPay { received in FakeWeChatPay.reply(signedFailure(code, received)) }
            let response = try await fake.client().send(CloseOrderRequest(outTradeNo: "T1"))
            #expect(response.outcome == outcome)
            #expect(response.fields["err_code"] == code.rawValue)
        }
        let closed = FakeWeChatPay { received in FakeWeChatPay.reply(signedSuccess(Fields(), received)) }
        #expect(try await closed.client().send(CloseOrderRequest(outTradeNo: "T1")).outcome == .closed)
    }

    // MARK: - downloadbill

    static let billText = Array("交易时间,公众账号ID,商户号\n`2024-01-01 10:00:00,`wx1,`10000100\n".utf8)

    @Test func aPlainBillIsReturnedAsIsWithoutAnySignature() async throws {
        let fake = FakeWeChatPay { _ in TransportResponse(status: 200, body: Self.billText) }
        let bill = try await fake.client().send(DownloadBillRequest(billDate: "20240101"))
        #expect(bill.body == Self.billText)
        #expect(!bill.isGzip)
        #expect(fake.received.first?.request.path == "/pay/downloadbill")
        #expect(fake.received.first?.fields["bill_type"] == "ALL")
        #expect(fake.received.first?.signatureVerified == true)
    }

    @Test func aGzipBillIsFlaggedAsGzip() async throws {
        let gzip: [UInt8] = [0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03]
        let fake = FakeWeChatPay { _ in TransportResponse(status: 200, body: gzip) }
        let bill = try await fake.client().send(DownloadBillRequest(billDate: "20240101", gzip: true))
        #expect(bill.isGzip)
        #expect(bill.body == gzip)
        #expect(fake.received.first?.fields["tar_type"] == "GZIP")
    }

    @Test(arguments: [
        ("No Bill Exist", WeChatPayAdvice.doesNotExist), ("NO Bill Exist", .doesNotExist), ("Bill Creating", .retryLater),
        ("invalid bill_type", .fixConfiguration),
    ])
    func aBillFailureIsDecodedFromItsXML(message: String, advice: WeChatPayAdvice) async {
        let fake = FakeWeChatPay { _ in
            var fields = ResponseEnvelope.protocolFailure(message: message)
            fields["error_code"] = "20002"
            var body = Array("\n  ".utf8)
            body += try! FlatXML.encode(fields)
            return TransportResponse(status: 200, body: body)
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(DownloadBillRequest(billDate: "20240101")) }
        #expect(error?.kind == .protocolFailure)
        #expect(error?.returnMessage == message)
        #expect(error?.advice == advice)
    }

    @Test func anEmptyBillBodyIsAMalformedResponse() async {
        let fake = FakeWeChatPay { _ in TransportResponse(status: 200, body: []) }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(DownloadBillRequest(billDate: "20240101")) }
        #expect(error?.xmlError == .empty)
    }

    // MARK: - Helpers

    /// The body the fake sends for one unifiedorder.
    static func firstReplyBody(of fake: FakeWeChatPay) async throws -> [UInt8]? {
        let box = Mutex<[UInt8]?>(nil)
        let recorder = InMemoryTransport { request throws(TransportError) in
            let response = try await fake.transport.send(request)
            box.withLock { $0 = response.body }
            return response
        }
        let client = WeChatPayClient(merchant: fake.merchant, transport: recorder, nonces: CountingNonceSource())
        _ = try await client.send(sampleUnifiedOrder())
        return box.withLock { $0 }
    }
}
