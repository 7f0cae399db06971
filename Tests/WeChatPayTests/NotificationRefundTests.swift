// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay

struct NotificationRefundTests {
    let merchant = NotifyFixture.merchant
    let key = NotifyFixture.key

    /// key* for the test key: lowercase hex MD5 of "192006250b4c09247ec02edce69f6a2d", computed with
    /// Python's hashlib, used by openssl as 32 ASCII bytes (hex-encoded again for `-K`).
    static let opensslKeyHex = Array("d96eb16afdd491fa1e705096edbc2205".utf8).map { String(format: "%02x", $0) }.joined()

    static let innerXML = """
        <root><out_refund_no><![CDATA[R1409811653]]></out_refund_no><out_trade_no><![CDATA[1409811653]]></out_trade_no>\
        <refund_account><![CDATA[REFUND_SOURCE_RECHARGE_FUNDS]]></refund_account><refund_fee><![CDATA[60]]></refund_fee>\
        <refund_id><![CDATA[50000408942018111907145868882]]></refund_id><refund_recv_accout><![CDATA[支付用户零钱]]></refund_recv_accout>\
        <refund_request_source><![CDATA[API]]></refund_request_source><refund_status><![CDATA[SUCCESS]]></refund_status>\
        <settlement_refund_fee><![CDATA[60]]></settlement_refund_fee><settlement_total_fee><![CDATA[100]]></settlement_total_fee>\
        <success_time><![CDATA[2018-11-19 16:24:13]]></success_time><total_fee><![CDATA[100]]></total_fee>\
        <transaction_id><![CDATA[4200000215201811190261405420]]></transaction_id></root>
        """

    /// `openssl enc -aes-256-ecb -K … -nosalt -a -A`: AES-256-ECB with PKCS#7, Base64 on one line.
    static func opensslEncrypt(_ plaintext: [UInt8]) async throws -> String {
        let output = try await ExternalTool.run(
            "/usr/bin/openssl", ["enc", "-aes-256-ecb", "-K", opensslKeyHex, "-nosalt", "-a", "-A"], input: plaintext)
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func outer(reqInfo: String, _ edit: (inout Fields) -> Void = { _ in }) -> Fields {
        var fields: Fields = [
            "return_code": "SUCCESS", "appid": merchant.appID, "mch_id": merchant.mchID,
            "nonce_str": "TeqClE3i0mvn3DrK", "req_info": reqInfo,
        ]
        edit(&fields)
        return fields
    }

    private func decrypt(_ fields: Fields) throws(NotifyError) -> RefundNotification {
        try RefundNotification.decrypt(fields, merchant: merchant, key: key)
    }

    private func validReqInfo() throws -> String {
        try RefundReqInfo.encrypt(NotifyFixture.refund { $0.successTime = Date(timeIntervalSince1970: 1_542_615_853) }.innerFields, key: key)
    }

    @Test func aReqInfoEncryptedByTheOpenSSLCommandLineDecryptsToTypedFields() async throws {
        let reqInfo = try await Self.opensslEncrypt(Array(Self.innerXML.utf8))
        let refund = try decrypt(outer(reqInfo: reqInfo))
        #expect(refund.transactionID == "4200000215201811190261405420")
        #expect(refund.outTradeNo == "1409811653")
        #expect(refund.refundID == "50000408942018111907145868882")
        #expect(refund.outRefundNo == "R1409811653")
        #expect(refund.totalFee == 100)
        #expect(refund.settlementTotalFee == 100)
        #expect(refund.refundFee == 60)
        #expect(refund.settlementRefundFee == 60)
        #expect(refund.refundStatus == .success)
        #expect(refund.successTime == "2018-11-19 16:24:13")
        // 2018-11-19 16:24:13 +08:00 is 1542615853 (Python datetime).
        #expect(refund.successDate == Date(timeIntervalSince1970: 1_542_615_853))
        #expect(refund.refundRecvAccount == "支付用户零钱")
        #expect(refund.refundAccount == "REFUND_SOURCE_RECHARGE_FUNDS")
        #expect(refund.refundRequestSource == "API")
        #expect(refund.fields.count == 13)
    }

    @Test func ourEncryptionIsByteForByteWhatOpenSSLProducesAndOpenSSLDecryptsIt() async throws {
        let inner = NotifyFixture.refund().innerFields
        let ours = try RefundReqInfo.encrypt(inner, key: key)
        let plaintext = try FlatXML.encode(inner, root: "root")
        let openssl = try await Self.opensslEncrypt(plaintext)
        #expect(ours == openssl)
        let decrypted = try await ExternalTool.run(
            "/usr/bin/openssl", ["enc", "-d", "-aes-256-ecb", "-K", Self.opensslKeyHex, "-nosalt", "-a", "-A"],
            input: Array(ours.utf8))
        #expect(decrypted == plaintext)
    }

    @Test func theBuilderAndTheDecrypterAgreeOnEveryField() throws {
        let builder = NotifyFixture.refund {
            $0.refundStatus = .change
            $0.refundRequestSource = "VENDOR_PLATFORM"
            $0.settlementRefundFee = 50
        }
        let body = try FlatXML.encode(try builder.fields(encryptedWith: key))
        let refund = try decrypt(try RefundNotification.decode(body))
        #expect(refund.refundStatus == .change)
        #expect(refund.refundRequestSource == "VENDOR_PLATFORM")
        #expect(refund.settlementRefundFee == 50)
        #expect(refund.successTime == nil && refund.successDate == nil)
        #expect(refund.fields == builder.innerFields)
    }

    @Test func theWrongKeyGivesTheTypedUndecryptableError() throws {
        let reqInfo = try validReqInfo()
        #expect(throws: NotifyError.reqInfoUndecryptable) {
            try RefundNotification.decrypt(outer(reqInfo: reqInfo), merchant: merchant, key: APIKey("another-key-entirely-0123456789ab"))
        }
        #expect(NotifyError.reqInfoUndecryptable.shortDescription == "req_info_undecryptable")
    }

    @Test func tamperedCiphertextsAreRefused() throws {
        let ciphertext = [UInt8](try #require(Data(base64Encoded: try validReqInfo())))
        for position in [0, 17, ciphertext.count / 2, ciphertext.count - 1] {
            var tampered = ciphertext
            tampered[position] ^= 0x5A
            #expect(throws: NotifyError.reqInfoUndecryptable) {
                try decrypt(outer(reqInfo: Data(tampered).base64EncodedString()))
            }
        }
    }

    @Test func truncatedCiphertextsAreRefused() throws {
        let ciphertext = [UInt8](try #require(Data(base64Encoded: try validReqInfo())))
        for length in [1, 15, 16, 31, ciphertext.count - 16, ciphertext.count - 1] {
            let truncated = Array(ciphertext.prefix(length))
            #expect(throws: NotifyError.reqInfoUndecryptable) {
                try decrypt(outer(reqInfo: Data(truncated).base64EncodedString()))
            }
        }
    }

    @Test func everyVariantOfTheLastBlockGivesTheSameAnswerSoThereIsNoPaddingOracle() throws {
        let ciphertext = [UInt8](try #require(Data(base64Encoded: try validReqInfo())))
        var answers = Set<String>()
        for byte in 0...255 where UInt8(byte) != ciphertext[ciphertext.count - 1] {
            var variant = ciphertext
            variant[variant.count - 1] = UInt8(byte)
            do {
                _ = try decrypt(outer(reqInfo: Data(variant).base64EncodedString()))
                Issue.record("a modified ciphertext was accepted")
            } catch {
                answers.insert(error.shortDescription)
            }
        }
        #expect(answers == ["req_info_undecryptable"])
    }

    @Test func randomGarbageOfEveryBlockCountIsRefusedWithoutACrash() {
        var generator = SeededGenerator(seed: 0x5EED)
        for round in 0..<300 {
            let count = 16 * (1 + round % 64)
            let garbage = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(throws: NotifyError.reqInfoUndecryptable) {
                try decrypt(outer(reqInfo: Data(garbage).base64EncodedString()))
            }
        }
    }

    @Test func aCorrectlyEncryptedPlaintextThatIsNotARootDocumentIsRefused() async throws {
        let notXML = try await Self.opensslEncrypt(Array("return_code=SUCCESS&refund_fee=1".utf8))
        #expect(throws: NotifyError.reqInfoUndecryptable) { try decrypt(outer(reqInfo: notXML)) }
        let wrongRoot = try await Self.opensslEncrypt(Array("<xml><refund_fee>1</refund_fee></xml>".utf8))
        #expect(throws: NotifyError.reqInfoUndecryptable) { try decrypt(outer(reqInfo: wrongRoot)) }
    }

    @Test func aReqInfoThatIsNotBase64IsRefused() {
        #expect(throws: NotifyError.reqInfoNotBase64) { try decrypt(outer(reqInfo: "not base64!!")) }
        #expect(NotifyError.reqInfoNotBase64.shortDescription == "req_info_not_base64")
    }

    @Test func theOuterDocumentMustSayReturnSuccessAndNameThisMerchant() throws {
        let reqInfo = try validReqInfo()
        #expect(throws: NotifyError.returnFail) { try decrypt(outer(reqInfo: reqInfo) { $0["return_code"] = "FAIL" }) }
        #expect(throws: NotifyError.wrongAppID) { try decrypt(outer(reqInfo: reqInfo) { $0["appid"] = "wx0000000000000000" }) }
        #expect(throws: NotifyError.wrongMchID) { try decrypt(outer(reqInfo: reqInfo) { $0["mch_id"] = "1" }) }
    }

    @Test func aPaymentNotifyPostedToTheRefundURLIsRefused() {
        let payment = NotifyFixture.payment().fields(signedWith: NotifyFixture.signer, signType: .md5)
        #expect(throws: NotifyError.missingField("req_info")) { try decrypt(payment) }
    }

    @Test func unsignedOuterFieldsNeverOverrideDecryptedOnes() throws {
        let refund = try decrypt(outer(reqInfo: try validReqInfo()) {
            $0["out_trade_no"] = "attacker-order"
            $0["refund_fee"] = "99999"
            $0["refund_status"] = "SUCCESS"
        })
        #expect(refund.outTradeNo == "1409811653")
        #expect(refund.refundFee == 60)
        #expect(refund.fields["out_trade_no"] == "1409811653")
    }

    @Test func decryptedFieldsOutsideTheirDocumentedFormAreRefused() throws {
        func attempt(_ edit: (inout Fields) -> Void) throws -> NotifyError? {
            var inner = NotifyFixture.refund().innerFields
            edit(&inner)
            let reqInfo = try RefundReqInfo.encrypt(inner, key: key)
            do {
                _ = try decrypt(outer(reqInfo: reqInfo))
                return nil
            } catch {
                return error
            }
        }
        #expect(try attempt { $0["refund_status"] = "PROCESSING" } == .invalidField("refund_status"))
        #expect(try attempt { $0["refund_fee"] = "101" } == .invalidField("refund_fee"))
        #expect(try attempt { $0["refund_fee"] = "0.60" } == .invalidField("refund_fee"))
        #expect(try attempt { $0["total_fee"] = nil } == .missingField("total_fee"))
        #expect(try attempt { $0["out_refund_no"] = "" } == .missingField("out_refund_no"))
        #expect(try attempt { $0["success_time"] = "2018-02-30 10:00:00" } == .invalidField("success_time"))
        #expect(try attempt { _ in } == nil)
    }
}
