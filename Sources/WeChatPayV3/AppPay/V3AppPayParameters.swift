// SPDX-License-Identifier: Apache-2.0
import Crypto
import JSON

/// What the Android app hands the WeChat SDK's PayReq for a v3 order: the same fields as v2's,
/// but `sign` is base64 SHA256withRSA with the merchant's private key over
/// `appId\ntimeStamp\nnonceStr\nprepayId\n` (the bare prepay_id); `partnerId` and
/// `packageValue` ("Sign=WXPay") are not signed.
public struct V3AppPayParameters: Sendable, Hashable {
    public static let packageValue = "Sign=WXPay"

    public var appID: String
    public var partnerID: String
    public var prepayID: String
    public var nonceStr: String
    public var timeStamp: String
    public var sign: String
    public var packageValue: String { Self.packageValue }

    /// Signs with the merchant key. `nonce` ≤ 32 characters; `timestamp` in seconds.
    public init(appID: String, mchID: String, prepayID: String, nonce: String, timestamp: Int64, signer: MerchantSigner) {
        self.appID = appID
        partnerID = mchID
        self.prepayID = prepayID
        nonceStr = nonce
        timeStamp = String(timestamp)
        sign = V3ClientSignature.sign(appID: appID, timeStamp: timeStamp, nonceStr: nonce, last: prepayID, signer: signer)
    }

    public static func message(appID: String, timeStamp: String, nonceStr: String, prepayID: String) -> [UInt8] {
        V3ClientSignature.message(appID: appID, timeStamp: timeStamp, nonceStr: nonceStr, last: prepayID)
    }

    /// Whether `sign` verifies under the merchant's public key (what WeChat checks in the app).
    public func isValid(under key: RSAPublicKey) -> Bool {
        V3ClientSignature.isValid(sign, appID: appID, timeStamp: timeStamp, nonceStr: nonceStr, last: prepayID, under: key)
    }

    /// The SDK's field names (PayReq), as the app receives them.
    public var json: JSONValue {
        ["appId": .string(appID), "partnerId": .string(partnerID), "prepayId": .string(prepayID),
         "packageValue": .string(packageValue), "nonceStr": .string(nonceStr), "timeStamp": .string(timeStamp),
         "sign": .string(sign), "signType": "RSA"]
    }
}
