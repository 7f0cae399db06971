// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

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
            // That commits on a full disk too (it writes nothing): the writes that failed there say it.
            return read == 1 && written == 1 && !writer.failedWritesRecently
        } catch {
            return false
        }
    }

    /// SQLite's own check of the file (`PRAGMA integrity_check`), then the console's and the audit
    /// log's rules (`ConsoleIntegrity`), the audit log's append-only triggers, and its id sequence:
    /// "ok", or one line a finding.
    public func integrityCheck() async throws(StorageError) -> String {
        try await read { db throws(StorageError) in
            var findings = try db.rows("PRAGMA integrity_check", decode: { row throws(StorageError) in try row.text(0) })
                .filter { $0 != "ok" }
            for rule in ConsoleIntegrity.rules {
                let count = try db.row(rule.violations, decode: { row throws(StorageError) in try row.int(0) }) ?? 0
                if count > 0 { findings.append(ConsoleIntegrity.line(count, rule)) }
            }
            let triggers = try db.row("""
                SELECT COUNT(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'audit_log'
                    AND name IN ('audit_log_no_update', 'audit_log_no_delete')
                """, decode: { row throws(StorageError) in try row.int(0) }) ?? 0
            if triggers != 2 { findings.append("the audit log's append-only triggers are missing (\(2 - triggers) of 2)") }
            // AUTOINCREMENT never hands out an id twice only while its sequence is at the last id.
            let behind = try db.row("""
                SELECT (SELECT COALESCE(MAX(id), 0) FROM audit_log)
                     > COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'audit_log'), 0)
                """, decode: { row throws(StorageError) in try row.int(0) }) ?? 0
            if behind != 0 { findings.append("the audit log's id sequence is behind its last entry: ids could be handed out again") }
            return findings.isEmpty ? "ok" : findings.joined(separator: "\n")
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
                let inFlight = try db.rows(
                    """
                    SELECT api_version, SUM(n) FROM (
                        SELECT api_version, COUNT(*) AS n FROM orders WHERE state IN ('NOTPAY', 'USERPAYING') AND channel = 'wechat'
                            GROUP BY api_version
                        UNION ALL
                        SELECT o.api_version, COUNT(*) FROM refunds r JOIN orders o ON o.out_trade_no = r.out_trade_no
                            WHERE r.state = 'PROCESSING' GROUP BY o.api_version
                    ) GROUP BY api_version
                    """,
                    decode: { row throws(StorageError) in (try row.text(0), try row.int(1)) })
                try db.execute("COMMIT")
                var counts = StoreCounts(
                    ordersByState: byState, outboxPending: pending?.0 ?? 0, outboxDead: dead ?? 0,
                    oldestPendingOutboxAt: pending?.1)
                counts.inFlightByAPIVersion = Dictionary(inFlight, uniquingKeysWith: +)
                return counts
            } catch {
                try? db.execute("ROLLBACK")
                throw error
            }
        }
    }
}
