// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension PostgresOrderStore: EntitlementStore {
    public func paidOrders(userID: String) async throws(StorageError) -> [PaidOrder] {
        // Ties on paid_at broken bytewise, as SQLite compares, so both stores list alike.
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + PaidOrder.columns + """
                     FROM orders WHERE user_id = $1 AND state IN ('SUCCESS', 'REFUND') AND paid_at IS NOT NULL
                    ORDER BY paid_at, out_trade_no COLLATE "C"
                    """,
                userID)).rows(PaidOrder.init(row:))
        }
    }
}
