// SPDX-License-Identifier: Apache-2.0

/// Who the gateway is to WeChat Pay: the values every request is filled and signed with.
///
/// ```swift
/// let merchant = MerchantCredentials(
///     appID: "wxd930ea5d5a258f4f", mchID: "10000100",
///     key: APIKey(secret), signType: .hmacSHA256)
/// ```
///
/// Printing a `MerchantCredentials` never prints the key (``APIKey`` prints `***`).
public struct MerchantCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The Open Platform mobile-app AppID (not the Official Account AppID) for APP payments.
    public var appID: String
    /// The merchant number (商户号).
    public var mchID: String
    /// The v2 API key.
    public var key: APIKey
    /// The algorithm requests are signed with, and the only one responses are accepted with.
    /// Defaults to HMAC-SHA256; the sandbox always uses MD5 whatever this says.
    public var signType: SignType

    /// - Parameters:
    ///   - appID: the AppID sent as `appid`.
    ///   - mchID: the merchant number sent as `mch_id`.
    ///   - key: the v2 API key.
    ///   - signType: the signature algorithm, HMAC-SHA256 by default.
    public init(appID: String, mchID: String, key: APIKey, signType: SignType = .hmacSHA256) {
        self.appID = appID
        self.mchID = mchID
        self.key = key
        self.signType = signType
    }

    public var description: String {
        "MerchantCredentials(appID: \(appID), mchID: \(mchID), key: \(key), signType: \(signType))"
    }
}
