// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay

/// The illustration of §3 of the protocol notes, recomputed with Python's hashlib and hmac.
struct AppPayParametersTests {
    let signer = Signer(key: APIKey("192006250b4c09247ec02edce69f6a2d"))

    private func parameters(_ signType: SignType, timestamp: Int = 1_412_000_000, nonce: String = "5K8264ILTKCH16CQ2502SI8ZNMTM67VS",
                            prepayID: String = "wx201410272009395522657a690389285100") throws(AppPayError) -> AppPayParameters {
        try AppPayParameters(appID: "wxd930ea5d5a258f4f", partnerID: "10000100", prepayID: prepayID, nonce: nonce,
                             timestamp: timestamp, signType: signType, signer: signer)
    }

    @Test func theIllustrationSignsToTheDocumentedMD5() throws {
        let parameters = try parameters(.md5)
        #expect(parameters.sign == "2919569F617B3B20A0A9E632811185FD")
        #expect(parameters.signType == "MD5")
    }

    @Test func theIllustrationSignsToTheDocumentedHMACSHA256() throws {
        let parameters = try parameters(.hmacSHA256)
        #expect(parameters.sign == "05F33CA98485F5AA2FFA3F80752FDA2E34FDA943E8112F190511EFE3B963F932")
        #expect(parameters.signType == "HMAC-SHA256")
    }

    @Test func exactlySixLowercaseKeysAreSignedWithPackageSignWXPay() throws {
        let parameters = try parameters(.md5)
        #expect(Set(parameters.signedFields.names) == ["appid", "partnerid", "prepayid", "package", "noncestr", "timestamp"])
        #expect(parameters.signedFields["package"] == "Sign=WXPay")
        #expect(signer.signingString(for: parameters.signedFields)
            == "appid=wxd930ea5d5a258f4f&noncestr=5K8264ILTKCH16CQ2502SI8ZNMTM67VS&package=Sign=WXPay&partnerid=10000100&prepayid=wx201410272009395522657a690389285100&timestamp=1412000000")
    }

    @Test func jsonCarriesExactlyThePayReqNamesAsStrings() throws {
        let data = try JSONEncoder().encode(try parameters(.hmacSHA256))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == ["appId", "partnerId", "prepayId", "packageValue", "nonceStr", "timeStamp", "sign", "signType"])
        #expect(object["appId"] as? String == "wxd930ea5d5a258f4f")
        #expect(object["partnerId"] as? String == "10000100")
        #expect(object["prepayId"] as? String == "wx201410272009395522657a690389285100")
        #expect(object["packageValue"] as? String == "Sign=WXPay")
        #expect(object["nonceStr"] as? String == "5K8264ILTKCH16CQ2502SI8ZNMTM67VS")
        #expect(object["timeStamp"] as? String == "1412000000")
        #expect(object["signType"] as? String == "HMAC-SHA256")
    }

    @Test func aMillisecondTimestampIsRefused() {
        #expect(throws: AppPayError.timestampNotSeconds) { try parameters(.md5, timestamp: 1_412_000_000_000) }
        #expect(throws: AppPayError.timestampNotSeconds) { try parameters(.md5, timestamp: 999_999_999) }
        #expect(AppPayError.timestampNotSeconds.shortDescription == "timestamp_not_seconds")
    }

    @Test func anEmptyValueOrAnOverlongNonceIsRefused() {
        #expect(throws: AppPayError.emptyValue("prepayid")) { try parameters(.md5, prepayID: "") }
        #expect(throws: AppPayError.emptyValue("noncestr")) { try parameters(.md5, nonce: "") }
        #expect(throws: AppPayError.nonceTooLong) { try parameters(.md5, nonce: String(repeating: "n", count: 33)) }
        #expect(throws: Never.self) { try parameters(.md5, nonce: String(repeating: "n", count: 32)) }
    }
}
