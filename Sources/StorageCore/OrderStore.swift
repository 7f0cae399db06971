// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The durable order store: orders, their append-only timelines, and the transactional outbox.
///
/// Every method is atomic. Writes return only once durable. `transition` is the one door through
/// which an order's state changes: of concurrent identical transitions exactly one reports
/// `.changed`, and only that one writes the `state_changed` event and the outbox event.
///
/// Times are kept with millisecond precision. Implementations: `SQLiteOrderStore` (one process).
public protocol OrderStore: Sendable {
    // MARK: Orders

    /// Stores a new order (state NOTPAY) and its first timeline event, idempotently on
    /// `order.outTradeNo`: `.created` for exactly one caller, `.existing` for a replay with the same
    /// `parametersDigest`, `.conflict` (nothing written) when the digest differs.
    ///
    /// Throws `invalidArgument` when `order.state` is not NOTPAY or the order carries a
    /// transaction id (WeChat's or Apple's), an environment or a payment time: payment can only be
    /// recorded by `transition`. Its `channel`, `appleProductID` and `appAccountToken` are stored as
    /// given; another order with the same `appAccountToken` makes it fail with `.constraint`.
    ///
    /// `terms` says what the catalog that priced the order gave its product: once a catalog is
    /// bound in the database (`BindingStore`), a new order whose product has other terms on record
    /// is refused with `.termsChanged` and nothing is written (a replay of a stored order is
    /// answered as usual). Checked in the order's transaction, which a binding cannot interleave.
    func create(_ order: OrderRecord, event: NewOrderEvent, terms: SaleTerms) async throws(StorageError) -> CreateResult

    /// The order, or `nil`.
    func order(_ outTradeNo: String) async throws(StorageError) -> OrderRecord?

    /// The orders WeChat paid with this `transaction_id` (normally one).
    func orders(transactionID: String) async throws(StorageError) -> [OrderRecord]

    /// A page of the user's orders, newest first (`createdAt` descending, then `outTradeNo`
    /// descending): up to `limit` orders sorting after `after` (from the newest when nil), and the
    /// key of the next page when there are more. Stable under concurrent inserts (see `OrderPageKey`).
    func orders(userID: String, limit: Int, after: OrderPageKey?) async throws(StorageError) -> OrderPage

    /// A page of the orders carrying at least one of `flags` (the support attention list), newest
    /// first, paged like `orders(userID:…)`: `ConsoleStore.searchOrders` with those flags.
    func orders(flagged flags: Set<OrderFlag>, limit: Int, after: OrderPageKey?) async throws(StorageError) -> OrderPage

    /// Records the `prepay_id` from `unifiedorder`, replacing an earlier one (they expire after two
    /// hours), with what the same answer gave for the client (NATIVE's `code_url`, MWEB's
    /// `mweb_url`), and `event`, if any, in the same transaction. Returns the updated order, or
    /// `nil` if unknown (and then nothing is written).
    func setPrepay(_ outTradeNo: String, prepay: StoredPrepay, issuedAt: Date, event: NewOrderEvent?)
        async throws(StorageError) -> OrderRecord?

    /// Sets a bookkeeping time. Returns whether the order exists.
    func touch(_ outTradeNo: String, _ timestamp: OrderTimestamp, at: Date) async throws(StorageError) -> Bool

    /// Adds flags outside a transition (e.g. an amount mismatch seen in a notify). Returns the
    /// updated order, or `nil` if unknown.
    func addFlags(_ outTradeNo: String, _ flags: Set<OrderFlag>, at: Date) async throws(StorageError) -> OrderRecord?

    /// THE door: in one transaction, moves the order to `transition.to` if it is in one of
    /// `transition.allowedFrom` (and has `expectedAmount`, when given), storing its payment details
    /// (WeChat's transaction id, the payment time, the App Store transaction); only if the row
    /// changed, appends a `state_changed` event and inserts `transition.outbox`. A
    /// `transition.receipt` is written in the same transaction, changed or not (after the
    /// `state_changed` event). `IAPStore.creditAppleTransaction` passes through this same door.
    func transition(_ transition: OrderTransition) async throws(StorageError) -> TransitionResult

    // MARK: Timeline

    /// Appends an event. Returns it with its id, or `nil` if the order is unknown.
    func appendEvent(_ outTradeNo: String, _ event: NewOrderEvent) async throws(StorageError) -> OrderEvent?

    /// Appends an event unless the order's timeline has a line of its kind (`.kindAndDetail`: and
    /// its very detail) written after `quietSince`: however many callers race, one such line per
    /// quiet period (the check and the insert are one step under the order's write lock). Returns
    /// the event, or `nil` if the order is unknown or such a line exists.
    func appendEvent(_ outTradeNo: String, _ event: NewOrderEvent, quietSince: Date, matching: QuietLineMatch)
        async throws(StorageError) -> OrderEvent?

    /// The order's timeline in the order it was written.
    func events(_ outTradeNo: String) async throws(StorageError) -> [OrderEvent]

    // MARK: Reconciliation

    /// Leases up to `limit` open orders (NOTPAY or USERPAYING), least recently queried first (an
    /// order never queried counts from its creation, so fresh orders come oldest first), created at or before
    /// `cutoff` and with no notify after it, whose lease is free at `now`. Each is leased to
    /// `claimant` until `leaseUntil`, so concurrent sweepers never get the same order.
    func claimOpenOrders(
        noNotifySince cutoff: Date, now: Date, limit: Int, claimant: String, leaseUntil: Date
    ) async throws(StorageError) -> [OrderRecord]

    /// Ends `claimant`'s lease early. Returns whether it held one.
    func releaseClaim(_ outTradeNo: String, claimant: String) async throws(StorageError) -> Bool

    /// Orders paid (SUCCESS or REFUND) with `paidAt` in `from..<to`, earliest first: the local side
    /// of the daily bill comparison.
    func paidOrders(from: Date, to: Date) async throws(StorageError) -> [OrderRecord]

    // MARK: Outbox

    /// Leases up to `limit` pending events due at `now` whose lease is free, earliest due first,
    /// to `claimant` until `leaseUntil`. An event of type `OutboxEvent.oneAtATimePerUser` is not
    /// leased while another of its user's is (to any claimant, its lease not run out); several of
    /// one user's free at once may be leased together, and the dispatcher sends them in turn.
    func dueOutboxEvents(now: Date, limit: Int, claimant: String, leaseUntil: Date) async throws(StorageError)
        -> [OutboxEvent]

    /// Marks a delivery acknowledged. Returns `false` if unknown or already delivered.
    func markDelivered(_ id: String, at: Date) async throws(StorageError) -> Bool

    /// Records a failed attempt and when to try again. Returns `false` unless the event is pending.
    func reschedule(_ id: String, nextAttemptAt: Date, attempts: Int, lastError: String) async throws(StorageError)
        -> Bool

    /// Records the last failed attempt (the count goes up by one, as `reschedule`'s would) and gives
    /// up on the event until a person redrives it. Returns `false` unless it is pending.
    func deadLetter(_ id: String, at: Date, lastError: String) async throws(StorageError) -> Bool

    /// Makes a dead event pending again, due at `at`, with its attempt count reset. Returns `false`
    /// unless it was dead.
    func redrive(_ id: String, at: Date) async throws(StorageError) -> Bool

    /// One outbox event, or `nil`.
    func outboxEvent(id: String) async throws(StorageError) -> OutboxEvent?

    /// The order's outbox events, oldest first.
    func outboxEvents(_ outTradeNo: String) async throws(StorageError) -> [OutboxEvent]

    // MARK: Operations

    /// Whether the store answers a trivial query on both its read and write paths (for /readyz).
    func isHealthy() async -> Bool

    /// The database's own consistency check: `ok` when healthy, otherwise its findings.
    func integrityCheck() async throws(StorageError) -> String

    /// Gauges for metrics.
    func counts() async throws(StorageError) -> StoreCounts

    /// Finishes queued work and releases the database. Later calls fail with `.closed`.
    func close() async
}

extension OrderStore {
    /// `create(_:event:terms:)` unchecked against the catalog bound in the database: for orders
    /// that name no product, tools and tests.
    public func create(_ order: OrderRecord, event: NewOrderEvent) async throws(StorageError) -> CreateResult {
        try await create(order, event: event, terms: .unchecked)
    }

    /// `transition(_:)` with its fields as arguments; see `OrderTransition`.
    public func transition(
        _ outTradeNo: String,
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
    ) async throws(StorageError) -> TransitionResult {
        try await transition(
            OrderTransition(
                outTradeNo: outTradeNo, to: to, from: allowedFrom, transactionID: transactionID, paidAt: paidAt,
                expectedAmount: expectedAmount, detail: detail, outbox: outbox, followUp: followUp,
                addingFlags: addingFlags, at: at,
                receipt: receipt, apple: apple, lastRead: lastRead))
    }

    /// `appendEvent(_:_:)` with the event's fields as arguments.
    public func appendEvent(_ outTradeNo: String, kind: String, detail: String, at: Date) async throws(StorageError)
        -> OrderEvent?
    {
        try await appendEvent(outTradeNo, NewOrderEvent(kind: kind, detail: detail, at: at))
    }

    /// One line of a kind per quiet period, whatever its detail.
    public func appendEvent(_ outTradeNo: String, _ event: NewOrderEvent, quietSince: Date) async throws(StorageError)
        -> OrderEvent?
    {
        try await appendEvent(outTradeNo, event, quietSince: quietSince, matching: .kind)
    }

    /// `setPrepay` without an event.
    public func setPrepay(_ outTradeNo: String, prepayID: String, issuedAt: Date) async throws(StorageError)
        -> OrderRecord?
    {
        try await setPrepay(outTradeNo, prepay: StoredPrepay(prepayID: prepayID), issuedAt: issuedAt, event: nil)
    }

    /// `setPrepay` of a prepay_id alone (an APP or JSAPI order's).
    public func setPrepay(_ outTradeNo: String, prepayID: String, issuedAt: Date, event: NewOrderEvent?)
        async throws(StorageError) -> OrderRecord?
    {
        try await setPrepay(outTradeNo, prepay: StoredPrepay(prepayID: prepayID), issuedAt: issuedAt, event: event)
    }

    /// The user's `limit` most recent orders.
    public func orders(userID: String, limit: Int) async throws(StorageError) -> [OrderRecord] {
        try await orders(userID: userID, limit: limit, after: nil).orders
    }

    /// The user's 100 most recent orders.
    public func orders(userID: String) async throws(StorageError) -> [OrderRecord] {
        try await orders(userID: userID, limit: 100)
    }
}
