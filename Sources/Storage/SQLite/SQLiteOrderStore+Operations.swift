// SPDX-License-Identifier: Apache-2.0
import Foundation

extension SQLiteOrderStore {
    public func isHealthy() async -> Bool {
        do {
            // Both paths: a wedged writer must fail readiness even while reads still work.
            let read = try await read { db throws(StorageError) in
                try db.row("SELECT 1", decode: { row throws(StorageError) in try row.int(0) })
            }
            let written = try await write { db throws(StorageError) in
                try db.row("SELECT 1", decode: { row throws(StorageError) in try row.int(0) })
            }
            return read == 1 && written == 1
        } catch {
            return false
        }
    }

    public func integrityCheck() async throws(StorageError) -> String {
        try await read { db throws(StorageError) in
            try db.rows("PRAGMA integrity_check", decode: { row throws(StorageError) in try row.text(0) })
                .joined(separator: "\n")
        }
    }

    public func counts() async throws(StorageError) -> StoreCounts {
        try await read { db throws(StorageError) in
            // One read transaction, so the numbers describe one instant.
            try db.execute("BEGIN")
            do throws(StorageError) {
                var byState = Dictionary(uniqueKeysWithValues: OrderState.allCases.map { ($0, 0) })
                let rows = try db.rows(
                    "SELECT state, COUNT(*) FROM orders GROUP BY state",
                    decode: { row throws(StorageError) in (try row.text(0), try row.int(1)) })
                for (state, count) in rows {
                    guard let state = OrderState(rawValue: state) else { throw .unexpectedRow }
                    byState[state] = count
                }
                let pending = try db.row(
                    "SELECT COUNT(*), MIN(created_at) FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL",
                    decode: { row throws(StorageError) in (try row.int(0), try row.optionalDate(1)) })
                let dead = try db.row(
                    "SELECT COUNT(*) FROM outbox WHERE dead_at IS NOT NULL AND delivered_at IS NULL",
                    decode: { row throws(StorageError) in try row.int(0) })
                try db.execute("COMMIT")
                return StoreCounts(
                    ordersByState: byState, outboxPending: pending?.0 ?? 0, outboxDead: dead ?? 0,
                    oldestPendingOutboxAt: pending?.1)
            } catch {
                try? db.execute("ROLLBACK")
                throw error
            }
        }
    }
}
