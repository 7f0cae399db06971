// SPDX-License-Identifier: Apache-2.0
import StorageCore

extension PostgresOrderStore {
    /// The console's and the audit log's part of the integrity check: their rules
    /// (`ConsoleIntegrity`, the same SQL as SQLite's), the audit log's append-only triggers
    /// present and enabled, and its identity sequence not behind its last id.
    static func consoleFindings(_ db: PGConnection) throws(StorageError) -> [String] {
        var findings: [String] = []
        for rule in ConsoleIntegrity.rules {
            let count = try db.run(PGQuery(rule.violations)).first { row throws(StorageError) in try row.int(0) } ?? 0
            if count > 0 { findings.append(ConsoleIntegrity.line(count, rule)) }
        }
        // A disabled trigger (ALTER TABLE … DISABLE TRIGGER) guards nothing either.
        let triggers = try db.run(PGQuery("""
            SELECT COUNT(*) FROM pg_trigger WHERE tgrelid = 'audit_log'::regclass AND NOT tgisinternal
                AND tgenabled <> 'D' AND tgname IN ('audit_log_no_update_or_delete', 'audit_log_no_truncate')
            """)).first { row throws(StorageError) in try row.int(0) } ?? 0
        if triggers != 2 { findings.append("the audit log's append-only triggers are missing (\(2 - triggers) of 2)") }
        let behind = try db.run(PGQuery("""
            SELECT (SELECT COALESCE(MAX(id), 0) FROM audit_log)
                 > COALESCE(pg_sequence_last_value(pg_get_serial_sequence('audit_log', 'id')::regclass), 0)
            """)).first { row throws(StorageError) in try row.bool(0) } ?? false
        if behind { findings.append("the audit log's id sequence is behind its last entry: ids could be handed out again") }
        return findings
    }
}
