// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A request to move one order from one of `allowedFrom` to `to`: the argument of the one door
/// (`OrderStore.transition`) through which every state change, and in particular every move into
/// SUCCESS, passes.
///
/// ```swift
/// let result = try await store.transition(OrderTransition(
///     outTradeNo: "20240101000001", to: .success, from: OrderState.open,
///     transactionID: notify.transactionID, paidAt: notify.timeEnd, expectedAmount: notify.totalFee,
///     detail: "notify", outbox: paidEvent, at: now))
/// if case .changed = result { wakeWaiters() }
/// ```
public struct OrderTransition: Sendable, Hashable {
    public var outTradeNo: String
    /// The new state.
    public var to: OrderState
    /// The states the order may be in for the change to happen. `to` itself is ignored here, so a
    /// repeated transition is `.unchanged`, never a second change.
    public var allowedFrom: Set<OrderState>
    /// Stored when the change happens; `nil` keeps the stored value.
    public var transactionID: String?
    /// Stored when the change happens; `nil` keeps the stored value.
    public var paidAt: Date?
    /// When set, the change happens only if the stored amount equals it (a paid notify for another
    /// amount must never settle the order).
    public var expectedAmount: Int?
    /// Appended to the `state_changed` event's detail, e.g. `notify` or `orderquery`.
    public var detail: String
    /// Inserted in the same transaction, only if the state changed. Its `outTradeNo` must match.
    public var outbox: OutboxEvent?
    /// A second event inserted after `outbox` in the same transaction, only if the state changed
    /// (the `entitlement.changed` marker of a payment that grants something). Its `outTradeNo` must match.
    public var followUp: OutboxEvent?
    /// Added to the order's flags, only if the state changed.
    public var addingFlags: Set<OrderFlag>
    /// The time of the change (`updatedAt` and the event's time).
    public var at: Date
    /// Written in the same transaction whether or not the state changed (see `TransitionReceipt`).
    public var receipt: TransitionReceipt?
    /// Stored when the change happens: the App Store transaction that paid the order. An order
    /// keeps the first one it got; another order already holding the same transaction id makes the
    /// database refuse the change (`.constraint`).
    public var apple: AppleTransactionFields?
    /// The order as the caller last read it, if it did. A store may then make the change in one
    /// statement that applies only while the order still stands as read (the same state and
    /// flags), and otherwise decides under the order's lock as it always does: a hint for speed,
    /// the result is the same either way.
    public var lastRead: OrderRecord?

    public init(
        outTradeNo: String,
        to: OrderState,
        from allowedFrom: Set<OrderState>,
        transactionID: String? = nil,
        paidAt: Date? = nil,
        expectedAmount: Int? = nil,
        detail: String = "",
        outbox: OutboxEvent? = nil,
        followUp: OutboxEvent? = nil,
        addingFlags: Set<OrderFlag> = [],
        at: Date,
        receipt: TransitionReceipt? = nil,
        apple: AppleTransactionFields? = nil,
        lastRead: OrderRecord? = nil
    ) {
        self.outTradeNo = outTradeNo
        self.to = to
        self.allowedFrom = allowedFrom
        self.transactionID = transactionID
        self.paidAt = paidAt
        self.expectedAmount = expectedAmount
        self.detail = detail
        self.outbox = outbox
        self.followUp = followUp
        self.addingFlags = addingFlags
        self.at = at
        self.receipt = receipt
        self.apple = apple
        self.lastRead = lastRead
    }
}
