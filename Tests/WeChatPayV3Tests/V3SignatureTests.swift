// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import WeChatPayV3

struct V3SignatureTests {
    static let mchID = "1900000109"

    @Test("A request's signature is byte for byte what openssl dgst -sha256 -sign makes of METHOD, URL, timestamp, nonce and body")
    func requestSignatureMatchesOpenSSL() async throws {
        let vectors = try V3Vectors()
        defer { vectors.remove() }
        let key = try RSAPrivateKey(pem: try await vectors.opensslKey("merchant.pem"))
        let signer = MerchantSigner(mchID: Self.mchID, serialNumber: "5157F09EFDC096DE15EBE81A47057A72", key: key)
        let request = try PrepayRequest(appID: "wxd678efh567hg6787", mchID: Self.mchID, description: "课程",
                                           outTradeNo: "order|0001*", notifyURL: "https://example.com/wechat/v3/notify",
                                           total: 990).request()
        let message = MerchantSigner.message(method: request.method, url: request.url, timestamp: 1_554_208_460,
                                             nonce: "593BEC0C930BF1AFEB40B4A08C8FB242", body: request.body)
        #expect(message == Array("POST\n/v3/pay/transactions/app\n1554208460\n593BEC0C930BF1AFEB40B4A08C8FB242\n".utf8) + request.body + [0x0A])
        try vectors.write("message", message)
        try await vectors.openssl(["dgst", "-sha256", "-sign", vectors.path("merchant.pem"), "-out", vectors.path("signature"),
                                   vectors.path("message")])
        let expected = Base64.encode(try vectors.read("signature"), .standardPadded)
        let header = signer.authorization(for: request, timestamp: 1_554_208_460, nonce: "593BEC0C930BF1AFEB40B4A08C8FB242")
        let parsed = try #require(V3Authorization(headerValue: header))
        #expect(parsed.signature == expected)
        #expect(parsed.mchID == Self.mchID && parsed.timestamp == "1554208460" && parsed.serialNumber == "5157F09EFDC096DE15EBE81A47057A72")
        // A GET signs an empty body and keeps the query in the URL.
        let query = TransactionRequests.query(outTradeNo: "order|0001*", mchID: Self.mchID)
        #expect(query.url == "/v3/pay/transactions/out-trade-no/order%7C0001%2A?mchid=1900000109")
        #expect(MerchantSigner.message(method: "GET", url: query.url, timestamp: 1, nonce: "n", body: query.body)
                == Array("GET\n/v3/pay/transactions/out-trade-no/order%7C0001%2A?mchid=1900000109\n1\nn\n\n".utf8))
    }

    @Test("An Authorization header of another scheme, with a repeated, unknown or unquoted field is refused")
    func authorizationParsingIsStrict() {
        let good = #"WECHATPAY2-SHA256-RSA2048 serial_no="AB",mchid="1",nonce_str="n",timestamp="1",signature="s""#
        #expect(V3Authorization(headerValue: good)?.serialNumber == "AB")
        for bad in [
            #"WECHATPAY2-SHA256-RSA4096 mchid="1",nonce_str="n",signature="s",timestamp="1",serial_no="AB""#,
            #"WECHATPAY2-SHA256-RSA2048 mchid="1",mchid="2",nonce_str="n",signature="s",timestamp="1",serial_no="AB""#,
            #"WECHATPAY2-SHA256-RSA2048 mchid="1",nonce_str="n",signature="s",timestamp="1",serial_no="AB",extra="x""#,
            #"WECHATPAY2-SHA256-RSA2048 mchid=1,nonce_str="n",signature="s",timestamp="1",serial_no="AB""#,
            #"WECHATPAY2-SHA256-RSA2048 nonce_str="n",signature="s",timestamp="1",serial_no="AB""#,
        ] {
            #expect(V3Authorization(headerValue: bad) == nil, "\(bad)")
        }
    }

    @Test("An answer openssl signed verifies under the key its serial names; a changed byte, a stale timestamp, a probe and an unknown serial are each refused")
    func responseVerification() async throws {
        let vectors = try V3Vectors()
        defer { vectors.remove() }
        let wechatKey = try RSAPrivateKey(pem: try await vectors.opensslKey("wechatpay.pem"))
        let publicKey = try WeChatPayPublicKey(id: "PUB_KEY_ID_0114232004052024", key: wechatKey.publicKey)
        let verifier = V3Verifier(publicKey: publicKey)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let body = Array(#"{"prepay_id":"wx201410272009395522657a690389285100"}"#.utf8)
        let message = V3SignedMessage.message(timestamp: "1700000100", nonce: "nonce-1", body: body)
        try vectors.write("message", message)
        try await vectors.openssl(["dgst", "-sha256", "-sign", vectors.path("wechatpay.pem"), "-out", vectors.path("signature"),
                                   vectors.path("message")])
        let headers = ["wechatpay-timestamp": "1700000100", "Wechatpay-Nonce": "nonce-1",
                       "Wechatpay-Signature": Base64.encode(try vectors.read("signature"), .standardPadded),
                       "Wechatpay-Serial": publicKey.id, "Wechatpay-Signature-Type": "WECHATPAY2-SHA256-RSA2048"]
        try verifier.verify(headers: headers, body: body, now: now)
        #expect(try PrepayResponse(body: body).prepayID == "wx201410272009395522657a690389285100")

        func refusal(_ headers: [String: String], _ body: [UInt8], at time: Date = now) -> WeChatPayV3Error.Code? {
            do { try verifier.verify(headers: headers, body: body, now: time); return nil } catch { return error.code }
        }
        var changed = body
        changed[5] ^= 1
        #expect(refusal(headers, changed) == .badSignature)
        #expect(refusal(headers, body, at: now + 401) == .staleTimestamp)
        #expect(refusal(headers, body, at: now - 201) == .staleTimestamp)
        #expect(refusal(headers, body, at: now + 400) == nil)
        var probe = headers
        probe["Wechatpay-Signature"] = "WECHATPAY/SIGNTEST/" + (headers["Wechatpay-Signature"] ?? "")
        #expect(refusal(probe, body) == .signatureProbe)
        var unknown = headers
        unknown["Wechatpay-Serial"] = "PUB_KEY_ID_0000"
        #expect(refusal(unknown, body) == .unknownSerial)
        var missing = headers
        missing["Wechatpay-Nonce"] = nil
        #expect(refusal(missing, body) == .missingHeader)
        var otherType = headers
        otherType["Wechatpay-Signature-Type"] = "WECHATPAY2-SM2-WITH-SM3"
        #expect(refusal(otherType, body) == .malformedHeader)
    }

    @Test("Both modes at once: a public-key serial and a platform certificate's serial each verify with their own key, never the other's")
    func bothModesDuringAMigration() throws {
        let now = Date()
        let wechatKey = RSAPrivateKey.generate()
        let platformKey = RSAPrivateKey.generate()
        let certificate = try #require(CertificateIssuer.issue(.init(commonName: "Tenpay.com Root CA", organization: "Tenpay", country: "CN"),
                                                               key: platformKey.key, issuer: nil, issuerKey: platformKey.key, serial: 0x7A2B,
                                                               validity: (now - 3600)...(now + 86400), kind: .leaf))
        let platform = try PlatformCertificate(certificate: certificate)
        #expect(platform.serialNumber == "7A2B")
        let publicKey = try WeChatPayPublicKey(id: "PUB_KEY_ID_01", key: wechatKey.publicKey)
        let verifier = V3Verifier(publicKey: publicKey, platformCertificates: PlatformCertificateStore(pinned: [platform]))
        let body = Array("{}".utf8)
        let ts = Int64(now.timeIntervalSince1970)
        try verifier.verify(WeChatPaySigner(key: wechatKey, serial: publicKey.id).sign(body, timestamp: ts, nonce: "a"), now: now)
        try verifier.verify(WeChatPaySigner(key: platformKey, serial: "7A2B").sign(body, timestamp: ts, nonce: "b"), now: now)
        #expect(throws: WeChatPayV3Error(.badSignature)) {
            try verifier.verify(WeChatPaySigner(key: platformKey, serial: publicKey.id).sign(body, timestamp: ts, nonce: "c"), now: now)
        }
        #expect(throws: WeChatPayV3Error(.certificateNotValidNow)) {
            try verifier.verify(WeChatPaySigner(key: platformKey, serial: "7A2B").sign(body, timestamp: ts + 2 * 86400, nonce: "d"),
                                now: now + 2 * 86400)
        }
    }

    @Test("The app's sign covers appId, timeStamp, nonceStr and prepayId and verifies with openssl under the merchant's public key")
    func appPayParameters() async throws {
        let vectors = try V3Vectors()
        defer { vectors.remove() }
        let key = try RSAPrivateKey(pem: try await vectors.opensslKey("merchant.pem"))
        let parameters = V3AppPayParameters(appID: "wx8888888888888888", mchID: Self.mchID, prepayID: "wx201410272009395522657a690389285100",
                                            nonce: "5K8264ILTKCH16CQ2502SI8ZNMTM67VS", timestamp: 1_414_561_699,
                                            signer: MerchantSigner(mchID: Self.mchID, serialNumber: "01", key: key))
        #expect(parameters.partnerID == Self.mchID && parameters.packageValue == "Sign=WXPay")
        #expect(parameters.isValid(under: key.publicKey))
        try vectors.write("message", Array("wx8888888888888888\n1414561699\n5K8264ILTKCH16CQ2502SI8ZNMTM67VS\nwx201410272009395522657a690389285100\n".utf8))
        try vectors.write("signature", try #require(Base64.decode(parameters.sign, .standardPadded)))
        try vectors.write("public.pem", Array(key.key.publicKeyPEM.utf8))
        let verified = try await vectors.openssl(["dgst", "-sha256", "-verify", vectors.path("public.pem"), "-signature",
                                                  vectors.path("signature"), vectors.path("message")])
        #expect(String(decoding: verified, as: UTF8.self).contains("Verified OK"))
        var tampered = parameters
        tampered.prepayID += "0"
        #expect(!tampered.isValid(under: key.publicKey))
    }

    @Test("Errors name the rule and the field, never the value they refuse or a key")
    func errorsNeverLeakSecrets() throws {
        #expect(throws: WeChatPayV3Error(.invalidAPIv3Key)) { try APIv3Key("short-secret-value") }
        let key = try APIv3Key("0123456789abcdefSECRETSECRET0123")
        #expect(!"\(key)".contains("SECRET"))
        do {
            _ = try PrepayRequest(body: Array(#"{"appid":"wx1","mchid":"1","description":"d","out_trade_no":"SECRET<>","notify_url":"https://a/b","amount":{"total":1}}"#.utf8))
            Issue.record("an invalid out_trade_no was accepted")
        } catch {
            #expect(error.code == .invalidField && error.subject == "out_trade_no")
            #expect(!error.description.contains("SECRET"))
        }
        #expect(V3ErrorBody(status: 400, code: "PARAM_ERROR", message: "SECRET").description.contains("SECRET") == false)
    }
}
