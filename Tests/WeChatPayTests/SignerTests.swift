// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

/// The official example of the v2 "安全规范 / 签名算法" page.
enum OfficialVector {
    static let key = APIKey("192006250b4c09247ec02edce69f6a2d")
    static let fields: Fields = [
        "appid": "wxd930ea5d5a258f4f",
        "mch_id": "10000100",
        "device_info": "1000",
        "body": "test",
        "nonce_str": "ibuaiVcKdpRxkhJA",
    ]
    static let md5 = "9A0A8659F005D6984697E2CA0A9CF3B7"
    static let hmacSHA256 = "6A9AE1657590FD6257D693A078E1C3E4BB6BA4DC30B23E0EE2496E54170DACD6"
}

struct SignerTests {
    let signer = Signer(key: OfficialVector.key)

    @Test func theOfficialVectorSignsToTheDocumentedMD5() {
        #expect(signer.signature(for: OfficialVector.fields, type: .md5) == OfficialVector.md5)
    }

    @Test func theOfficialVectorSignsToTheDocumentedHMACSHA256() {
        #expect(signer.signature(for: OfficialVector.fields, type: .hmacSHA256) == OfficialVector.hmacSHA256)
    }

    @Test func theSigningStringSortsNamesByASCIIAndNeverContainsTheKey() {
        let string = signer.signingString(for: OfficialVector.fields)
        #expect(string == "appid=wxd930ea5d5a258f4f&body=test&device_info=1000&mch_id=10000100&nonce_str=ibuaiVcKdpRxkhJA")
        #expect(!string.contains("192006250b4c"))
    }

    @Test func emptyValuesAndTheSignFieldItselfAreLeftOut() {
        var fields = OfficialVector.fields
        fields["attach"] = ""
        fields["sign"] = "ANYTHING"
        #expect(signer.signature(for: fields, type: .md5) == OfficialVector.md5)
    }

    @Test func fieldOrderDoesNotChangeTheSignature() {
        let reversed = Fields(OfficialVector.fields.elements.reversed())
        #expect(signer.signature(for: reversed, type: .md5) == OfficialVector.md5)
    }

    @Test func uppercaseNamesSortBeforeLowercaseOnesAsASCIIRequires() {
        let fields: Fields = ["b": "1", "B": "2", "a_b": "3", "aB": "4"]
        #expect(signer.signingString(for: fields) == "B=2&aB=4&a_b=3&b=1")
    }

    @Test func chineseBodiesAreSignedAsUTF8() {
        // Recomputed independently with Python's hashlib and hmac over the UTF-8 bytes of
        // "body=腾讯充值中心-QQ会员充值&key=192006250b4c09247ec02edce69f6a2d".
        let fields: Fields = ["body": "腾讯充值中心-QQ会员充值"]
        #expect(signer.signature(for: fields, type: .md5) == "7B7DB8CBDD69F2E0046BA5551F309AD1")
        #expect(signer.signature(for: fields, type: .hmacSHA256) == "03D817650DDF9C5C60886F29E4DB82E8F233B551D10B609210ED5C191D3D54FF")
    }

    @Test func verificationAcceptsTheRightSignatureWithEitherCase() throws {
        var fields = OfficialVector.fields
        fields["sign"] = OfficialVector.md5
        try signer.verify(fields, expected: .md5)
        fields["sign"] = OfficialVector.md5.lowercased()
        try signer.verify(fields, expected: .md5)
    }

    @Test func aNotifyWithA64HexSignAndNoSignTypeIsVerifiedWithTheExpectedHMAC() throws {
        var fields = OfficialVector.fields
        fields["sign"] = OfficialVector.hmacSHA256
        try signer.verify(fields, expected: .hmacSHA256)
        #expect(throws: SignatureError.mismatch) { try signer.verify(fields, expected: .md5) }
    }

    @Test func aDeclaredSignTypeOtherThanTheExpectedOneIsRejectedNeverDowngraded() {
        var fields = OfficialVector.fields
        fields["sign_type"] = "MD5"
        fields["sign"] = signer.signature(for: fields, type: .md5)
        #expect(throws: SignatureError.signTypeMismatch(expected: .hmacSHA256)) {
            try signer.verify(fields, expected: .hmacSHA256)
        }
    }

    @Test func anUnknownSignTypeIsRejected() {
        var fields = OfficialVector.fields
        fields["sign_type"] = "SHA1"
        fields["sign"] = OfficialVector.md5
        #expect(throws: SignatureError.unknownSignType) { try signer.verify(fields, expected: .md5) }
    }

    @Test func aMissingOrEmptySignIsRejected() {
        var fields = OfficialVector.fields
        #expect(throws: SignatureError.missingSignature) { try signer.verify(fields, expected: .md5) }
        fields["sign"] = ""
        #expect(throws: SignatureError.missingSignature) { try signer.verify(fields, expected: .md5) }
    }

    @Test func aChangedFieldOrAnAddedUnknownFieldBreaksTheSignature() {
        var fields = OfficialVector.fields
        fields["sign"] = OfficialVector.md5
        var changed = fields
        changed["body"] = "test2"
        #expect(throws: SignatureError.mismatch) { try signer.verify(changed, expected: .md5) }
        var extended = fields
        extended["promotion_detail"] = "x"
        #expect(throws: SignatureError.mismatch) { try signer.verify(extended, expected: .md5) }
    }

    @Test func unknownFieldsTakePartInTheSignature() throws {
        var fields = OfficialVector.fields
        fields["zz_future_field"] = "1"
        fields["sign"] = signer.signature(for: fields, type: .hmacSHA256)
        try signer.verify(fields, expected: .hmacSHA256)
    }

    @Test func aWrongKeyFailsVerification() {
        var fields = OfficialVector.fields
        fields["sign"] = OfficialVector.md5
        #expect(throws: SignatureError.mismatch) {
            try Signer(key: APIKey("00000000000000000000000000000000")).verify(fields, expected: .md5)
        }
    }

    @Test func matchingSignTypeNamesTheAlgorithmThatProducedTheSign() {
        var fields = OfficialVector.fields
        fields["sign"] = OfficialVector.hmacSHA256
        #expect(signer.matchingSignType(of: fields) == .hmacSHA256)
        fields["sign"] = OfficialVector.md5
        #expect(signer.matchingSignType(of: fields) == .md5)
        fields["sign"] = String(repeating: "0", count: 32)
        #expect(signer.matchingSignType(of: fields) == nil)
    }

    @Test func theKeyNeverAppearsWhenPrinted() {
        #expect("\(OfficialVector.key)" == "APIKey(***)")
        #expect(String(reflecting: OfficialVector.key) == "APIKey(***)")
        #expect(!"\(signer)".contains("192006250b4c"))
    }
}
