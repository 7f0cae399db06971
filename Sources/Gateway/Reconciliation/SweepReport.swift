// SPDX-License-Identifier: Apache-2.0

/// What one reconciler sweep did.
public struct SweepReport: Sendable, Hashable {
    /// Orders this sweeper leased (no other sweeper gets them until the lease ends).
    public var claimed = 0
    /// Orders asked about (orderquery) or closed (closeorder) in this sweep.
    public var checked = 0
    /// Orders this sweep moved to SUCCESS (or REFUND).
    public var settled = 0
    /// Orders this sweep closed (expired, WeChat agreed) or saw closed or failed at WeChat.
    public var closed = 0
    /// Calls to WeChat that failed (the orders stay open and are retried in a later sweep).
    public var errors = 0
    /// Orders claimed but left for a later sweep (lease ran out, or too many upstream errors).
    public var skipped = 0
    /// Seconds the longest-waiting claimed order had been due for a check when the sweep began.
    public var lagSeconds: Double = 0

    // Refunds PROCESSING with no notify (refundquery; Reconciler+Refunds.swift).

    /// Refunds this sweeper leased.
    public var refundsClaimed = 0
    /// Refunds asked about (refundquery, and a resend when WeChat never got one).
    public var refundsChecked = 0
    /// Refunds this sweep moved to SUCCESS, CHANGE or REFUNDCLOSE.
    public var refundsSettled = 0
    /// Refund checks that failed (asked again next sweep).
    public var refundErrors = 0
    /// Refunds claimed but left for a later sweep.
    public var refundsSkipped = 0

    // Apple's recovery APIs (Reconciler+AppStore.swift).

    /// Notifications the notification history backfill handled for the first time.
    public var notificationsRecovered = 0
    /// Whether this sweep read the notification history (it was due and this sweeper had the lease).
    public var backfillRan = false
    /// Consumption answers Apple accepted in this sweep.
    public var consumptionSent = 0
    /// Subscriptions read again with Get All Subscription Statuses in this sweep.
    public var subscriptionsChecked = 0

    public init() {}
}
