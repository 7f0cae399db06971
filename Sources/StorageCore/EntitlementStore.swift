// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A payment a user's entitlements are computed from: an order that was paid (SUCCESS, or REFUND
/// after it), with only the facts the computation reads and what its successful refunds gave back.
/// Read fresh every time, and slim so that reading a user's hundred payments costs about what
/// reading one whole order does.
public struct PaidOrder: Sendable, Hashable {
    public var outTradeNo: String
    public var amount: Int
    public var state: OrderState
    public var channel: OrderChannel
    public var paidAt: Date
    public var productID: String?
    public var appleProductID: String?
    /// The App Store subscription or purchase chain, for an App Store order.
    public var originalTransactionID: String?
    /// The App Store transaction that paid it, for an App Store order: which of a subscription's
    /// payments is its latest, and so whose the subscription's state is.
    public var appleTransactionID: String?
    /// The sum of the order's SUCCESS refunds, in the order's unit. Read only for a WeChat order in
    /// REFUND (a refund succeeding is what moves it there); 0 otherwise, and for an App Store order
    /// (Apple refunds the whole transaction, which moves the order to REFUND).
    public var refundedAmount: Int

    public init(outTradeNo: String, amount: Int, state: OrderState, channel: OrderChannel, paidAt: Date,
                productID: String?, appleProductID: String?, originalTransactionID: String?, refundedAmount: Int,
                appleTransactionID: String? = nil) {
        self.outTradeNo = outTradeNo
        self.amount = amount
        self.state = state
        self.channel = channel
        self.paidAt = paidAt
        self.productID = productID
        self.appleProductID = appleProductID
        self.originalTransactionID = originalTransactionID
        self.refundedAmount = refundedAmount
        self.appleTransactionID = appleTransactionID
    }

    /// The payment of a paid `order` (nil when it was never paid).
    public init?(order: OrderRecord, refundedAmount: Int) {
        guard let paidAt = order.paidAt else { return nil }
        self.init(outTradeNo: order.outTradeNo, amount: order.amount, state: order.state, channel: order.channel,
                  paidAt: paidAt, productID: order.productID, appleProductID: order.appleProductID,
                  originalTransactionID: order.originalTransactionID, refundedAmount: refundedAmount,
                  appleTransactionID: order.appleTransactionID)
    }
}

/// What a user's entitlements are computed from: their payments, and the states of the App Store
/// subscriptions among them (`SubscriptionStore`). No store keeps entitlements: they follow from
/// these, so no lost event can leave one stale.
public protocol EntitlementStore: SubscriptionStore {
    /// Every order of `userID` that was ever paid (state SUCCESS or REFUND, `paidAt` set), each
    /// with its refunded amount, oldest payment first (`paidAt`, then `outTradeNo` bytewise).
    /// One statement over the `(user_id, paid_at)` index of paid orders.
    func paidOrders(userID: String) async throws(StorageError) -> [PaidOrder]

    /// Every order credited by a transaction of the App Store subscription `originalTransactionID`,
    /// whoever's (`IAPStore` has the same read): a subscription that went on under another user
    /// of a shared App Store account ended the earlier user's period where their payment began.
    func orders(originalTransactionID: String) async throws(StorageError) -> [OrderRecord]

    /// The terms on record (`BindingStore`) of those of `productIDs` that have some: product id →
    /// terms. Entitlements are computed from them where they differ from the catalog in force (an
    /// instance whose catalog is behind another's reload).
    func productTerms(_ productIDs: [String]) async throws(StorageError) -> [String: String]

    /// Writes an `entitlement.changed` row on its own, for a change of a user's entitlements no
    /// payment or refund of theirs made (the subscription they held went on under another user).
    func announce(_ event: OutboxEvent) async throws(StorageError)
}

extension PaidOrder {
    /// The columns `paidOrders` selects, in `init(row:)`'s order; the refunds' sum is looked up
    /// (by `refunds_by_order`) only for a WeChat order in REFUND. The state and channel come as
    /// numbers (any other word as -1, which the decoder refuses): matching a hundred rows' words
    /// as strings was a tenth of an entitlement read. Every integer here is one the statement
    /// guarantees: `amount` is NOT NULL, each CASE has an ELSE.
    package static let columns: SQL = """
        out_trade_no, amount, CASE state WHEN 'SUCCESS' THEN 0 WHEN 'REFUND' THEN 1 ELSE -1 END, \
        CASE channel WHEN 'wechat' THEN 0 WHEN 'apple' THEN 1 ELSE -1 END, paid_at, product_id, apple_product_id, \
        original_transaction_id, \
        CASE WHEN state = 'REFUND' AND channel = 'wechat' THEN CAST(COALESCE((SELECT SUM(r.amount) FROM refunds r \
        WHERE r.out_trade_no = orders.out_trade_no AND r.state = 'SUCCESS'), 0) AS BIGINT) ELSE 0 END, \
        apple_transaction_id
        """

    /// One row of `columns`. Inlinable so that each store's read is specialized for its row type:
    /// a hundred rows of ten columns through the protocol's witnesses were a visible part of an
    /// entitlement read.
    @inlinable
    package init(row: some StoreRow) throws(StorageError) {
        let state: OrderState, channel: OrderChannel
        switch try row.guaranteedInt64(2) {
        case 0: state = .success
        case 1: state = .refund
        default: throw .unexpectedRow
        }
        switch try row.guaranteedInt64(3) {
        case 0: channel = .wechat
        case 1: channel = .apple
        default: throw .unexpectedRow
        }
        self.init(outTradeNo: try row.text(0), amount: Int(try row.guaranteedInt64(1)), state: state, channel: channel,
                  paidAt: try row.date(4), productID: try row.optionalText(5), appleProductID: try row.optionalText(6),
                  originalTransactionID: try row.optionalText(7), refundedAmount: Int(try row.guaranteedInt64(8)),
                  appleTransactionID: try row.optionalText(9))
    }
}
