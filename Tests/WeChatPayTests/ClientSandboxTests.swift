// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

struct ClientSandboxTests {
    @Test func getSignKeySendsOnlyMchIDNonceAndAnMD5SignWithTheProductionKey() async throws {
        let fake = FakeWeChatPay { _ in
            FakeWeChatPay.reply(ResponseEnvelope.unsignedSuccess(["mch_id": "10000100", "sandbox_signkey": "sandboxkey1"]))
        }
        // The merchant signs production calls with HMAC-SHA256; getsignkey is MD5 regardless.
        let response = try await fake.client().send(GetSignKeyRequest())
        #expect(response.sandboxSignKey == APIKey("sandboxkey1"))
        let sent = try #require(fake.received.first)
        #expect(sent.request.path == "/sandboxnew/pay/getsignkey")
        #expect(sent.fields.names == ["mch_id", "nonce_str", "sign"])
        #expect(sent.fields["sign"]?.count == 32)
        try Signer(key: TestMerchant.key).verify(sent.fields, expected: .md5)
    }

    @Test func aSignedGetSignKeyAnswerMustCarryAValidSignature() async {
        let fake = FakeWeChatPay { _ in
            var fields = ResponseEnvelope.unsignedSuccess(["mch_id": "10000100", "sandbox_signkey": "sandboxkey1"])
            fields = resigned(fields, type: .md5)
            fields["sandbox_signkey"] = "attackerkey"
            return FakeWeChatPay.reply(fields)
        }
        let error = await #expect(throws: WeChatPayError.self) { try await fake.client().send(GetSignKeyRequest()) }
        #expect(error?.signatureError == .mismatch)
    }

    @Test func sandboxCallsUseThePrefixMD5AndTheSandboxKeyBothWays() async throws {
        let fake = FakeWeChatPay(requestKey: TestMerchant.sandboxKey) { received in
            FakeWeChatPay.reply(
                signedSuccess(["trade_state": "NOTPAY", "out_trade_no": "T1"], received, key: TestMerchant.sandboxKey))
        }
        let client = fake.client(environment: .sandbox(signKey: TestMerchant.sandboxKey))
        let response = try await client.send(OrderQueryRequest(outTradeNo: "T1"))
        #expect(response.tradeState == .notPay)
        let sent = try #require(fake.received.first)
        #expect(sent.request.path == "/sandboxnew/pay/orderquery")
        #expect(sent.sandbox)
        #expect(sent.fields["sign_type"] == "MD5")
        #expect(sent.signatureVerified)
    }

    @Test func aSandboxResponseSignedWithTheProductionKeyIsRefused() async {
        let fake = FakeWeChatPay(requestKey: TestMerchant.sandboxKey) { received in
            FakeWeChatPay.reply(signedSuccess(["trade_state": "NOTPAY", "out_trade_no": "T1"], received, key: TestMerchant.key))
        }
        let client = fake.client(environment: .sandbox(signKey: TestMerchant.sandboxKey))
        let error = await #expect(throws: WeChatPayError.self) { try await client.send(OrderQueryRequest(outTradeNo: "T1")) }
        #expect(error?.signatureError == .mismatch)
    }

    @Test func theSandboxRefundNeedsNoCertificateAndNoSecapiSegment() async throws {
        let fake = FakeWeChatPay(requestKey: TestMerchant.sandboxKey) { received in
            FakeWeChatPay.reply(
                signedSuccess(MessagesRefundTests.sampleResponse.businessFields(), received, key: TestMerchant.sandboxKey))
        }
        let client = fake.client(environment: .sandbox(signKey: TestMerchant.sandboxKey))
        _ = try await client.send(MessagesRefundTests.sampleRequest)
        let sent = try #require(fake.received.first)
        #expect(sent.request.path == "/sandboxnew/pay/refund")
        #expect(!sent.request.needsClientCertificate)
    }

    @Test func aFetchedSandboxKeySwitchesTheClientToTheSandbox() async throws {
        // One fake answering both: getsignkey with the production key, then sandbox calls with the sandbox key.
        let fake = FakeWeChatPay { received in
            if received.api == .getSignKey {
                return FakeWeChatPay.reply(
                    ResponseEnvelope.unsignedSuccess(["mch_id": "10000100", "sandbox_signkey": "013467007045764sandboxkey0000000"]))
            }
            let verified = (try? Signer(key: TestMerchant.sandboxKey).verify(received.fields, expected: .md5)) != nil
            guard verified else { return FakeWeChatPay.reply(ResponseEnvelope.protocolFailure(message: "沙箱验证签名失败")) }
            return FakeWeChatPay.reply(
                signedSuccess(["trade_state": "SUCCESS", "out_trade_no": "T1", "transaction_id": "4200", "total_fee": "101"],
                              received, key: TestMerchant.sandboxKey))
        }
        let production = fake.client()
        let key = try await production.send(GetSignKeyRequest()).sandboxSignKey
        let sandbox = production.with(environment: .sandbox(signKey: key))
        #expect(sandbox.environment.isSandbox)
        #expect(try await sandbox.send(OrderQueryRequest(outTradeNo: "T1")).totalFee == 101)
        #expect(fake.received.map(\.request.path) == ["/sandboxnew/pay/getsignkey", "/sandboxnew/pay/orderquery"])
    }
}
