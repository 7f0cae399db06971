// SPDX-License-Identifier: Apache-2.0

/// What a JSAPI page needs to open the payment sheet for a v2 order: a mini program's
/// `wx.requestPayment` and an official account's `WeixinJSBridge.invoke('getBrandWCPayRequest')`.
///
/// `paySign` is the v2 signature over exactly five fields, under their camelCase names:
/// `appId`, `nonceStr`, `package` (`prepay_id=<prepay_id>`), `signType` and `timeStamp` (10-digit
/// seconds), with the algorithm the unifiedorder call used. A mini program passes every field but
/// `appId`, which is signed all the same: the app id must be the one the prepay was made for.
public struct JSAPIPayParameters: Sendable, Hashable {
    public let appId: String
    /// Seconds since 1970, as a 10-digit decimal string.
    public let timeStamp: String
    public let nonceStr: String
    /// `prepay_id=<prepay_id>`.
    public let package: String
    /// `MD5` or `HMAC-SHA256`: the unifiedorder call's algorithm.
    public let signType: String
    /// Uppercase hex signature over the five fields.
    public let paySign: String

    /// Signs the parameters for one prepay id; the same rules as the APP parameters (no empty
    /// field, a nonce of at most 32 characters, a timestamp in seconds).
    public init(appID: String, prepayID: String, nonce: String, timestamp: Int, signType: SignType,
                signer: Signer) throws(AppPayError) {
        guard !appID.isEmpty else { throw .emptyValue("appId") }
        guard !prepayID.isEmpty else { throw .emptyValue("package") }
        guard !nonce.isEmpty else { throw .emptyValue("nonceStr") }
        guard nonce.utf8.count <= 32 else { throw .nonceTooLong }
        guard (1_000_000_000...9_999_999_999).contains(timestamp) else { throw .timestampNotSeconds }
        appId = appID
        timeStamp = String(timestamp)
        nonceStr = nonce
        package = "prepay_id=" + prepayID
        self.signType = signType.rawValue
        paySign = signer.signature(for: Self.signedFields(appID: appID, timeStamp: timeStamp, nonceStr: nonce,
                                                          package: package, signType: signType.rawValue),
                                   type: signType)
    }

    /// The five fields `paySign` covers, under the names WeChat signs them with.
    public var signedFields: Fields {
        Self.signedFields(appID: appId, timeStamp: timeStamp, nonceStr: nonceStr, package: package, signType: signType)
    }

    private static func signedFields(appID: String, timeStamp: String, nonceStr: String, package: String,
                                     signType: String) -> Fields {
        ["appId": appID, "timeStamp": timeStamp, "nonceStr": nonceStr, "package": package, "signType": signType]
    }
}
