// SPDX-License-Identifier: Apache-2.0
public import AppStore
import Foundation

/// How the gateway uses Apple's recovery and refund-defence APIs: how often and how far back the
/// notification history is read (Get Notification History), and how consumption requests are
/// answered when the business does not (Send Consumption Information). From APPSTORE_BACKFILL_*
/// and APPSTORE_CONSUMPTION_* (`init(_:)`); the defaults are production's.
public struct AppStoreRecoveryPolicy: Sendable {
    /// Seconds between two reads of the notification history (at most; with the reconciler's
    /// sweeps); 0: never read it.
    public var backfillInterval: TimeInterval
    /// How far back the first read goes (Apple keeps 180 days).
    public var backfillDays: Int
    /// How much of the window already read each run reads again (a notification Apple had not
    /// listed yet, or a clock a little behind).
    public var backfillOverlap: TimeInterval
    /// How long a run holds the history's lease without a page of progress: each page (one
    /// Server API call, at most ~10 s with its retries, and up to 20 notifications handled)
    /// extends it, so it is short, and an instance that died mid-run holds the history up only
    /// this long (the battery's T14 SIGKILLs one every second).
    public var backfillLease: TimeInterval
    /// What is sent for a consumption request the business did not answer; nil: nothing is.
    public var consumptionDefaults: ConsumptionInformation?
    /// Seconds after the request when the defaults are sent (before Apple's 12 hours).
    public var consumptionDeadline: TimeInterval

    /// Apple answers a consumption request only within 12 hours of it.
    public static let appleConsumptionWindow: TimeInterval = 12 * 3600
    /// Apple keeps the notification history for 180 days.
    public static let appleHistoryDays = 180

    public init(backfillInterval: TimeInterval = 60, backfillDays: Int = 7, backfillOverlap: TimeInterval = 600,
                backfillLease: TimeInterval = 30, consumptionDefaults: ConsumptionInformation? = nil,
                consumptionDeadline: TimeInterval = 36000) {
        self.backfillInterval = backfillInterval
        self.backfillDays = min(max(1, backfillDays), Self.appleHistoryDays)
        self.backfillOverlap = backfillOverlap
        self.backfillLease = backfillLease
        self.consumptionDefaults = consumptionDefaults
        self.consumptionDeadline = consumptionDeadline
    }

    /// The policy a configuration asks for.
    public init(_ configuration: AppStoreConfiguration) {
        self.init(backfillInterval: TimeInterval(configuration.backfillInterval), backfillDays: configuration.backfillDays,
                  consumptionDefaults: configuration.consumptionDefaults,
                  consumptionDeadline: TimeInterval(configuration.consumptionDeadline))
    }
}
