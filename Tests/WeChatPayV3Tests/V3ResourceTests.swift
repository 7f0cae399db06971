// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import JSON
import Testing
import WeChatPay
import WeChatPayV3

struct V3ResourceTests {
    static let apiV3Key = "a7cde1ZJB1kG2e7VfTs3jQzaWizur8Gb"

    @Test("A resource Python's cryptography sealed with AESGCM decrypts; another key or changed associated data is refused")
    func resourceSealedByPythonDecrypts() async throws {
        let vectors = try V3Vectors()
        defer { vectors.remove() }
        let output = try await vectors.python("""
            import base64
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            sealed = AESGCM(b"\(Self.apiV3Key)").encrypt(b"fdasflkja484", '{"trade_state":"SUCCESS","课":"程"}'.encode(), b"transaction")
            print(base64.b64encode(sealed).decode(), end="")
            """)
        let resource = EncryptedResource(ciphertext: String(decoding: output, as: UTF8.self), nonce: "fdasflkja484",
                                         associatedData: "transaction", originalType: "transaction")
        let key = try APIv3Key(Self.apiV3Key)
        #expect(try resource.decrypt(with: key) == Array(#"{"trade_state":"SUCCESS","课":"程"}"#.utf8))
        #expect(throws: WeChatPayV3Error(.decryptionFailed)) { try resource.decrypt(with: try APIv3Key("b7cde1ZJB1kG2e7VfTs3jQzaWizur8Gb")) }
        var otherData = resource
        otherData.associatedData = "refund"
        #expect(throws: WeChatPayV3Error(.decryptionFailed)) { try otherData.decrypt(with: key) }
        // And the other way: what the module seals, Python opens.
        let sealed = EncryptedResource.seal(Array("plain 文".utf8), key: key, nonce: "0123456789ab", associatedData: "certificate")
        let opened = try await vectors.python("""
            import base64, sys
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            sys.stdout.buffer.write(AESGCM(b"\(Self.apiV3Key)").decrypt(b"0123456789ab", base64.b64decode("\(sealed.ciphertext)"), b"certificate"))
            """)
        #expect(opened == Array("plain 文".utf8))
    }

    @Test("A notify's signature is checked before its resource is decrypted, and a verified one opens to its transaction")
    func notifyVerifiedBeforeDecrypted() throws {
        let key = try APIv3Key(Self.apiV3Key)
        let wechatKey = RSAPrivateKey.generate()
        let publicKey = try WeChatPayPublicKey(id: "PUB_KEY_ID_01", key: wechatKey.publicKey)
        let opener = V3NotifyOpener(verifier: V3Verifier(publicKey: publicKey), key: key, mchID: "1900000109")
        let transaction = V3Transaction(appID: "wx1", mchID: "1900000109", outTradeNo: "order0001", transactionID: "4200001",
                                        tradeType: "APP", tradeState: .success, tradeStateDescription: "支付成功",
                                        successTime: "2024-01-01T10:00:00+08:00", total: 990, payerTotal: 990)
        let body = V3NotifyBuilder(key: key).body(.payment(transaction), id: "n1", createTime: "2024-01-01T10:00:01+08:00", nonce: "abcdefabcdef")
        let now = Date()
        let signer = WeChatPaySigner(key: wechatKey, serial: publicKey.id)
        #expect(try opener.open(signer.sign(body, timestamp: Int64(now.timeIntervalSince1970), nonce: "x"), now: now) == .payment(transaction))

        // A body whose ciphertext is garbage but whose signature is forged: the signature is what is refused.
        var garbage = try JSONValue.parse(body)
        if case .object(var members) = garbage, case .object(var resource)? = members["resource"] {
            resource["ciphertext"] = "AAAA"
            members["resource"] = .object(resource)
            garbage = .object(members)
        }
        var forged = signer.sign(garbage.bytes(), timestamp: Int64(now.timeIntervalSince1970), nonce: "y")
        forged.signature = WeChatPaySigner(key: RSAPrivateKey.generate(), serial: publicKey.id).sign(forged.body,
                              timestamp: Int64(now.timeIntervalSince1970), nonce: "y").signature
        #expect(throws: WeChatPayV3Error(.badSignature)) { try opener.open(forged, now: now) }
        // Signed properly, the same garbage fails at decryption: the order of checks is observable.
        #expect(throws: WeChatPayV3Error(.decryptionFailed)) {
            try opener.open(signer.sign(garbage.bytes(), timestamp: Int64(now.timeIntervalSince1970), nonce: "z"), now: now)
        }
    }

    @Test("A certificate download is trusted only when a key already trusted signed it; a rotation keeps old and new side by side")
    func platformCertificateRotation() throws {
        let key = try APIv3Key(Self.apiV3Key)
        let now = Date()
        func issue(_ serial: UInt64) throws -> (PlatformCertificate, RSAPrivateKey) {
            let privateKey = RSAPrivateKey.generate()
            let certificate = try #require(CertificateIssuer.issue(.init(commonName: "Tenpay", organization: "Tenpay", country: "CN"),
                                                                   key: privateKey.key, issuer: nil, issuerKey: privateKey.key,
                                                                   serial: serial, validity: (now - 60)...(now + 86400), kind: .leaf))
            return (try PlatformCertificate(certificate: certificate), privateKey)
        }
        let (old, oldKey) = try issue(0x1001)
        let (new, newKey) = try issue(0x1002)
        let body = PlatformCertificateDownload.body([old, new], key: key, nonces: ["aaaaaaaaaaaa", "bbbbbbbbbbbb"])
        let ts = Int64(now.timeIntervalSince1970)

        // Nothing pinned: a download signed by a certificate it brings itself is not trusted.
        let blind = PlatformCertificateStore()
        #expect(throws: WeChatPayV3Error(.untrustedDownload)) {
            try blind.accept(WeChatPaySigner(key: newKey, serial: new.serialNumber).sign(body, timestamp: ts, nonce: "n"), key: key, now: now)
        }
        #expect(blind.certificates.isEmpty)

        // Pinned by the operator's certificate: the download signed by it is trusted, the new one joins.
        let store = PlatformCertificateStore(pinned: [old])
        let added = try store.accept(WeChatPaySigner(key: oldKey, serial: old.serialNumber).sign(body, timestamp: ts, nonce: "n"),
                                     key: key, now: now)
        #expect(added == [new.serialNumber])
        #expect(store.certificates.map(\.serialNumber) == [old.serialNumber, new.serialNumber])
        #expect(store.newestSerial(at: now) != nil)
        let verifier = V3Verifier(platformCertificates: store)
        try verifier.verify(WeChatPaySigner(key: oldKey, serial: old.serialNumber).sign([], timestamp: ts, nonce: "o"), now: now)
        try verifier.verify(WeChatPaySigner(key: newKey, serial: new.serialNumber).sign([], timestamp: ts, nonce: "p"), now: now)

        // Pinned by the WeChat Pay public key instead.
        let wechatKey = RSAPrivateKey.generate()
        let publicKey = try WeChatPayPublicKey(id: "PUB_KEY_ID_02", key: wechatKey.publicKey)
        let byPublicKey = PlatformCertificateStore(pinnedPublicKey: publicKey)
        try byPublicKey.accept(WeChatPaySigner(key: wechatKey, serial: publicKey.id).sign(body, timestamp: ts, nonce: "q"), key: key, now: now)
        #expect(byPublicKey.certificates.count == 2)

        // A download whose entry names another serial than its certificate is refused whole.
        let lying = Array(String(decoding: body, as: UTF8.self).replacingOccurrences(of: "\"1002\"", with: "\"1003\"").utf8)
        #expect(throws: WeChatPayV3Error(.invalidCertificate, "serial_no")) {
            try PlatformCertificateStore(pinned: [old]).accept(
                WeChatPaySigner(key: oldKey, serial: old.serialNumber).sign(lying, timestamp: ts, nonce: "r"), key: key, now: now)
        }
    }

    @Test("v3 error codes and statuses map to v2's advice: retry, settle, refuse or query")
    func errorAdvice() {
        #expect(V3ErrorBody(status: 500, body: Array(#"{"code":"SYSTEM_ERROR","message":"x"}"#.utf8)).advice == .retrySameParameters)
        #expect(V3ErrorBody(status: 429, body: Array(#"{"code":"FREQUENCY_LIMITED","message":"x"}"#.utf8)).advice == .retryLater)
        #expect(V3ErrorBody(status: 404, body: Array(#"{"code":"ORDER_NOT_EXIST","message":"x"}"#.utf8)).advice == .doesNotExist)
        #expect(V3ErrorBody(status: 403, body: Array(#"{"code":"OUT_TRADE_NO_USED","message":"x"}"#.utf8)).advice == .useNewOutTradeNo)
        #expect(V3ErrorBody(status: 400, body: Array(#"{"code":"ORDERPAID","message":"x"}"#.utf8)).advice == .treatAsPaid)
        #expect(V3ErrorBody(status: 401, body: Array(#"{"code":"SIGN_ERROR","message":"x"}"#.utf8)).advice == .fixConfiguration)
        #expect(V3ErrorBody(status: 400, body: Array(#"{"code":"PARAM_ERROR","message":"x","detail":{"field":"amount"}}"#.utf8)).field == "amount")
        #expect(V3ErrorBody(status: 502, body: Array("<html>502</html>".utf8)).advice == .retrySameParameters)
        #expect(V3ErrorBody(status: 403, body: Array(#"{"code":"SOMETHING_NEW","message":"x"}"#.utf8)).advice == .query)
    }

    @Test("A trade bill is believed only when its gunzipped text hashes to the signed hash_value")
    func tradeBillHash() throws {
        let text = Array("交易时间,公众账号ID\n`2024-01-01 10:00:00,`wx1\n".utf8)
        let answer = TradeBillResponse(hashValue: Hex.encode(SHA1.hash(text)), downloadURL: "https://api.mch.weixin.qq.com/v3/billdownload/file?token=abc")
        #expect(try TradeBillResponse(body: answer.body) == answer)
        #expect(answer.downloadRequest?.url == "/v3/billdownload/file?token=abc")
        #expect(try answer.checkedBill(Gzip.compress(text), gzip: true) == text)
        #expect(try answer.checkedBill(text, gzip: false) == text)
        #expect(throws: WeChatPayV3Error(.billHashMismatch)) { try answer.checkedBill(Gzip.compress(text + [0x20]), gzip: true) }
    }

    @Test("Query answers and notify resources of a paid order must carry the transaction id, success time and total")
    func paidTransactionsAreComplete() {
        let unpaid = Array(#"{"appid":"wx1","mchid":"1","out_trade_no":"order0001","trade_state":"NOTPAY","trade_state_desc":"未支付"}"#.utf8)
        #expect((try? V3Transaction(body: unpaid))?.tradeState == .notPaid)
        let paidWithoutAmount = Array(#"{"appid":"wx1","mchid":"1","out_trade_no":"order0001","trade_state":"SUCCESS","transaction_id":"42","success_time":"2024-01-01T10:00:00+08:00"}"#.utf8)
        #expect(throws: WeChatPayV3Error(.missingField, "amount.total")) { try V3Transaction(body: paidWithoutAmount) }
        let duplicated = Array(#"{"appid":"wx1","appid":"wx2","mchid":"1","out_trade_no":"order0001","trade_state":"NOTPAY"}"#.utf8)
        #expect(throws: WeChatPayV3Error(.malformedDocument)) { try V3Transaction(body: duplicated) }
        #expect(RFC3339.parse("2018-06-08T10:34:56+08:00") == Date(timeIntervalSince1970: 1_528_425_296))
        #expect(RFC3339.format(Date(timeIntervalSince1970: 1_528_425_296)) == "2018-06-08T10:34:56+08:00")
    }

    @Test("A refund's notice or answer with a success time not in RFC 3339 is refused, not read as no time")
    func refundSuccessTimesAreRFC3339() throws {
        func notice(_ time: String) -> [UInt8] {
            Array(#"{"mchid":"1","transaction_id":"42","out_trade_no":"order0001","refund_id":"503","out_refund_no":"r1","refund_status":"SUCCESS","success_time":"\#(time)","user_received_account":"x","amount":{"total":10,"refund":5,"payer_total":10,"payer_refund":5}}"#.utf8)
        }
        func answer(_ time: String) -> [UInt8] {
            Array(#"{"refund_id":"503","out_refund_no":"r1","transaction_id":"42","out_trade_no":"order0001","success_time":"\#(time)","create_time":"2024-01-01T10:00:00+08:00","status":"SUCCESS","amount":{"total":10,"refund":5}}"#.utf8)
        }
        #expect(try V3RefundNotice(body: notice("2024-01-01T10:00:05+08:00")).successTime == "2024-01-01T10:00:05+08:00")
        #expect(try V3Refund(body: answer("2024-01-01T10:00:05+08:00")).successTime == "2024-01-01T10:00:05+08:00")
        #expect(throws: WeChatPayV3Error(.invalidField, "success_time")) { try V3RefundNotice(body: notice("not-a-time")) }
        #expect(throws: WeChatPayV3Error(.invalidField, "success_time")) { try V3Refund(body: answer("2024-01-01 10:00:05")) }
        // An empty one is none, as v2 reads it: a SUCCESS needs one, an answer may have none.
        #expect(throws: WeChatPayV3Error(.missingField, "success_time")) { try V3RefundNotice(body: notice("")) }
        #expect(try V3Refund(body: answer("")).successTime == nil)
    }

    // Expected instants computed independently with Python's datetime.fromisoformat.
    @Test(arguments: [
        ("2018-06-08T10:34:56+08:00", 1_528_425_296.0), ("2018-06-08T02:34:56Z", 1_528_425_296),
        ("2018-06-07T21:04:56-05:30", 1_528_425_296), ("2024-02-29T23:59:59+00:00", 1_709_251_199),
        ("0001-01-01T00:00:00Z", -62_135_596_800), ("9999-12-31T23:59:59+23:59", 253_402_214_459),
    ])
    func rfc3339TimesReadWithTheirOffset(text: String, seconds: Double) {
        #expect(RFC3339.parse(text) == Date(timeIntervalSince1970: seconds))
    }

    @Test(arguments: [
        "", "2018-06-08T10:34:56", "2018-06-08 10:34:56+08:00", "2018-06-08t10:34:56+08:00", "2018-06-08T10:34:56z",
        "2018-06-08T10:34:56.000+08:00", "2018-06-08T10:34:56+0800", "2018-06-08T10:34:56+24:00",
        "2018-06-08T10:34:56+08:60", "2018-06-08T10:34:56*08:00", "2018-02-30T10:34:56+08:00", "2019-02-29T00:00:00Z",
        "2018-06-08T24:00:00Z", "2018-06-08T10:60:00Z", "2018-06-08T10:34:60Z", "2018-13-08T10:34:56Z",
        "0000-06-08T10:34:56Z", "2018-06-0８T10:34:56Z", "2018/06/08T10:34:56Z", "2018-06-08T10:34:5a+08:00",
        "2018-06-08T10:34:56+0a:00", " 2018-06-08T10:34:56Z",
    ])
    func rfc3339RefusesEverythingElse(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }
}
