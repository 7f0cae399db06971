// SPDX-License-Identifier: Apache-2.0
import Crypto
import JSON

/// What a JSAPI page (a mini program's `wx.requestPayment`, an official account's
/// `getBrandWCPayRequest`) needs for a v3 order: `appId`, `timeStamp`, `nonceStr`,
/// `package` (`prepay_id=<prepay_id>`), `signType` `RSA` and `paySign`, base64 SHA256withRSA with
/// the merchant's private key over `appId\ntimeStamp\nnonceStr\npackage\n` — the package as sent,
/// where the APP parameters sign the bare prepay_id.
public struct V3JSAPIPayParameters: Sendable, Hashable {
    public static let signType = "RSA"

    public var appID: String
    public var timeStamp: String
    public var nonceStr: String
    public var package: String
    public var paySign: String

    /// Signs with the merchant key. `nonce` ≤ 32 characters; `timestamp` in seconds.
    public init(appID: String, prepayID: String, nonce: String, timestamp: Int64, signer: MerchantSigner) {
        self.appID = appID
        timeStamp = String(timestamp)
        nonceStr = nonce
        package = "prepay_id=" + prepayID
        paySign = V3ClientSignature.sign(appID: appID, timeStamp: timeStamp, nonceStr: nonce, last: package, signer: signer)
    }

    /// Whether `paySign` verifies under the merchant's public key (what WeChat checks in the client).
    public func isValid(under key: RSAPublicKey) -> Bool {
        V3ClientSignature.isValid(paySign, appID: appID, timeStamp: timeStamp, nonceStr: nonceStr, last: package, under: key)
    }

    /// The names `wx.requestPayment` and `getBrandWCPayRequest` take.
    public var json: JSONValue {
        ["appId": .string(appID), "timeStamp": .string(timeStamp), "nonceStr": .string(nonceStr),
         "package": .string(package), "signType": .string(Self.signType), "paySign": .string(paySign)]
    }
}
