// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import JSON
import Testing
import WeChatPayV3

/// The JSAPI client parameters of a v3 order, checked by openssl under the merchant's public key.
struct V3JSAPIPayParametersTests {
    @Test("paySign covers appId, timeStamp, nonceStr and package=prepay_id=… and verifies with openssl under the merchant's public key")
    func paySignVerifiesWithOpenSSL() async throws {
        let vectors = try V3Vectors()
        defer { vectors.remove() }
        let key = try RSAPrivateKey(pem: try await vectors.opensslKey("merchant.pem"))
        let parameters = V3JSAPIPayParameters(appID: "wx2421b1c4370ec43b", prepayID: "wx201410272009395522657a690389285100",
                                              nonce: "5K8264ILTKCH16CQ2502SI8ZNMTM67VS", timestamp: 1_414_561_699,
                                              signer: MerchantSigner(mchID: "1900000109", serialNumber: "01", key: key))
        #expect(parameters.package == "prepay_id=wx201410272009395522657a690389285100")
        #expect(parameters.isValid(under: key.publicKey))
        try vectors.write("message", Array(
            "wx2421b1c4370ec43b\n1414561699\n5K8264ILTKCH16CQ2502SI8ZNMTM67VS\nprepay_id=wx201410272009395522657a690389285100\n".utf8))
        try vectors.write("signature", try #require(Base64.decode(parameters.paySign, .standardPadded)))
        try vectors.write("public.pem", Array(key.key.publicKeyPEM.utf8))
        let verified = try await vectors.openssl(["dgst", "-sha256", "-verify", vectors.path("public.pem"), "-signature",
                                                  vectors.path("signature"), vectors.path("message")])
        #expect(String(decoding: verified, as: UTF8.self).contains("Verified OK"))
        #expect(parameters.json["signType"] == "RSA" && parameters.json["package"] == .string(parameters.package))
        var tampered = parameters
        tampered.appID = "wx0000000000000000"
        #expect(!tampered.isValid(under: key.publicKey))
    }
}
