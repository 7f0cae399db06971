// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension PostgresOrderStore: EntitlementStore {
    public func paidOrders(userID: String) async throws(StorageError) -> [PaidOrder] {
        // One range of the (user_id, paid_at) index of paid orders; ties on paid_at broken
        // bytewise, as SQLite compares, so both stores list alike.
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + PaidOrder.columns + """
                     FROM orders WHERE user_id = $1 AND paid_at IS NOT NULL AND state IN ('SUCCESS', 'REFUND')
                    ORDER BY paid_at, out_trade_no COLLATE "C"
                    """,
                userID)).rows(PaidOrder.init(row:))
        }
    }

    public func productTerms(_ productIDs: [String]) async throws(StorageError) -> [String: String] {
        try await read { db throws(StorageError) in
            var terms: [String: String] = [:]
            for id in productIDs {
                terms[id] = try db.run(PGQuery("SELECT value FROM bindings WHERE key = $1", ProductTerms.recordKey(id)))
                    .first { row throws(StorageError) in try row.text(0) }
            }
            return terms
        }
    }

    public func announce(_ event: OutboxEvent) async throws(StorageError) {
        try await write(key: "x:" + event.id) { db throws(StorageError) in
            _ = try db.run(Self.insertOutbox(event))
            return ((), nil)
        }
    }
}

extension PostgresOrderStore {
    /// Migration 12: a user's paid orders in payment order (out_trade_no bytewise, as the read
    /// sorts), the one range `paidOrders` reads.
    static let paidOrdersIndex: [SQL] = [
        """
        CREATE INDEX orders_paid_by_user ON orders (user_id, paid_at, out_trade_no COLLATE "C")
            WHERE user_id IS NOT NULL AND paid_at IS NOT NULL
        """,
    ]

    /// Migration 14: the same range, carrying the other columns `paidOrders` selects (an
    /// index-only scan wherever the visibility map allows) and the read's whole filter as its
    /// condition.
    static let coveringPaidOrdersIndex: [SQL] = [
        "DROP INDEX orders_paid_by_user",
        """
        CREATE INDEX orders_paid_by_user ON orders (user_id, paid_at, out_trade_no COLLATE "C")
            INCLUDE (amount, state, channel, product_id, apple_product_id, original_transaction_id, apple_transaction_id)
            WHERE user_id IS NOT NULL AND paid_at IS NOT NULL AND state IN ('SUCCESS', 'REFUND')
        """,
    ]
}
