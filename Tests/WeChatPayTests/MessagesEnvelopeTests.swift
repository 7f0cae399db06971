// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

struct MessagesEnvelopeTests {
    let signer = Signer(key: TestMerchant.key)

    @Test func signedFieldsPutTheEnvelopeFirstDropCollisionsAndSignEverything() throws {
        let envelope = RequestEnvelope(appID: "wx1", mchID: "10000100", nonceStr: "abc123", declaredSignType: .hmacSHA256)
        let fields = envelope.signedFields(business: ["appid": "forged", "body": "b", "attach": "", "sign": "x"], signer: signer)
        #expect(fields.names == ["appid", "mch_id", "nonce_str", "sign_type", "body", "sign"])
        #expect(fields["appid"] == "wx1")
        try signer.verify(fields, expected: .hmacSHA256)
    }

    @Test func aReceivedEnvelopeReadsBackWithItsSignType() throws {
        let sent = RequestEnvelope(appID: "wx1", mchID: "10000100", nonceStr: "abc123", declaredSignType: .hmacSHA256)
        let fields = sent.signedFields(business: ["body": "b"], signer: signer)
        let read = try RequestEnvelope(fields: fields, api: .unifiedOrder)
        #expect(read == sent)
        #expect(read.signType == .hmacSHA256)
    }

    @Test func anAbsentSignTypeMeansMD5() throws {
        let fields: Fields = ["appid": "wx1", "mch_id": "1", "nonce_str": "n", "sign": "S"]
        let envelope = try RequestEnvelope(fields: fields, api: .orderQuery)
        #expect(envelope.declaredSignType == nil)
        #expect(envelope.signType == .md5)
    }

    @Test(arguments: ["appid", "mch_id", "nonce_str", "sign"])
    func aMissingEnvelopeFieldIsLackParams(name: String) {
        var fields: Fields = ["appid": "wx1", "mch_id": "1", "nonce_str": "n", "sign": "S"]
        fields[name] = nil
        #expect(throws: WeChatPayMessageError.missingField(name)) { try RequestEnvelope(fields: fields, api: .unifiedOrder) }
    }

    @Test func getSignKeyNeedsNoAppIDAndAcceptsOnlyMD5() throws {
        let fields: Fields = ["mch_id": "1", "nonce_str": "n", "sign": "S"]
        #expect(try RequestEnvelope(fields: fields, api: .getSignKey).appID == nil)
        var hmac = fields
        hmac["sign_type"] = "HMAC-SHA256"
        #expect(throws: WeChatPayMessageError.invalidField("sign_type")) { try RequestEnvelope(fields: hmac, api: .getSignKey) }
    }

    @Test(arguments: [("sign_type", "SHA1"), ("nonce_str", "has space"), ("nonce_str", String(repeating: "n", count: 33))])
    func anInvalidEnvelopeValueIsParamError(name: String, value: String) {
        var fields: Fields = ["appid": "wx1", "mch_id": "1", "nonce_str": "n", "sign": "S"]
        fields[name] = value
        #expect(throws: WeChatPayMessageError.invalidField(name)) { try RequestEnvelope(fields: fields, api: .unifiedOrder) }
    }

    @Test func aSuccessReplyIsSignedWithTheRequestedAlgorithmAndCarriesBothLevels() throws {
        let reply = ResponseEnvelope.success(
            ["prepay_id": "wx1", "result_code": "FAIL"], appID: "wx1", mchID: "1", nonceStr: "n", signer: signer, signType: .md5)
        #expect(reply["return_code"] == "SUCCESS")
        #expect(reply["result_code"] == "SUCCESS")
        #expect(reply["sign_type"] == nil)
        try signer.verify(reply, expected: .md5)
    }

    @Test func aBusinessFailureCarriesTheErrCodeAndIsSigned() throws {
        let reply = ResponseEnvelope.businessFailure(
            .orderPaid, description: "订单已支付", appID: "wx1", mchID: "1", nonceStr: "n", signer: signer, signType: .hmacSHA256)
        #expect(reply["result_code"] == "FAIL")
        #expect(reply["err_code"] == "ORDERPAID")
        #expect(reply["err_code_des"] == "订单已支付")
        try signer.verify(reply, expected: .hmacSHA256)
    }

    @Test func aProtocolFailureIsUnsigned() {
        let reply = ResponseEnvelope.protocolFailure(message: "签名错误")
        #expect(reply == ["return_code": "FAIL", "return_msg": "签名错误"])
    }

    @Test func routingKnowsEveryPathInBothEnvironments() {
        for api in WeChatPayAPI.allCases {
            #expect(WeChatPayAPI.route(path: api.path(sandbox: false))?.api == api)
            #expect(WeChatPayAPI.route(path: api.path(sandbox: true))?.api == api)
            #expect(WeChatPayAPI.route(path: api.path(sandbox: true))?.sandbox == true)
        }
        #expect(WeChatPayAPI.route(path: "/pay/unifiedorder")?.sandbox == false)
        #expect(WeChatPayAPI.route(path: "/secapi/pay/refund")?.api == .refund)
        #expect(WeChatPayAPI.route(path: "/sandboxnew/pay/refund")?.api == .refund)
        #expect(WeChatPayAPI.route(path: "/pay/micropay") == nil)
        #expect(WeChatPayAPI.route(path: "/pay/refund") == nil)
    }
}
