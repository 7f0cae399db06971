// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The refunds of orders, in the same database as the orders: recorded with their amount reserved
/// in one transaction, and changed only through one door (`transitionRefund`).
///
/// The promise it keeps (reliability.md C7): the refunds of an order that are not REFUNDCLOSE never
/// add up to more than the order's amount, however many requests arrive at once, because the check
/// and the insert are one transaction (and the database refuses an insert that breaks it); and a
/// refund's parameters never change after it is recorded, so every retry sends the same ones.
///
/// Every method is atomic; writes return only once durable. Implementations: `SQLiteOrderStore`,
/// `PostgresOrderStore` (which takes the order's row lock first in `createRefund` and the door, for
/// the same effect across instances).
public protocol RefundStore: Sendable {
    /// Records a refund request and reserves its amount, in one transaction with its `event` in the
    /// order's timeline, idempotently on `refund.outRefundNo`. Checked in this order: the order
    /// exists; an existing refund with this number is `.existing` (same order and digest) or
    /// `.conflict`; the order is paid (SUCCESS or REFUND); it has fewer than `maximumPerOrder`
    /// refunds; the amount fits in what is not yet reserved. Only `.created` writes anything.
    func createRefund(_ refund: NewRefund, maximumPerOrder: Int, event: NewOrderEvent) async throws(StorageError)
        -> RefundCreateResult

    /// The refund, or `nil`.
    func refund(_ outRefundNo: String) async throws(StorageError) -> RefundRecord?

    /// The order's refunds, oldest first.
    func refunds(outTradeNo: String) async throws(StorageError) -> [RefundRecord]

    /// Records WeChat's `refund_id` from an accepted refund request (kept if already known) and, the
    /// first time, `event`. The state is not touched: acceptance is not completion. Returns the
    /// refund, or `nil` if unknown.
    func recordRefundAccepted(_ outRefundNo: String, refundID: String, at: Date, event: NewOrderEvent?)
        async throws(StorageError) -> RefundRecord?

    /// Notes that WeChat was asked about the refund (refundquery or a resend). Returns whether it exists.
    func touchRefund(_ outRefundNo: String, queriedAt: Date) async throws(StorageError) -> Bool

    /// THE door for refunds: in one transaction, moves the refund to `transition.to` if it is in one
    /// of `transition.allowedFrom` (and belongs to `expectedOutTradeNo` with `expectedAmount`, when
    /// given); only if it changed: a `refund_state_changed` event in the order's timeline, the
    /// outbox event `transition.outbox` makes from the changed refund, the order moved SUCCESS →
    /// REFUND when the refund succeeded, and the order's `refund_needs_attention` flag set while
    /// any of its refunds is CHANGE and cleared when none is.
    func transitionRefund(_ transition: RefundTransition) async throws(StorageError) -> RefundTransitionResult

    /// Leases up to `limit` PROCESSING refunds created at or before `cutoff` whose lease is free at
    /// `now` and that are due, least recently asked about first, to `claimant` until `leaseUntil`.
    ///
    /// A refund asked about at `q` is due again at `q + clamp((q - createdAt) / 2, minimumGap, 1 h)`:
    /// each sweep for a fresh refund, then less often as it ages (bank-card refunds take days), so
    /// a backlog of slow refunds does not cost WeChat a query per sweep each.
    func claimProcessingRefunds(
        createdAtOrBefore cutoff: Date, now: Date, minimumGap: TimeInterval, limit: Int, claimant: String,
        leaseUntil: Date
    ) async throws(StorageError) -> [RefundRecord]

    /// Ends `claimant`'s lease on the refund early. Returns whether it held one.
    func releaseRefundClaim(_ outRefundNo: String, claimant: String) async throws(StorageError) -> Bool

    /// Refunds created in `from..<to`, earliest first: the local side of a day's bill.
    func refunds(createdFrom from: Date, to: Date) async throws(StorageError) -> [RefundRecord]
}

/// What `RefundStore.createRefund` did.
public enum RefundCreateResult: Sendable, Hashable {
    /// This call recorded the refund and reserved its amount.
    case created(RefundRecord)
    /// A refund with this number exists for the same order with the same parameters: a safe retry.
    case existing(RefundRecord)
    /// A refund with this number exists for another order or with other parameters (untouched).
    case conflict(RefundRecord)
    /// No order with that `out_trade_no`.
    case orderNotFound
    /// The order is not paid (its state is given).
    case orderNotRefundable(OrderState)
    /// The order already has `maximumPerOrder` refunds.
    case limitReached(Int)
    /// The amount is more than what is left to refund (`refundable` fen).
    case exceedsPaid(refundable: Int)
}

/// A request to move one refund from one of `allowedFrom` to `to`: the argument of the one door.
public struct RefundTransition: Sendable {
    public var outRefundNo: String
    public var to: RefundState
    /// `to` itself is ignored, so a repeated transition is `.unchanged`, never a second change.
    public var allowedFrom: Set<RefundState>
    /// When set, the refund must belong to this order, or nothing is written (`.mismatch`).
    public var expectedOutTradeNo: String?
    /// When set, the refund must be for this amount, or nothing is written (`.mismatch`).
    public var expectedAmount: Int?
    /// Stored when the change happens, unless one is already known.
    public var refundID: String?
    /// Stored when the change happens (for SUCCESS).
    public var succeededAt: Date?
    /// Stored when the change happens (for a REFUNDCLOSE that WeChat never accepted).
    public var failureReason: String?
    /// Appended to the timeline event, e.g. `refund_notify` or `refundquery`.
    public var detail: String
    /// Made from the changed refund and inserted in the same transaction, only if it changed; its
    /// `outTradeNo` must be the refund's order.
    public var outbox: @Sendable (RefundRecord) -> OutboxEvent?
    /// Made from the changed refund and its order as it reads after the change, and inserted after
    /// `outbox` in the same transaction, only if the refund changed (the `entitlement.changed`
    /// marker of a refund that succeeded); its `outTradeNo` must be the refund's order.
    public var followUp: @Sendable (RefundRecord, OrderRecord) -> OutboxEvent?
    /// Sets `lastNotifyAt` to `at` when the refund changes (a verified refund notify changed it). A
    /// duplicate writes nothing at all, so a replayed notify leaves no trace.
    public var touchesNotify: Bool
    public var at: Date

    public init(
        outRefundNo: String, to: RefundState, from allowedFrom: Set<RefundState>, expectedOutTradeNo: String? = nil,
        expectedAmount: Int? = nil, refundID: String? = nil, succeededAt: Date? = nil, failureReason: String? = nil,
        detail: String = "", outbox: @escaping @Sendable (RefundRecord) -> OutboxEvent? = { _ in nil },
        followUp: @escaping @Sendable (RefundRecord, OrderRecord) -> OutboxEvent? = { _, _ in nil },
        touchesNotify: Bool = false, at: Date
    ) {
        self.outRefundNo = outRefundNo
        self.to = to
        self.allowedFrom = allowedFrom
        self.expectedOutTradeNo = expectedOutTradeNo
        self.expectedAmount = expectedAmount
        self.refundID = refundID
        self.succeededAt = succeededAt
        self.failureReason = failureReason
        self.detail = detail
        self.outbox = outbox
        self.followUp = followUp
        self.touchesNotify = touchesNotify
        self.at = at
    }
}

/// What `RefundStore.transitionRefund` did.
public enum RefundTransitionResult: Sendable, Hashable {
    /// This call changed the refund (and wrote the event, the outbox row and the order's changes).
    /// Among concurrent duplicates exactly one gets this. `order` is the order afterwards.
    case changed(RefundRecord, order: OrderRecord)
    /// Nothing changed: the refund is already in `to`, or in a state not allowed as a source.
    case unchanged(RefundRecord)
    /// The refund belongs to another order or is for another amount than expected: nothing written.
    case mismatch(RefundRecord)
    /// No refund with that number: nothing written.
    case notFound

    /// The refund after the call, if it exists.
    public var refund: RefundRecord? {
        switch self {
        case .changed(let refund, _), .unchanged(let refund), .mismatch(let refund): refund
        case .notFound: nil
        }
    }

    /// Whether this call made the change.
    public var didChange: Bool {
        if case .changed = self { true } else { false }
    }
}
