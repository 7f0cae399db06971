// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

/// The audit log on PostgreSQL: one table every instance appends to.
extension PostgresOrderStore: AuditStore {
    /// Part of migration 3. As on SQLite, the database itself keeps the log append-only: an UPDATE,
    /// DELETE or TRUNCATE fails whoever issues it (the gateway's role included; only a superuser
    /// dropping the triggers could, and that is on the server's own log).
    static let auditSchema: [SQL] = [
        """
        CREATE TABLE audit_log (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at timestamptz NOT NULL,
            actor text NOT NULL,
            channel text NOT NULL,
            role text NOT NULL,
            action text NOT NULL,
            out_trade_no text,
            target text,
            address text,
            outcome text NOT NULL,
            detail text NOT NULL
        )
        """,
        "CREATE INDEX audit_log_by_actor ON audit_log (actor, id)",
        "CREATE INDEX audit_log_by_order ON audit_log (out_trade_no, id) WHERE out_trade_no IS NOT NULL",
        """
        CREATE FUNCTION wxpay_audit_log_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'audit_log is append-only' USING ERRCODE = 'insufficient_privilege';
        END $$
        """,
        """
        CREATE TRIGGER audit_log_no_update_or_delete BEFORE UPDATE OR DELETE ON audit_log
            FOR EACH ROW EXECUTE FUNCTION wxpay_audit_log_is_append_only()
        """,
        """
        CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
            FOR EACH STATEMENT EXECUTE FUNCTION wxpay_audit_log_is_append_only()
        """,
    ]

    public func appendAudit(_ entry: NewAuditEntry) async throws(StorageError) -> AuditEntry {
        try entry.validate()
        // An insert locks no row another write takes: one key for all of them.
        return try await write(key: "a:") { db throws(StorageError) in
            let stored = try db.run(PGQuery(
                "INSERT INTO audit_log (" + AuditEntry.insertColumns + """
                    ) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING
                    """ + " " + AuditEntry.columns,
                entry.at, entry.actor, entry.channel, entry.role, entry.action, entry.outTradeNo, entry.target,
                entry.address, entry.outcome, entry.detail)).first(AuditEntry.init(row:))
            guard let stored else { throw .unexpectedRow }
            return (stored, nil)
        }
    }

    public func auditEntries(_ query: AuditQuery, limit: Int, before: Int64?) async throws(StorageError) -> AuditPage {
        guard limit > 0 else { return AuditPage(entries: [], nextBefore: nil) }
        try query.validate()
        let rows = try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + AuditEntry.columns + """
                     FROM audit_log WHERE id < $1 AND ($2::text IS NULL OR actor = $2)
                        AND ($3::text IS NULL OR out_trade_no = $3) AND ($4::text IS NULL OR action = $4)
                    ORDER BY id DESC LIMIT $5
                    """,
                before ?? Int64.max, query.actor, query.outTradeNo, query.action, limit + 1)).rows(AuditEntry.init(row:))
        }
        return AuditPage(rows: rows, limit: limit)
    }
}
