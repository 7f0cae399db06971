// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore: EntitlementStore {
    public func paidOrders(userID: String) async throws(StorageError) -> [PaidOrder] {
        // The (user_id, created_at) index finds the user's orders; the few that were paid are
        // sorted here, the refunds' sum read by their own index on out_trade_no.
        try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + PaidOrder.columns + """
                     FROM orders WHERE user_id = ? AND state IN ('SUCCESS', 'REFUND') AND paid_at IS NOT NULL
                    ORDER BY paid_at, out_trade_no
                    """,
                userID, decode: PaidOrder.init(row:))
        }
    }
}
