// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension PostgresOrderStore {
    public func claimOpenOrders(
        noNotifySince cutoff: Date, now: Date, limit: Int, claimant: String, leaseUntil: Date
    ) async throws(StorageError) -> [OrderRecord] {
        guard limit > 0 else { return [] }
        let claimed = try await exclusive { db throws(StorageError) in
            // Select and lease in one statement; SKIP LOCKED leaves the rows another sweeper is
            // leasing at this moment to it, and a lease it committed meanwhile is seen when the row
            // is locked (READ COMMITTED re-checks the conditions on the newest version).
            try db.run(PGQuery(
                """
                WITH due AS MATERIALIZED (
                    SELECT out_trade_no AS due_key FROM orders
                    WHERE state IN ('NOTPAY', 'USERPAYING') AND created_at <= $3
                        AND (last_notify_at IS NULL OR last_notify_at <= $3)
                        AND (claimed_until IS NULL OR claimed_until <= $4)
                    -- Least recently asked about first (never asked: by creation), so a backlog
                    -- larger than one sweep's batch rotates.
                    ORDER BY COALESCE(last_queried_at, created_at), created_at, out_trade_no COLLATE "C"
                    LIMIT $5
                    FOR NO KEY UPDATE SKIP LOCKED)
                UPDATE orders SET claimed_by = $1, claimed_until = $2 FROM due WHERE out_trade_no = due.due_key
                RETURNING
                """ + " " + OrderRecord.columns,
                claimant, leaseUntil, cutoff, now, limit)).rows(OrderRecord.init(row:))
        }
        return claimed.inClaimOrder()
    }

    public func releaseClaim(_ outTradeNo: String, claimant: String) async throws(StorageError) -> Bool {
        try await write(key: Self.orderKey(outTradeNo)) { db throws(StorageError) in
            (try db.run(PGQuery(
                "UPDATE orders SET claimed_by = NULL, claimed_until = NULL WHERE out_trade_no = $1 AND claimed_by = $2",
                outTradeNo, claimant)).affectedRows == 1, nil)
        }
    }

    public func claimCall(_ call: ClaimedCall, for outTradeNo: String, now: Date, until: Date) async throws(StorageError)
        -> Bool
    {
        // One conditional UPDATE: of instances asking at once, the first to lock the row wins;
        // the others re-check the condition on its new version and change nothing.
        let query: PGQuery =
            switch call {
            case .orderQuery:
                PGQuery("""
                    UPDATE orders SET query_claimed_until = $2
                    WHERE out_trade_no = $1 AND state IN ('NOTPAY', 'USERPAYING')
                        AND (query_claimed_until IS NULL OR query_claimed_until <= $3)
                    """, outTradeNo, until, now)
            case .unifiedOrder:
                PGQuery("""
                    UPDATE orders SET prepay_claimed_until = $2
                    WHERE out_trade_no = $1 AND state IN ('NOTPAY', 'USERPAYING')
                        AND (prepay_claimed_until IS NULL OR prepay_claimed_until <= $3)
                    """, outTradeNo, until, now)
            }
        return try await write(key: Self.orderKey(outTradeNo)) { db throws(StorageError) in
            (try db.run(query).affectedRows == 1, nil)
        }
    }

    public func releaseCall(_ call: ClaimedCall, for outTradeNo: String, claimedUntil until: Date) async throws(StorageError) {
        let query: PGQuery =
            switch call {
            case .orderQuery:
                PGQuery("UPDATE orders SET query_claimed_until = NULL WHERE out_trade_no = $1 AND query_claimed_until = $2",
                        outTradeNo, until)
            case .unifiedOrder:
                PGQuery("UPDATE orders SET prepay_claimed_until = NULL WHERE out_trade_no = $1 AND prepay_claimed_until = $2",
                        outTradeNo, until)
            }
        try await write(key: Self.orderKey(outTradeNo)) { db throws(StorageError) in
            let released = try db.run(query).affectedRows == 1
            return ((), released ? outTradeNo : nil)
        }
    }

    public func paidOrders(from: Date, to: Date) async throws(StorageError) -> [OrderRecord] {
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + OrderRecord.columns + """
                     FROM orders WHERE state IN ('SUCCESS', 'REFUND') AND paid_at >= $1 AND paid_at < $2
                    ORDER BY paid_at, out_trade_no COLLATE "C"
                    """,
                from, to)).rows(OrderRecord.init(row:))
        }
    }
}
