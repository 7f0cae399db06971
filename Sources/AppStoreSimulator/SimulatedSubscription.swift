// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import SimulatorKit

/// An auto-renewable subscription product as App Store Connect configures it: its group, its
/// period, its level in the group (1 is the highest service) and its billing grace period.
public struct AppStoreSubscriptionProduct: Sendable, Codable, Hashable {
    public var productID: String
    public var groupIdentifier: String
    /// ISO 8601, as App Store Connect's durations: `P1W`, `P1M`, `P2M`, `P3M`, `P6M`, `P1Y` (any
    /// `P<n>D|W|M|Y` with n from 1 to 366 is accepted).
    public var period: String
    public var level: Int
    /// 0 (no grace period), or App Store Connect's 3, 16 or 28 days.
    public var gracePeriodDays: Int

    public init(productID: String, groupIdentifier: String, period: String = "P1M", level: Int = 1, gracePeriodDays: Int = 0) {
        self.productID = productID
        self.groupIdentifier = groupIdentifier
        self.period = period
        self.level = level
        self.gracePeriodDays = gracePeriodDays
    }

    /// What an auto-renewable product nobody configured is: monthly, alone in a group named after it.
    static func unconfigured(_ productID: String) -> Self {
        Self(productID: productID, groupIdentifier: "group.\(productID)")
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case productID = "productId", groupIdentifier = "subscriptionGroupIdentifier", period, level, gracePeriodDays
    }

    public init(from decoder: any Decoder) throws {
        try ControlBody.refuseUnknownMembers(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(productID: try c.decode(String.self, forKey: .productID),
                  groupIdentifier: try c.decode(String.self, forKey: .groupIdentifier),
                  period: try c.decodeIfPresent(String.self, forKey: .period) ?? "P1M",
                  level: try c.decodeIfPresent(Int.self, forKey: .level) ?? 1,
                  gracePeriodDays: try c.decodeIfPresent(Int.self, forKey: .gracePeriodDays) ?? 0)
        guard !productID.isEmpty, !groupIdentifier.isEmpty, Self.components(period) != nil, (1...100).contains(level),
              [0, 3, 16, 28].contains(gracePeriodDays)
        else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath,
                debugDescription: "a product needs a productId, a subscriptionGroupIdentifier, a period P<n>D|W|M|Y, a level 1-100 "
                    + "and gracePeriodDays 0, 3, 16 or 28"))
        }
    }

    /// The period as calendar components, or nil when it is not `P<n>D|W|M|Y`.
    static func components(_ period: String) -> DateComponents? {
        guard period.hasPrefix("P"), let unit = period.last, let count = Int(period.dropFirst().dropLast()),
              (1...366).contains(count) else { return nil }
        switch unit {
        case "D": return DateComponents(day: count)
        case "W": return DateComponents(day: 7 * count)
        case "M": return DateComponents(month: count)
        case "Y": return DateComponents(year: count)
        default: return nil
        }
    }

    /// `count` periods after `start`, on the UTC calendar (a month after 31 January is the last of
    /// February; counted from the anchor, the period after that ends on 31 March again).
    func end(from start: Date, periods count: Int = 1) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let unit = Self.components(period) ?? DateComponents(month: 1)
        let scaled = DateComponents(year: unit.year.map { $0 * count }, month: unit.month.map { $0 * count },
                                    day: unit.day.map { $0 * count })
        return calendar.date(byAdding: scaled, to: start) ?? start.addingTimeInterval(Double(count) * 30 * 86400)
    }

    /// The period's length in days, roughly (for telling crossgrades of another duration apart).
    var nominalDays: Int {
        let unit = Self.components(period) ?? DateComponents(month: 1)
        return (unit.year ?? 0) * 365 + (unit.month ?? 0) * 30 + (unit.day ?? 0)
    }
}

/// One customer's auto-renewable subscription in one group, as the App Store runs it: the
/// transaction of each period, the renewal at each period's end, billing retry and grace period
/// after a failed charge, expiry, revocation.
struct SimulatedSubscription: Sendable {
    /// Get All Subscription Statuses' `status`: 1 active, 2 expired, 3 billing retry, 4 billing
    /// grace period, 5 revoked.
    enum Phase: Int, Sendable {
        case active = 1, expired = 2, billingRetry = 3, gracePeriod = 4, revoked = 5
    }

    var originalTransactionID: String
    var user: String
    var environment: AppStoreEnvironment
    var groupIdentifier: String
    var productID: String
    /// What the next renewal buys (a downgrade waits here until then).
    var autoRenewProductID: String
    var autoRenewEnabled = true
    var appAccountToken: UUID?
    var storefront: String
    var ownership: AppStoreTransaction.OwnershipType?
    var latestTransactionID: String
    var expiresDate: Date
    /// Periods are counted from here, so monthly renewals keep their day of the month.
    var anchor: Date
    var periodsFromAnchor = 1
    var phase = Phase.active
    /// Charges still to fail (a renewal, then each retry); `Int.max`: every one.
    var failuresAhead = 0
    var billingRetryStarted: Date?
    var gracePeriodExpiresDate: Date?
    var nextRetry: Date?
    /// 1 the customer cancelled, 2 billing error, 5 other (after a refund is reversed too late).
    var expirationIntent: Int?
    var recentSubscriptionStartDate: Date
    /// Dates of renewal-date extensions (at most two in 365 days), and the answer to each
    /// `requestIdentifier` (a repeat answers the same and extends nothing).
    var extensionDates: [Date] = []
    var extensionAnswers: [String: ExtensionAnswer] = [:]

    struct ExtensionAnswer: Sendable, Hashable {
        var webOrderLineItemID: String?
        var effectiveDate: Date
    }

    /// The next moment something happens to it by itself, or nil.
    func nextEvent(retryDays: Int) -> Date? {
        switch phase {
        case .active: return expiresDate
        case .gracePeriod, .billingRetry:
            let end = (billingRetryStarted ?? expiresDate).addingTimeInterval(Double(retryDays) * 86400)
            return [nextRetry, phase == .gracePeriod ? gracePeriodExpiresDate : nil, end].compactMap { $0 }.min()
        case .expired, .revoked: return nil
        }
    }
}
