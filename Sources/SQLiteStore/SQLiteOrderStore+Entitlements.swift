// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore: EntitlementStore {
    public func paidOrders(userID: String) async throws(StorageError) -> [PaidOrder] {
        try await read { db throws(StorageError) in
            try db.rows(Self.paidOrdersQuery, userID, expecting: 64, decode: PaidOrder.init(row:))
        }
    }

    public func announce(_ event: OutboxEvent) async throws(StorageError) {
        try await write { db throws(StorageError) in try Self.insertOutbox(event, on: db) }
    }

    public func productTerms(_ productIDs: [String]) async throws(StorageError) -> [String: String] {
        try await read { db throws(StorageError) in
            var terms: [String: String] = [:]
            for id in productIDs {
                terms[id] = try db.row("SELECT value FROM bindings WHERE key = ?", ProductTerms.recordKey(id),
                                       decode: { row throws(StorageError) in try row.text(0) })
            }
            return terms
        }
    }

    /// One range of the index of paid orders (its condition is the WHERE clause, and it holds
    /// every column read), already in payment order; the refunds' sum read by their own index,
    /// for a refunded WeChat order only.
    static let paidOrdersQuery: SQL = "SELECT " + PaidOrder.columns + """
         FROM orders INDEXED BY orders_paid_by_user
        WHERE user_id = ? AND paid_at IS NOT NULL AND state IN ('SUCCESS', 'REFUND')
        ORDER BY paid_at, out_trade_no
        """
}

extension SQLiteOrderStore {
    /// Migration 11: a user's paid orders in payment order, the one range `paidOrders` reads.
    static let paidOrdersIndex: SQL = """
        CREATE INDEX orders_paid_by_user ON orders (user_id, paid_at, out_trade_no)
            WHERE user_id IS NOT NULL AND paid_at IS NOT NULL;
        """

    /// Migration 13: the same range, now holding every column `paidOrders` selects, so the read
    /// never leaves the index for the table's rows; and with the read's whole filter as its
    /// condition, so SQLite does not test each row's state again.
    static let coveringPaidOrdersIndex: SQL = """
        DROP INDEX orders_paid_by_user;
        CREATE INDEX orders_paid_by_user ON orders (user_id, paid_at, out_trade_no, amount, state, channel, product_id,
                                                    apple_product_id, original_transaction_id, apple_transaction_id)
            WHERE user_id IS NOT NULL AND paid_at IS NOT NULL AND state IN ('SUCCESS', 'REFUND');
        """
}
