// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Gauges for metrics and /readyz, read in one consistent snapshot.
public struct StoreCounts: Sendable, Hashable {
    /// Every state appears, with 0 when no order is in it.
    public var ordersByState: [OrderState: Int]
    /// Outbox events neither delivered nor dead.
    public var outboxPending: Int
    /// Outbox events given up on, waiting for a `redrive`.
    public var outboxDead: Int
    /// The creation time of the oldest pending outbox event: the dispatcher's lag.
    public var oldestPendingOutboxAt: Date?
    /// By WeChat Pay API version (`v2`, `v3`): the WeChat orders not yet final and the refunds still
    /// PROCESSING, whose notifies and queries need that version's keys. Versions with none are absent.
    public var inFlightByAPIVersion: [String: Int] = [:]

    public init(
        ordersByState: [OrderState: Int], outboxPending: Int, outboxDead: Int, oldestPendingOutboxAt: Date?
    ) {
        self.ordersByState = ordersByState
        self.outboxPending = outboxPending
        self.outboxDead = outboxDead
        self.oldestPendingOutboxAt = oldestPendingOutboxAt
    }
}
