// SPDX-License-Identifier: Apache-2.0

/// The parameters the WeChat Android SDK's `PayReq` (and fluwx, and the iOS SDK) need to open the
/// payment sheet, signed separately from the unifiedorder call.
///
/// The signature covers exactly six lowercase keys: `appid`, `partnerid`, `prepayid`,
/// `package=Sign=WXPay`, `noncestr` (not `nonce_str`) and `timestamp` (10-digit seconds, not
/// milliseconds), with the algorithm the unifiedorder call used. The app receives the camelCase
/// names `PayReq` takes; `Encodable` writes exactly `appId`, `partnerId`, `prepayId`,
/// `packageValue`, `nonceStr`, `timeStamp`, `sign` and `signType`, all strings.
///
/// ```swift
/// let parameters = try AppPayParameters(appID: merchant.appID, partnerID: merchant.mchID,
///                                       prepayID: prepayID, nonce: nonce,
///                                       timestamp: Int(now.timeIntervalSince1970),
///                                       signType: order.signType, signer: signer)
/// let json = try JSONEncoder().encode(parameters)
/// ```
public struct AppPayParameters: Sendable, Hashable, Encodable {
    /// The fixed `package` value for APP payments.
    public static let packageValue = "Sign=WXPay"

    public let appId: String
    /// `mch_id` (or `sub_mch_id` in service-provider mode).
    public let partnerId: String
    public let prepayId: String
    /// Always `Sign=WXPay`.
    public let packageValue: String
    public let nonceStr: String
    /// Seconds since 1970, as a 10-digit decimal string.
    public let timeStamp: String
    /// Uppercase hex signature over the six lowercase keys.
    public let sign: String
    /// `MD5` or `HMAC-SHA256`: the algorithm of `sign`, the same as the unifiedorder call's.
    public let signType: String

    /// Signs the parameters for one prepay id.
    /// - Parameters:
    ///   - appID: the Open Platform mobile-app AppID used for unifiedorder.
    ///   - partnerID: the merchant number.
    ///   - prepayID: `prepay_id` from unifiedorder (valid for 2 hours).
    ///   - nonce: a fresh random string of at most 32 characters.
    ///   - timestamp: the current time in whole seconds since 1970 (10 digits).
    ///   - signType: the algorithm the unifiedorder call used; the SDK rejects any other.
    ///   - signer: holds the API key.
    /// - Throws: `AppPayError` when a value is empty, the nonce is too long, or the timestamp is not
    ///   10-digit seconds (milliseconds are the classic mistake).
    public init(
        appID: String, partnerID: String, prepayID: String, nonce: String, timestamp: Int,
        signType: SignType, signer: Signer
    ) throws(AppPayError) {
        guard !appID.isEmpty else { throw .emptyValue("appid") }
        guard !partnerID.isEmpty else { throw .emptyValue("partnerid") }
        guard !prepayID.isEmpty else { throw .emptyValue("prepayid") }
        guard !nonce.isEmpty else { throw .emptyValue("noncestr") }
        guard nonce.utf8.count <= 32 else { throw .nonceTooLong }
        guard (1_000_000_000...9_999_999_999).contains(timestamp) else { throw .timestampNotSeconds }
        appId = appID
        partnerId = partnerID
        prepayId = prepayID
        packageValue = Self.packageValue
        nonceStr = nonce
        timeStamp = String(timestamp)
        self.signType = signType.rawValue
        sign = signer.signature(
            for: Self.signedFields(appID: appID, partnerID: partnerID, prepayID: prepayID, nonce: nonce,
                                   timestamp: timeStamp),
            type: signType)
    }

    /// The six lowercase fields the signature covers, without `sign`.
    public var signedFields: Fields {
        Self.signedFields(appID: appId, partnerID: partnerId, prepayID: prepayId, nonce: nonceStr, timestamp: timeStamp)
    }

    private static func signedFields(
        appID: String, partnerID: String, prepayID: String, nonce: String, timestamp: String
    ) -> Fields {
        [
            "appid": appID,
            "partnerid": partnerID,
            "prepayid": prepayID,
            "package": packageValue,
            "noncestr": nonce,
            "timestamp": timestamp,
        ]
    }
}
