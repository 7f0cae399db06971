// SPDX-License-Identifier: Apache-2.0
import SimulatorKit

/// Faults injected into one endpoint's answers. Rates are probabilities (0…1) drawn from the
/// seeded generator; `limit` makes a fault plan deterministic: "the next N requests".
public struct AppStoreEndpointFaults: Codable, Sendable, Hashable {
    /// Answer 500 (Apple's general internal error) or 503.
    public var http5xxRate: Double = 0
    /// Answer 429 with `Retry-After: retryAfterSeconds`.
    public var rateLimitRate: Double = 0
    public var retryAfterSeconds: Int = 1
    /// Never answer: the connection is closed after `timeoutSeconds` (a socket client times out
    /// first); in process, the transport reports a timeout at once.
    public var timeoutRate: Double = 0
    public var timeoutSeconds: Double = 30
    /// Sign the answer's JWS with a rogue chain (a root nobody trusts).
    public var rogueChainRate: Double = 0
    /// verifyReceipt only: answer this status instead (21005, 21009, 21100, 21010, 21006…).
    public var receiptStatus: Int?
    public var receiptStatusRate: Double = 0
    /// The `is-retryable` flag sent with a 21100–21199 `receiptStatus`.
    public var receiptRetryable: Bool = true
    /// Seconds added before answering.
    public var latency: Double = 0
    /// Apply to at most this many more requests, then answer normally. Nil: no limit.
    public var limit: Int?
    /// Answer this many requests normally first ("the second page fails"). Nil: from the next one.
    public var after: Int?

    public init(http5xxRate: Double = 0, rateLimitRate: Double = 0, retryAfterSeconds: Int = 1, timeoutRate: Double = 0,
                timeoutSeconds: Double = 30, rogueChainRate: Double = 0, receiptStatus: Int? = nil, receiptStatusRate: Double = 0,
                receiptRetryable: Bool = true, latency: Double = 0, limit: Int? = nil, after: Int? = nil) {
        self.http5xxRate = http5xxRate
        self.rateLimitRate = rateLimitRate
        self.retryAfterSeconds = retryAfterSeconds
        self.timeoutRate = timeoutRate
        self.timeoutSeconds = timeoutSeconds
        self.rogueChainRate = rogueChainRate
        self.receiptStatus = receiptStatus
        self.receiptStatusRate = receiptStatus != nil && receiptStatusRate == 0 ? 1 : receiptStatusRate
        self.receiptRetryable = receiptRetryable
        self.latency = latency
        self.limit = limit
        self.after = after
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case http5xxRate, rateLimitRate, retryAfterSeconds, timeoutRate, timeoutSeconds, rogueChainRate, receiptStatus,
             receiptStatusRate, receiptRetryable, latency, limit, after
    }

    // Written by hand (tests, the control API): a missing key means "no such fault".
    public init(from decoder: any Decoder) throws {
        try ControlBody.refuseUnknownMembers(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            http5xxRate: try ControlBody.rate(c, .http5xxRate),
            rateLimitRate: try ControlBody.rate(c, .rateLimitRate),
            retryAfterSeconds: try c.decodeIfPresent(Int.self, forKey: .retryAfterSeconds) ?? 1,
            timeoutRate: try ControlBody.rate(c, .timeoutRate),
            timeoutSeconds: try c.decodeIfPresent(Double.self, forKey: .timeoutSeconds) ?? 30,
            rogueChainRate: try ControlBody.rate(c, .rogueChainRate),
            receiptStatus: try c.decodeIfPresent(Int.self, forKey: .receiptStatus),
            receiptStatusRate: try ControlBody.rate(c, .receiptStatusRate),
            receiptRetryable: try c.decodeIfPresent(Bool.self, forKey: .receiptRetryable) ?? true,
            latency: try c.decodeIfPresent(Double.self, forKey: .latency) ?? 0,
            limit: try c.decodeIfPresent(Int.self, forKey: .limit),
            after: try c.decodeIfPresent(Int.self, forKey: .after))
    }
}

/// Every fault the App Store simulator injects. Endpoint keys: `transactions`, `history`,
/// `refunds`, `lookup`, `notificationHistory`, `consumption`, `verifyReceipt`, or `*` for all.
public struct AppStoreFaultPlan: Codable, Sendable, Hashable {
    public var endpoints: [String: AppStoreEndpointFaults]
    /// Drops, duplicates and delays of Server Notifications V2.
    public var notify: NotifyFaults
    /// Sign notifications with the rogue chain.
    public var notificationRogueChainRate: Double
    /// Lose every attempt of chosen notifications (by type), so a test knows which ones the
    /// merchant never hears of; they stay in Get Notification History.
    public var dropNotifications: AppStoreNotificationDrops?

    public init(endpoints: [String: AppStoreEndpointFaults] = [:], notify: NotifyFaults = NotifyFaults(),
                notificationRogueChainRate: Double = 0, dropNotifications: AppStoreNotificationDrops? = nil) {
        self.endpoints = endpoints
        self.notify = notify
        self.notificationRogueChainRate = notificationRogueChainRate
        self.dropNotifications = dropNotifications
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case endpoints, notify, notificationRogueChainRate, dropNotifications }

    public init(from decoder: any Decoder) throws {
        try ControlBody.refuseUnknownMembers(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(endpoints: try c.decodeIfPresent([String: AppStoreEndpointFaults].self, forKey: .endpoints) ?? [:],
                  notify: try c.decodeIfPresent(NotifyFaults.self, forKey: .notify) ?? NotifyFaults(),
                  notificationRogueChainRate: try ControlBody.rate(c, .notificationRogueChainRate),
                  dropNotifications: try c.decodeIfPresent(AppStoreNotificationDrops.self, forKey: .dropNotifications))
    }
}

/// Which notifications the fault plan loses entirely: those whose type (`DID_RENEW`) or type and
/// subtype (`DID_RENEW/BILLING_RECOVERY`) is listed (every type when `types` is empty), the
/// `limit` next ones (every one when nil).
public struct AppStoreNotificationDrops: Codable, Sendable, Hashable {
    public var types: [String]
    public var limit: Int?

    public init(types: [String] = [], limit: Int? = nil) {
        self.types = types
        self.limit = limit
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case types, limit }

    public init(from decoder: any Decoder) throws {
        try ControlBody.refuseUnknownMembers(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(types: try c.decodeIfPresent([String].self, forKey: .types) ?? [],
                  limit: try c.decodeIfPresent(Int.self, forKey: .limit))
    }

    func matches(type: String, subtype: String?) -> Bool {
        types.isEmpty || types.contains(type) || subtype.map { types.contains("\(type)/\($0)") } == true
    }
}
