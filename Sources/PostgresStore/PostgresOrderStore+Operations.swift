// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension PostgresOrderStore {
    public func isHealthy() async -> Bool {
        do {
            // Both paths: a read, and a write transaction on a server that accepts writes (a
            // standby answers reads but would refuse every settlement).
            let read = try await read { db throws(StorageError) in
                try db.run(PGQuery("SELECT 1::bigint")).first { row throws(StorageError) in try row.int(0) }
            }
            let writable = try await write(key: "") { db throws(StorageError) in
                (try db.run(PGQuery("SELECT NOT pg_is_in_recovery()")).first { row throws(StorageError) in try row.bool(0) },
                 nil)
            }
            return read == 1 && writable == true
        } catch {
            return false
        }
    }

    /// PostgreSQL has no whole-database check like SQLite's `integrity_check`. This runs the
    /// `amcheck` extension's B-tree and heap checks on the store's tables when the extension is
    /// installed (`CREATE EXTENSION amcheck`, by a superuser), and checks that no event or outbox
    /// row points at a missing order. `ok`, or one line per finding.
    public func integrityCheck() async throws(StorageError) -> String {
        try await read { db throws(StorageError) in
            var findings: [String] = []
            let orphans = try db.run(PGQuery("""
                SELECT (SELECT COUNT(*) FROM order_events e WHERE NOT EXISTS
                            (SELECT 1 FROM orders o WHERE o.out_trade_no = e.out_trade_no))
                     + (SELECT COUNT(*) FROM outbox x WHERE NOT EXISTS
                            (SELECT 1 FROM orders o WHERE o.out_trade_no = x.out_trade_no))
                     + (SELECT COUNT(*) FROM refunds r WHERE NOT EXISTS
                            (SELECT 1 FROM orders o WHERE o.out_trade_no = r.out_trade_no))
                """)).first { row throws(StorageError) in try row.int(0) } ?? 0
            if orphans > 0 { findings.append("\(orphans) event, outbox or refund rows of missing orders") }
            findings += try Self.consoleFindings(db)
            do throws(StorageError) {
                let heap = try db.run(PGQuery("SELECT wxpay_amcheck()")).first { row throws(StorageError) in try row.optionalInt64(0) }
                if let heap = heap ?? nil, heap > 0 { findings.append("verify_heapam: \(heap) findings") }
            } catch {
                guard error == .corrupt || error == .other else { throw error }
                findings.append("amcheck: \(error.debugDescription)")
            }
            return findings.isEmpty ? "ok" : findings.joined(separator: "\n")
        }
    }

    public func counts() async throws(StorageError) -> StoreCounts {
        try await read { db throws(StorageError) in
            // One statement, so the numbers describe one instant.
            let rows = try db.run(PGQuery("""
                SELECT 'state', state, COUNT(*), NULL::timestamptz FROM orders GROUP BY state
                UNION ALL
                SELECT 'pending', '', COUNT(*), MIN(created_at) FROM outbox
                    WHERE delivered_at IS NULL AND dead_at IS NULL
                UNION ALL
                SELECT 'dead', '', COUNT(*), NULL FROM outbox WHERE dead_at IS NOT NULL AND delivered_at IS NULL
                UNION ALL
                SELECT 'in_flight', api_version, COUNT(*), NULL FROM orders WHERE state IN ('NOTPAY', 'USERPAYING') AND channel = 'wechat'
                    GROUP BY api_version
                UNION ALL
                SELECT 'in_flight', o.api_version, COUNT(*), NULL FROM refunds r JOIN orders o ON o.out_trade_no = r.out_trade_no
                    WHERE r.state = 'PROCESSING' GROUP BY o.api_version
                """)).rows { row throws(StorageError) in
                (try row.text(0), try row.text(1), try row.int(2), try row.optionalDate(3))
            }
            var byState = Dictionary(uniqueKeysWithValues: OrderState.allCases.map { ($0, 0) })
            var pending = 0
            var dead = 0
            var oldest: Date?
            var inFlight: [String: Int] = [:]
            for (kind, key, count, at) in rows {
                switch kind {
                case "state":
                    guard let state = OrderState(rawValue: key) else { throw .unexpectedRow }
                    byState[state] = count
                case "pending":
                    pending = count
                    oldest = at
                case "in_flight":
                    inFlight[key, default: 0] += count
                default:
                    dead = count
                }
            }
            var counts = StoreCounts(ordersByState: byState, outboxPending: pending, outboxDead: dead, oldestPendingOutboxAt: oldest)
            counts.inFlightByAPIVersion = inFlight
            return counts
        }
    }
}
