// SPDX-License-Identifier: Apache-2.0
import Crypto

/// The signature a v3 order's client parameters carry, for APP (`sign`) and JSAPI (`paySign`)
/// alike: base64 SHA256withRSA with the merchant's private key over
/// `appId\ntimeStamp\nnonceStr\n<last>\n`, where `last` is APP's bare prepay_id and JSAPI's
/// `prepay_id=…` package.
enum V3ClientSignature {
    static func message(appID: String, timeStamp: String, nonceStr: String, last: String) -> [UInt8] {
        Array("\(appID)\n\(timeStamp)\n\(nonceStr)\n\(last)\n".utf8)
    }

    static func sign(appID: String, timeStamp: String, nonceStr: String, last: String, signer: MerchantSigner) -> String {
        Base64.encode(signer.key.signature(for: message(appID: appID, timeStamp: timeStamp, nonceStr: nonceStr, last: last)),
                      .standardPadded)
    }

    static func isValid(_ signature: String, appID: String, timeStamp: String, nonceStr: String, last: String,
                        under key: RSAPublicKey) -> Bool {
        guard let bytes = Base64.decode(signature, .standardPadded) else { return false }
        return key.isValidSignature(bytes, for: message(appID: appID, timeStamp: timeStamp, nonceStr: nonceStr, last: last))
    }
}
