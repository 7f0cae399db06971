// SPDX-License-Identifier: Apache-2.0
import Foundation

/// An order that was paid (SUCCESS, or REFUND after it), with what its successful refunds gave
/// back: the facts a user's entitlements are computed from, read fresh every time.
public struct PaidOrder: Sendable, Hashable {
    public var order: OrderRecord
    /// The sum of the order's SUCCESS refunds, in the order's unit (0 for an App Store order:
    /// Apple refunds the whole transaction, which moves the order to REFUND).
    public var refundedAmount: Int

    public init(order: OrderRecord, refundedAmount: Int) {
        self.order = order
        self.refundedAmount = refundedAmount
    }
}

/// What a user's entitlements are computed from. No store keeps entitlements: they follow from
/// the payments, so no lost event can leave one stale.
public protocol EntitlementStore: Sendable {
    /// Every order of `userID` that was ever paid (state SUCCESS or REFUND, `paidAt` set), each
    /// with its refunded amount, oldest payment first (`paidAt`, then `outTradeNo`).
    func paidOrders(userID: String) async throws(StorageError) -> [PaidOrder]
}

extension PaidOrder {
    /// The columns `paidOrders` selects: the order's, then the refunded sum (SUCCESS refunds).
    package static let columns: SQL = OrderRecord.columns + """
        , CAST(COALESCE((SELECT SUM(r.amount) FROM refunds r \
        WHERE r.out_trade_no = orders.out_trade_no AND r.state = 'SUCCESS'), 0) AS BIGINT)
        """

    package init(row: some StoreRow) throws(StorageError) {
        self.init(order: try OrderRecord(row: row), refundedAmount: try row.int(29))
    }
}
