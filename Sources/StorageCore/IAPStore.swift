// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The App Store side of the orders, in the same database: the ledger of every verified App Store
/// transaction, the matching of a transaction to its order and its credit through the one door, and
/// the notifications already handled.
///
/// The promise it keeps (reliability.md C7): **a transaction id credits one order, ever**, whatever
/// arrives at once — the app's report, its retry after a restart, the notification, the reconciler.
/// The database holds it too: the ledger's primary key is the transaction id and its order is set
/// once (a trigger refuses a change), and `orders.apple_transaction_id` is unique.
///
/// Every method is atomic; writes return only once durable. Implementations: `SQLiteOrderStore`,
/// `PostgresOrderStore`. The bookkeeping of Apple's recovery APIs (the notification history's
/// progress, consumption requests) is in `AppStoreRecoveryStore.swift`.
public protocol IAPStore: AppStoreBackfillStore, AppStoreConsumptionStore {
    /// Matches a verified transaction to its order and credits it, all in one transaction:
    ///
    /// 1. the ledger row for `credit.transaction` is inserted if absent (the claim of the id); if it
    ///    already names an order → `.alreadyCredited`; if Apple revoked it (now or before) →
    ///    `.revoked`, and it never credits anything;
    /// 2. the candidates, in order: the order whose `appAccountToken` is the transaction's (open or
    ///    CLOSED, of this product; its user wins over `credit.userID`, and then `credit.userID` is
    ///    replaced by it for the steps below), `credit.outTradeNo` if it is that user's open App Store
    ///    order for the product, the user's oldest open App Store orders for the product;
    /// 3. the first candidate the one door (`OrderStore.transition`'s conditional update) moves to
    ///    SUCCESS is credited: `paid_at` the purchase date, the transaction's ids and environment,
    ///    `credit.outbox` made from the order as it reads once paid, `paid_after_close` for a CLOSED
    ///    token order; then the ledger names the order, and `credit.events` go on its timeline;
    /// 4. no candidate: `credit.newOrder` (when given) is inserted, credited the same way and
    ///    flagged `matched_without_order` → `.credited(…, .newOrder)`; without one → `.unmatched`,
    ///    the ledger row waiting for a later report or check.
    ///
    /// A PostgreSQL store does the same in one transaction: the ledger insert (`ON CONFLICT DO
    /// NOTHING`, then `SELECT … FOR UPDATE`) serialises concurrent credits of one id, and a candidate
    /// the conditional update finds changed meanwhile is skipped for the next one.
    func creditAppleTransaction(_ credit: AppleCredit) async throws(StorageError) -> AppleCreditResult

    /// The ledger row, or nil if the gateway never verified this transaction.
    func appleTransaction(_ transactionID: String) async throws(StorageError) -> AppleTransactionRecord?

    /// The ledger rows sharing `originalTransactionID` (a subscription's renewals), oldest first.
    func appleTransactions(originalTransactionID: String) async throws(StorageError) -> [AppleTransactionRecord]

    /// Records Apple's refund or revocation of a transaction (inserting its ledger row if the
    /// gateway had not seen it: it will never credit an order then). Idempotent, and the latest
    /// revocation date is kept: a refund Apple made again after a reversal the gateway has not
    /// heard of yet is the one that stands when that reversal, older, arrives. Returns the row
    /// afterwards. The order it credited, if any, is moved to REFUND by the caller, through the door.
    func recordAppleRevocation(_ facts: AppleTransactionFacts, source: String, at: Date) async throws(StorageError)
        -> AppleTransactionRecord

    /// Records that Apple reversed a refund of the transaction (REFUND_REVERSED) at `reversedAt`:
    /// its revocation is cleared unless it is dated after `reversedAt` (a newer refund), and a
    /// revocation dated at or before `reversedAt` that arrives later is never applied. Inserts the
    /// ledger row if the gateway had not seen the transaction. Returns the row afterwards. The
    /// order it credited, if REFUND, is moved back to SUCCESS by the caller, through the door.
    func recordAppleRefundReversal(_ facts: AppleTransactionFacts, reversedAt: Date, source: String, at: Date)
        async throws(StorageError) -> AppleTransactionRecord

    /// The order whose `appAccountToken` is `token`, or nil.
    func order(appAccountToken token: String) async throws(StorageError) -> OrderRecord?

    /// The order credited by this App Store transaction (none or one).
    func orders(appleTransactionID: String) async throws(StorageError) -> [OrderRecord]

    /// The orders credited by transactions with this original transaction id, oldest first.
    func orders(originalTransactionID: String) async throws(StorageError) -> [OrderRecord]

    /// The transaction most recently credited to one of the user's orders, if any: the handle on
    /// the user's App Store account for Get Transaction History.
    func latestAppleTransaction(userID: String) async throws(StorageError) -> AppleAnchor?

    /// One anchor per user and environment among the App Store orders paid (SUCCESS) at or after
    /// `paidSince`, at most `limit`: the accounts the daily Get Refund History check asks about.
    func appleRefundAnchors(paidSince: Date, limit: Int) async throws(StorageError) -> [AppleAnchor]

    /// The users with an App Store order for `appleProductID` open since before `at` (made by then,
    /// after `madeAfter`, expiring after `at`, and still open), at most `limit`: who might have made
    /// a purchase of it on an App Store account at that moment and not been credited.
    func usersWithAppleOrdersOpen(appleProductID: String, at: Date, madeAfter: Date, limit: Int) async throws(StorageError)
        -> [String]

    /// Verified transactions that credit no order and are not revoked, last checked (or, never
    /// checked, first seen) before `before`, least recently checked first, at most `limit`.
    func unmatchedAppleTransactions(before: Date, limit: Int) async throws(StorageError) -> [AppleTransactionRecord]

    /// Notes that an unmatched transaction was tried again (so the next try waits). Returns whether it exists.
    func markAppleTransactionChecked(_ transactionID: String, at: Date) async throws(StorageError) -> Bool

    /// How many verified transactions credit no order and are not revoked (a gauge for people).
    func unmatchedAppleTransactionCount() async throws(StorageError) -> Int

    /// Whether a notification with this UUID was handled already.
    func appStoreNotification(_ notificationUUID: String) async throws(StorageError) -> AppStoreNotificationRecord?

    /// Records a handled notification; `false` when its UUID was recorded already (a duplicate).
    func recordAppStoreNotification(_ notification: AppStoreNotificationRecord) async throws(StorageError) -> Bool
}

/// A request to credit one verified App Store transaction (see `IAPStore.creditAppleTransaction`).
public struct AppleCredit: Sendable {
    public var transaction: AppleTransactionFacts
    /// The user the purchase is believed to be for: the reporting user, or one inferred for a
    /// notification. Nil when nobody knows (then only the token can match).
    public var userID: String?
    /// The order the app named, if any.
    public var outTradeNo: String?
    /// The order to make and credit when nothing matches (NOTPAY, channel apple, for the product;
    /// its user is set to the matching's user), or nil to leave the transaction unmatched. Its
    /// out_trade_no must be unused.
    public var newOrder: AppleNewOrder?
    /// Where the transaction came from, e.g. `report (signed_transaction)`: the ledger's `source` for
    /// a new row, and the detail of the `state_changed` event.
    public var source: String
    /// The `order.paid` event, made from the order as it reads once credited (its flags included).
    public var outbox: @Sendable (OrderRecord) -> OutboxEvent?
    /// A second event made from the order as it reads once credited, inserted after `outbox` (the
    /// `entitlement.changed` marker of a purchase that grants something).
    public var followUp: @Sendable (OrderRecord) -> OutboxEvent? = { _ in nil }
    /// The timeline events saying how the order was found, made from the decision.
    public var events: @Sendable (AppleMatchDecision) -> [NewOrderEvent]
    public var at: Date
    /// Support assigns the purchase to `outTradeNo` (an unclaimed purchase, by hand): that order
    /// is the only candidate — no token, no 凑单, no new order — matched as `out_trade_no`, from
    /// NOTPAY, USERPAYING or CLOSED (an order that expired unpaid is what a lost purchase usually
    /// had), and its user must be `userID`. Nil: the usual matching.
    public var assignedBy: String?
    /// A subscription's renewal Apple charged by itself: it pays an order of its own (the token's,
    /// or `newOrder`), never one its user opened by 凑单 for a purchase still to come.
    public var renewal = false

    public init(transaction: AppleTransactionFacts, userID: String?, outTradeNo: String? = nil, newOrder: AppleNewOrder?,
                source: String, outbox: @escaping @Sendable (OrderRecord) -> OutboxEvent?,
                events: @escaping @Sendable (AppleMatchDecision) -> [NewOrderEvent] = { _ in [] }, at: Date) {
        self.transaction = transaction
        self.userID = userID
        self.outTradeNo = outTradeNo
        self.newOrder = newOrder
        self.source = source
        self.outbox = outbox
        self.events = events
        self.at = at
    }
}

/// The order a credit makes when no open order matches, and its `created` timeline event.
public struct AppleNewOrder: Sendable, Hashable {
    public var order: OrderRecord
    public var event: NewOrderEvent
    /// Flags the credit adds besides `matched_without_order` (`unknown_product` for a product the
    /// catalog does not have).
    public var flags: Set<OrderFlag>
    /// Whether no order was ever going to be made for it: a subscription's renewal (or upgrade),
    /// which Apple charges by itself. Such an order is not flagged `matched_without_order`: nobody
    /// needs to look at it.
    public var expected: Bool
    /// What the catalog that made it says its product grants (`OrderStore.create`'s check): a
    /// credit that would make it under terms the database does not hold throws `.termsChanged`
    /// and writes nothing.
    public var terms: SaleTerms

    public init(order: OrderRecord, event: NewOrderEvent, flags: Set<OrderFlag> = [], expected: Bool = false,
                terms: SaleTerms = .unchecked) {
        self.order = order
        self.event = event
        self.flags = flags
        self.expected = expected
        self.terms = terms
    }
}

/// Why a candidate order was passed over while matching, for the timeline.
public enum AppleMatchNote: Sendable, Hashable {
    /// The token names this order, but it sells another App Store product.
    case tokenOrderOtherProduct(outTradeNo: String, appleProductID: String?)
    /// The token names this order, but another transaction paid it already (the app reused a token).
    case tokenOrderAlreadyPaid(outTradeNo: String)
    /// The token names no order of this gateway.
    case tokenUnknown
    /// The out_trade_no the app gave is not an open App Store order of this user for this product.
    case outTradeNoNotUsable(outTradeNo: String)
}

/// How a credit found its order: what the timeline says about it.
public struct AppleMatchDecision: Sendable, Hashable {
    public var matchedBy: AppleMatch
    /// The order as credited.
    public var order: OrderRecord
    /// The state it was in before (NOTPAY, or CLOSED for a payment after a local close).
    public var previousState: OrderState
    public var notes: [AppleMatchNote]

    public init(matchedBy: AppleMatch, order: OrderRecord, previousState: OrderState, notes: [AppleMatchNote]) {
        self.matchedBy = matchedBy
        self.order = order
        self.previousState = previousState
        self.notes = notes
    }
}

/// What `IAPStore.creditAppleTransaction` did.
public enum AppleCreditResult: Sendable, Hashable {
    /// This call credited the order (and wrote its event, outbox row and ledger entry). Among
    /// concurrent credits of one transaction exactly one gets this.
    case credited(OrderRecord, AppleMatch)
    /// The transaction had credited this order before (nothing written).
    case alreadyCredited(OrderRecord, AppleMatch)
    /// Nothing to credit yet: no order has its token and no user is known. Its ledger row waits.
    case unmatched(AppleTransactionRecord)
    /// Apple revoked (refunded) it: it never credits an order (nothing else written).
    case revoked(AppleTransactionRecord)
}
