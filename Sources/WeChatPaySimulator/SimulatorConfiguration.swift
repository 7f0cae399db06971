// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

/// Who the simulated WeChat Pay believes the merchant is, and the documented limits it enforces.
public struct SimulatorConfiguration: Sendable {
    /// The Open Platform app id the merchant must send.
    public var appID: String
    /// The merchant's other app ids (mini programs, official accounts, websites): a request through
    /// an app id neither `appID` nor one of these is refused, as WeChat refuses an app id the
    /// merchant does not own.
    public var otherAppIDs: Set<String>
    /// The merchant number.
    public var mchID: String
    /// The merchant's v2 API key, shared with the gateway.
    public var key: APIKey
    /// Seed for every random choice (ids, faults), so a run can be replayed.
    public var seed: UInt64
    /// WeChat's notify retry intervals after the first attempt: 15s, 15s, 30s, 3m, 10m, 20m, 30m, 30m,
    /// 30m, 60m, 3h, 3h, 3h, 6h, 6h (about 24 h 4 min in all).
    public var notifyRetryIntervals: [TimeInterval]
    /// prepay_id lifetime (2 hours).
    public var prepayLifetime: TimeInterval
    /// closeorder may not be called within this time of order creation (5 minutes).
    public var minimumAgeToClose: TimeInterval
    /// At most this many partial refunds per order (50).
    public var maximumRefundsPerOrder: Int
    /// Whether payment notifies of HMAC-SHA256 orders carry `sign_type`. Real ones often do not
    /// (WxJava #1585), which is what the gateway must cope with, so the default is false.
    public var notifyCarriesSignTypeForHMAC: Bool
    /// How long to wait for a merchant's notify reply before counting the attempt as failed.
    public var notifyTimeout: TimeInterval
    /// Simulated seconds after which an accepted refund completes SUCCESS by itself (WeChat's bank
    /// side answering), with its refund notify; nil (the default) leaves every refund PROCESSING
    /// until the control panel completes it.
    public var refundCompletionDelay: TimeInterval?
    /// API v3 (keys, mode); nil answers every v3 request 404 as for a merchant without v3.
    public var v3: V3SimulatorConfiguration?

    public static let wechatNotifyRetryIntervals: [TimeInterval] = [
        15, 15, 30, 180, 600, 1200, 1800, 1800, 1800, 3600, 10800, 10800, 10800, 21600, 21600,
    ]

    public init(
        appID: String = "wxd930ea5d5a258f4f",
        mchID: String = "10000100",
        key: APIKey = APIKey("192006250b4c09247ec02edce69f6a2d"),
        seed: UInt64 = 1,
        notifyRetryIntervals: [TimeInterval] = wechatNotifyRetryIntervals,
        prepayLifetime: TimeInterval = 2 * 3600,
        minimumAgeToClose: TimeInterval = 5 * 60,
        maximumRefundsPerOrder: Int = 50,
        notifyCarriesSignTypeForHMAC: Bool = false,
        notifyTimeout: TimeInterval = 5,
        refundCompletionDelay: TimeInterval? = nil,
        v3: V3SimulatorConfiguration? = nil,
        otherAppIDs: [String] = []
    ) {
        self.v3 = v3
        self.appID = appID
        self.otherAppIDs = Set(otherAppIDs)
        self.mchID = mchID
        self.key = key
        self.seed = seed
        self.notifyRetryIntervals = notifyRetryIntervals
        self.prepayLifetime = prepayLifetime
        self.minimumAgeToClose = minimumAgeToClose
        self.maximumRefundsPerOrder = maximumRefundsPerOrder
        self.notifyCarriesSignTypeForHMAC = notifyCarriesSignTypeForHMAC
        self.notifyTimeout = notifyTimeout
        self.refundCompletionDelay = refundCompletionDelay
    }
}

extension SimulatorConfiguration {
    /// Whether `appID` is bound to the merchant.
    public func binds(_ appID: String) -> Bool { appID == self.appID || otherAppIDs.contains(appID) }

    /// The simulator's rule for whose an openid is: an openid under app id `appID` starts with `o`
    /// and the app id's last six characters (`wx2421b1c4370ec43b` → `o0ec43b…`),
    /// so a page of one app cannot pay with a user of another (SIMULATOR.md).
    public static func openIDPrefix(for appID: String) -> String { "o" + String(appID.suffix(6)) }

    /// Whether `openid` is a user of `appID` by that rule.
    public static func openID(_ openid: String, belongsTo appID: String) -> Bool {
        openid.hasPrefix(openIDPrefix(for: appID)) && openid.utf8.count > openIDPrefix(for: appID).utf8.count
    }

    /// An openid of `appID` for a user named `user` (letters and digits).
    public static func openID(of user: String, under appID: String) -> String { openIDPrefix(for: appID) + user }
}
