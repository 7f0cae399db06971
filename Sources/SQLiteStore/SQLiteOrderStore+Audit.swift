// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore: AuditStore {
    /// Part of migration 4. The triggers make the log evidence: no UPDATE or DELETE succeeds,
    /// whoever issues it.
    static let auditSchema: SQL = """
        CREATE TABLE audit_log (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at INTEGER NOT NULL,
            actor TEXT NOT NULL,
            channel TEXT NOT NULL,
            role TEXT NOT NULL,
            action TEXT NOT NULL,
            out_trade_no TEXT,
            target TEXT,
            address TEXT,
            outcome TEXT NOT NULL,
            detail TEXT NOT NULL
        ) STRICT;
        CREATE INDEX audit_log_by_actor ON audit_log (actor, id);
        CREATE INDEX audit_log_by_order ON audit_log (out_trade_no, id) WHERE out_trade_no IS NOT NULL;
        CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
        CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
        """

    public func appendAudit(_ entry: NewAuditEntry) async throws(StorageError) -> AuditEntry {
        try entry.validate()
        return try await write { db throws(StorageError) in
            guard
                let stored = try db.row(
                    "INSERT INTO audit_log (" + AuditEntry.insertColumns
                        + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING " + AuditEntry.columns,
                    entry.at, entry.actor, entry.channel, entry.role, entry.action, entry.outTradeNo, entry.target,
                    entry.address, entry.outcome, entry.detail, decode: AuditEntry.init(row:))
            else { throw .unexpectedRow }
            return stored
        }
    }

    public func auditEntries(_ query: AuditQuery, limit: Int, before: Int64?) async throws(StorageError) -> AuditPage {
        guard limit > 0 else { return AuditPage(entries: [], nextBefore: nil) }
        try query.validate()
        let rows = try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + AuditEntry.columns + """
                     FROM audit_log WHERE id < ?1 AND (?2 IS NULL OR actor = ?2) AND (?3 IS NULL OR out_trade_no = ?3)
                        AND (?4 IS NULL OR action = ?4)
                    ORDER BY id DESC LIMIT ?5
                    """,
                before ?? Int64.max, query.actor, query.outTradeNo, query.action, limit + 1, decode: AuditEntry.init(row:))
        }
        return AuditPage(rows: rows, limit: limit)
    }
}
