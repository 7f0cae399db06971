// SPDX-License-Identifier: Apache-2.0

/// Who we are, as a notification must name us: the Open Platform AppID the order was created with
/// and the merchant number. A notify naming anyone else is refused, even when correctly signed,
/// because one API key can serve several AppIDs and a notify for another app is not our payment.
public struct MerchantIdentity: Sendable, Hashable {
    /// `appid`: the mobile-app AppID used for unifiedorder.
    public var appID: String
    /// `mch_id`: the merchant number.
    public var mchID: String

    public init(appID: String, mchID: String) {
        self.appID = appID
        self.mchID = mchID
    }
}
