// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore {
    public func claimOpenOrders(
        noNotifySince cutoff: Date, now: Date, limit: Int, claimant: String, leaseUntil: Date
    ) async throws(StorageError) -> [OrderRecord] {
        guard limit > 0 else { return [] }
        let claimed = try await write { db throws(StorageError) in
            // Select and lease in one statement inside the write transaction: a second sweeper's
            // claim runs after this commit and sees the lease.
            try db.rows(
                """
                UPDATE orders SET claimed_by = ?1, claimed_until = ?2
                WHERE out_trade_no IN (
                    SELECT out_trade_no FROM orders
                    WHERE state IN ('NOTPAY', 'USERPAYING') AND created_at <= ?3
                        AND (last_notify_at IS NULL OR last_notify_at <= ?3)
                        AND (claimed_until IS NULL OR claimed_until <= ?4)
                    -- Least recently asked about first (never asked: by creation), so a backlog
                    -- larger than one sweep's batch rotates instead of re-checking the oldest
                    -- unpaid orders forever while a newer, paid one waits.
                    ORDER BY COALESCE(last_queried_at, created_at), created_at, out_trade_no
                    LIMIT ?5)
                RETURNING
                """ + " " + OrderRecord.columns,
                claimant, leaseUntil, cutoff, now, limit, decode: OrderRecord.init(row:))
        }
        // RETURNING yields rows in no promised order.
        return claimed.inClaimOrder()
    }

    public func releaseClaim(_ outTradeNo: String, claimant: String) async throws(StorageError) -> Bool {
        try await write { db throws(StorageError) in
            try db.run(
                """
                UPDATE orders SET claimed_by = NULL, claimed_until = NULL
                WHERE out_trade_no = ?1 AND claimed_by = ?2
                """, outTradeNo, claimant) == 1
        }
    }
}
