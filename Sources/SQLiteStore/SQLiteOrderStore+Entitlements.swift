// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore: EntitlementStore {
    public func paidOrders(userID: String) async throws(StorageError) -> [PaidOrder] {
        // One range of the (user_id, paid_at) index of paid orders, already in payment order; the
        // refunds' sum read by their own index, for a refunded WeChat order only.
        try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + PaidOrder.columns + """
                     FROM orders INDEXED BY orders_paid_by_user
                    WHERE user_id = ? AND paid_at IS NOT NULL AND state IN ('SUCCESS', 'REFUND')
                    ORDER BY paid_at, out_trade_no
                    """,
                userID, decode: PaidOrder.init(row:))
        }
    }
}

extension SQLiteOrderStore {
    /// Migration 11: a user's paid orders in payment order, the one range `paidOrders` reads.
    static let paidOrdersIndex: SQL = """
        CREATE INDEX orders_paid_by_user ON orders (user_id, paid_at, out_trade_no)
            WHERE user_id IS NOT NULL AND paid_at IS NOT NULL;
        """
}
