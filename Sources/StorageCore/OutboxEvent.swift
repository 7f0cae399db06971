// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A message to the business side (e.g. `order.paid`), written in the same transaction as the
/// state change it announces and delivered later, at least once, by a dispatcher.
///
/// Lifecycle: pending (due at `nextAttemptAt`) → delivered, or → dead after too many attempts, from
/// where `redrive` makes it pending again.
public struct OutboxEvent: Sendable, Hashable {
    /// Unique; the receiver deduplicates effects on it. The id of an event that announces one
    /// fact (a payment, a refund's end) is derived from that fact, so the same fact written again
    /// (after a restore) has the same id, and a store keeps the one it has: an insert of an id on
    /// record changes nothing.
    public var id: String
    public var outTradeNo: String
    /// e.g. `order.paid`.
    public var type: String
    /// The JSON body to deliver.
    public var payload: String
    public var createdAt: Date
    /// Delivery attempts so far.
    public var attempts: Int
    public var nextAttemptAt: Date
    public var deliveredAt: Date?
    public var deadAt: Date?
    /// The last delivery failure, short and free of secrets.
    public var lastError: String?

    /// A new, pending event: `attempts` 0 and `nextAttemptAt` defaulting to `createdAt`.
    public init(
        id: String,
        outTradeNo: String,
        type: String,
        payload: String,
        createdAt: Date,
        attempts: Int = 0,
        nextAttemptAt: Date? = nil,
        deliveredAt: Date? = nil,
        deadAt: Date? = nil,
        lastError: String? = nil
    ) {
        self.id = id
        self.outTradeNo = outTradeNo
        self.type = type
        self.payload = payload
        self.createdAt = createdAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt ?? createdAt
        self.deliveredAt = deliveredAt
        self.deadAt = deadAt
        self.lastError = lastError
    }

    /// Neither delivered nor dead.
    public var isPending: Bool { deliveredAt == nil && deadAt == nil }

    /// The type whose events are sent one at a time per user, whichever dispatcher sends them:
    /// each carries the user's state computed as it is sent, so two of one user's in flight at
    /// once (two instances) could land in the wrong order and leave the receiver an older state.
    /// The user is the payload's top-level `user_id`.
    public static let oneAtATimePerUser = "entitlement.changed"
}
