// SPDX-License-Identifier: Apache-2.0

/// Bookkeeping that a caller of the one door wants written in the same transaction as the
/// transition, whatever its outcome: a timeline event whose detail says whether the state changed,
/// and optionally a bookkeeping time.
///
/// It exists so a notify costs one durable write (one savepoint in a group commit) instead of
/// three: the transition, `touch(.lastNotify)` and the `notify_received` event.
public struct TransitionReceipt: Sendable, Hashable {
    /// The event's kind, e.g. `notify_received`.
    public var kind: String
    /// The event's detail when the transition changed the order.
    public var changedDetail: String
    /// The event's detail when it did not (a duplicate).
    public var unchangedDetail: String
    /// Set to the transition's time (never moved backwards), changed or not.
    public var touching: OrderTimestamp?
    /// When the transition leaves the order unchanged in one of these states, nothing is written:
    /// the caller follows with another transition carrying the receipt (paid after close).
    public var deferredWhenUnchangedIn: Set<OrderState>

    public init(
        kind: String, changedDetail: String, unchangedDetail: String, touching: OrderTimestamp? = nil,
        deferredWhenUnchangedIn: Set<OrderState> = []
    ) {
        self.kind = kind
        self.changedDetail = changedDetail
        self.unchangedDetail = unchangedDetail
        self.touching = touching
        self.deferredWhenUnchangedIn = deferredWhenUnchangedIn
    }
}
