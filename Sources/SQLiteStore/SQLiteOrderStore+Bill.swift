// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore {
    public func paidOrders(from: Date, to: Date) async throws(StorageError) -> [OrderRecord] {
        try await read { db throws(StorageError) in
            // Once a day: the state index narrows to paid orders, and paid_at is filtered among them
            // (no paid_at index, so the hot write path pays nothing for this job).
            try db.rows(
                "SELECT " + OrderRecord.columns + """
                     FROM orders
                    WHERE state IN ('SUCCESS', 'REFUND') AND paid_at >= ?1 AND paid_at < ?2
                    ORDER BY paid_at, out_trade_no
                    """,
                from, to, decode: OrderRecord.init(row:))
        }
    }
}
