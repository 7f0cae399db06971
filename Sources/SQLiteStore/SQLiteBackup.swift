// SPDX-License-Identifier: Apache-2.0
import CSQLite
import Foundation
import Glibc
import StorageCore

/// Backups of a SQLite order store while gateways serve from it, and restores while none does.
///
/// A backup goes through SQLite's online backup API inside one read transaction of the live
/// database (WAL: writers carry on meanwhile), so the copy is the database as of one instant —
/// never a file copy, which can catch the file halfway through a checkpoint. The rows of every
/// table are counted in that same transaction, and the copy is then opened on its own, checked
/// with `PRAGMA integrity_check` and counted again: a backup that does not match what it was taken
/// from is an error, not a file.
///
/// A restore writes the backup into the database through the same API (one transaction: a crash
/// leaves the old database or the new one), after saving the database it replaces beside it. It
/// is refused while any process has the store open: every `SQLiteOrderStore` holds a shared lock
/// on `<database>.lock` for as long as it is open (`SQLiteUsageLock`), and the restore needs the
/// exclusive one, which it keeps until it is done, so no gateway starts halfway through.
public enum SQLiteBackup {
    /// What a backup or a restore verified.
    public struct Report: Sendable, Hashable {
        /// Rows per table, by name.
        public var rows: [String: Int]
        /// The schema version (the last migration applied).
        public var schemaVersion: Int
        /// The file's size in bytes.
        public var bytes: Int
        /// Tables present that this program does not know (not counted; a newer program's).
        public var uncounted: [String]
    }

    /// Why a restore did not happen (nothing changed).
    public enum RestoreRefusal: Error, Sendable, CustomStringConvertible {
        /// A process has the database open: a gateway serving, a reconcile running.
        case inUse(String)
        /// The backup is not a sound database of this program.
        case badBackup(String)
        /// Reading or writing failed.
        case failed(String)

        public var description: String {
            switch self {
            case .inUse(let path): "\(path) is in use by a running gateway (or another wxpay-gateway command); stop it first"
            case .badBackup(let reason): "the backup cannot be restored: \(reason)"
            case .failed(let reason): reason
            }
        }
    }

    /// Every table the migrations create, each with the statement that counts it (SQL is never
    /// built from a name at run time). `SQLiteBackupTests` checks this list against the schema.
    static let counted: [(table: String, count: SQL)] = [
        ("apple_transactions", "SELECT count(*) FROM apple_transactions"),
        ("appstore_backfill", "SELECT count(*) FROM appstore_backfill"),
        ("appstore_consumption", "SELECT count(*) FROM appstore_consumption"),
        ("appstore_notifications", "SELECT count(*) FROM appstore_notifications"),
        ("audit_log", "SELECT count(*) FROM audit_log"),
        ("console_login_addresses", "SELECT count(*) FROM console_login_addresses"),
        ("console_login_failures", "SELECT count(*) FROM console_login_failures"),
        ("console_login_locks", "SELECT count(*) FROM console_login_locks"),
        ("console_sessions", "SELECT count(*) FROM console_sessions"),
        ("order_events", "SELECT count(*) FROM order_events"),
        ("orders", "SELECT count(*) FROM orders"),
        ("outbox", "SELECT count(*) FROM outbox"),
        ("refunds", "SELECT count(*) FROM refunds"),
        ("schema_migrations", "SELECT count(*) FROM schema_migrations"),
    ]

    /// The names of the tables `counted` covers.
    public static var countedTables: [String] { counted.map(\.table) }

    /// Copies the database at `database` (in use or not) to `destination`, which must not exist
    /// yet, and verifies the copy. The copy is written beside its name and renamed into place only
    /// once verified, so `destination` is a whole, checked backup or nothing.
    public static func backup(database: String, to destination: String) async throws(StorageError) -> Report {
        try await blocking { () throws(StorageError) -> Report in
            guard FileManager.default.fileExists(atPath: database) else {
                throw StorageError(code: .openFailed, detail: "no database file at the configured path")
            }
            guard !FileManager.default.fileExists(atPath: destination) else {
                throw .invalidArgument("the backup file exists already; choose a new name")
            }
            let partial = destination + ".partial"
            try? FileManager.default.removeItem(atPath: partial)
            do throws(StorageError) {
                let source = try SQLiteConnection.open(path: database, readOnly: true, busyTimeout: .seconds(30))
                defer { source.close() }
                let target = try SQLiteConnection.open(path: partial, readOnly: false, busyTimeout: .seconds(30))
                restrictToOwner(partial)
                let expected: Report
                do throws(StorageError) {
                    // One read transaction: the counts and the copied pages are the same instant.
                    try source.execute("BEGIN")
                    defer { try? source.execute("COMMIT") }
                    expected = try summary(of: source)
                    try copy(from: source, to: target)
                    // A backup is one self-contained file: no WAL beside it to lose when it is moved.
                    _ = try target.row("PRAGMA journal_mode = DELETE") { row throws(StorageError) in try row.text(0) }
                } catch {
                    target.close()
                    throw error
                }
                target.close()
                let found = try verify(partial)
                guard found.rows == expected.rows, found.schemaVersion == expected.schemaVersion else {
                    throw StorageError(code: .corrupt, detail: "the copy's row counts differ from the database's")
                }
                try syncFile(partial)
                guard rename(partial, destination) == 0 else {
                    throw StorageError(code: .io, detail: "cannot rename the finished backup into place")
                }
                syncDirectory(of: destination)
                return found
            } catch {
                try? FileManager.default.removeItem(atPath: partial)
                throw error
            }
        }
    }

    /// Refuses what is not a readable regular file (a FIFO would block the open for good).
    static func requireRegularFile(_ path: String) throws(StorageError) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw StorageError(code: .openFailed, detail: "no such file") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw StorageError(code: .openFailed, detail: "not a regular file") }
        guard access(path, R_OK) == 0 else { throw StorageError(code: .openFailed, detail: "cannot read the file") }
    }

    /// Opens `path` read-only, runs `PRAGMA integrity_check` and counts every table.
    public static func verify(_ path: String) throws(StorageError) -> Report {
        try requireRegularFile(path)
        let connection = try SQLiteConnection.open(path: path, readOnly: true, busyTimeout: .seconds(30))
        defer { connection.close() }
        let problems = try connection.rows("PRAGMA integrity_check") { row throws(StorageError) in try row.text(0) }
        guard problems == ["ok"] else {
            throw StorageError(code: .corrupt, detail: "integrity_check: \(problems.prefix(3).joined(separator: "; "))")
        }
        var report = try summary(of: connection)
        report.bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        return report
    }

    /// Replaces the database at `database` with the backup at `backup`; the database replaced is
    /// kept as `<database>.before-restore-<UTC time>` (answered with the report). Refused while the
    /// database is open anywhere.
    public static func restore(from backup: String, to database: String, now: Date = Date()) async
        throws(RestoreRefusal) -> (report: Report, saved: String?)
    {
        let outcome = await Blocking.run { () -> Result<(Report, String?), RestoreRefusal> in
            do throws(RestoreRefusal) {
                return .success(try restoreNow(from: backup, to: database, now: now))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    private static func restoreNow(from backup: String, to database: String, now: Date) throws(RestoreRefusal)
        -> (Report, String?)
    {
        do {
            try requireRegularFile(backup)
        } catch {
            throw .failed("cannot read the backup \(backup): \(error)")
        }
        let expected: Report
        do {
            expected = try verify(backup)
        } catch {
            throw .badBackup(error.description)
        }
        guard expected.rows["schema_migrations"] != nil, expected.schemaVersion > 0 else {
            throw .badBackup("it is not a wxpay-gateway database (no migrations)")
        }
        guard expected.schemaVersion <= SQLiteMigrations.latestVersion else {
            throw .badBackup("its schema (version \(expected.schemaVersion)) is newer than this program's "
                + "(\(SQLiteMigrations.latestVersion)); restore it with the version that made it")
        }
        let lock: SQLiteUsageLock
        do {
            lock = try SQLiteUsageLock.exclusive(database)
        } catch {
            throw error == .busy ? .inUse(database) : .failed("cannot lock \(database): \(error)")
        }
        defer { lock.release() }
        do throws(StorageError) {
            var saved: String?
            if FileManager.default.fileExists(atPath: database) {
                let formatter = DateFormatter()
                formatter.locale = Locale(identifier: "en_US_POSIX")
                formatter.timeZone = TimeZone(identifier: "UTC")
                formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
                let copy = uniqueName(database + ".before-restore-" + formatter.string(from: now))
                _ = try backupNow(database: database, to: copy)
                saved = copy
            } else {
                let directory = (database as NSString).deletingLastPathComponent
                if !directory.isEmpty { try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
            }
            let source = try SQLiteConnection.open(path: backup, readOnly: true, busyTimeout: .seconds(30))
            defer { source.close() }
            let target = try SQLiteConnection.open(path: database, readOnly: false, busyTimeout: .seconds(30))
            defer { target.close() }
            if saved == nil { restrictToOwner(database) }
            try copy(from: source, to: target)
            // Fold the WAL into the file, so the database is whole in one file again.
            try target.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            let found = try summary(of: target)
            guard found.rows == expected.rows, found.schemaVersion == expected.schemaVersion else {
                throw StorageError(code: .corrupt, detail: "the restored database's row counts differ from the backup's")
            }
            var report = found
            report.bytes = expected.bytes
            return (report, saved)
        } catch {
            throw .failed("the restore failed: \(error)")
        }
    }

    /// `name`, or `name-2`, `name-3`… when it exists: a safety copy never replaces an earlier one
    /// (two restores within one second of each other).
    static func uniqueName(_ name: String) -> String {
        var candidate = name
        var number = 1
        while FileManager.default.fileExists(atPath: candidate) || (try? FileManager.default.destinationOfSymbolicLink(atPath: candidate)) != nil {
            number += 1
            candidate = name + "-\(number)"
        }
        return candidate
    }

    /// Only the owner reads a database or its copies (payments, users, the audit log), whatever
    /// the umask of the shell or cron job that made them.
    static func restrictToOwner(_ path: String) {
        _ = chmod(path, 0o600)
    }

    /// `backup` without the thread hop (a restore is already off the pool).
    private static func backupNow(database: String, to destination: String) throws(StorageError) -> Report {
        let source = try SQLiteConnection.open(path: database, readOnly: true, busyTimeout: .seconds(30))
        defer { source.close() }
        let target = try SQLiteConnection.open(path: destination, readOnly: false, busyTimeout: .seconds(30))
        defer { target.close() }
        restrictToOwner(destination)
        try source.execute("BEGIN")
        defer { try? source.execute("COMMIT") }
        let expected = try summary(of: source)
        try copy(from: source, to: target)
        _ = try target.row("PRAGMA journal_mode = DELETE") { row throws(StorageError) in try row.text(0) }
        let found = try summary(of: target)
        guard found.rows == expected.rows else {
            throw StorageError(code: .corrupt, detail: "the safety copy's row counts differ from the database's")
        }
        return found
    }

    /// Every page of `source`'s main database into `target`'s, in one step (one read of the
    /// source, one write transaction of the target).
    private static func copy(from source: SQLiteConnection, to target: SQLiteConnection) throws(StorageError) {
        guard let backup = sqlite3_backup_init(target.rawHandle, "main", source.rawHandle, "main") else {
            throw .sqlite(sqlite3_errcode(target.rawHandle), connection: target.rawHandle, during: "backup")
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE else { throw .sqlite(stepped, connection: target.rawHandle, during: "backup") }
        guard finished == SQLITE_OK else { throw .sqlite(finished, connection: target.rawHandle, during: "backup") }
    }

    private static func summary(of connection: SQLiteConnection) throws(StorageError) -> Report {
        let present = Set(try connection.rows(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") { row throws(StorageError) in
                try row.text(0)
            })
        var rows: [String: Int] = [:]
        for (table, count) in counted where present.contains(table) {
            rows[table] = try connection.row(count) { row throws(StorageError) in try row.int(0) } ?? 0
        }
        let version = present.contains("schema_migrations")
            ? try connection.row("SELECT COALESCE(MAX(version), 0) FROM schema_migrations") { row throws(StorageError) in
                try row.int(0)
            } ?? 0
            : 0
        return Report(rows: rows, schemaVersion: version, bytes: 0,
                      uncounted: present.subtracting(countedTables).sorted())
    }

    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws(StorageError) -> T)
        async throws(StorageError) -> T
    {
        let result = await Blocking.run { () -> Result<T, StorageError> in
            do throws(StorageError) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private static func syncFile(_ path: String) throws(StorageError) {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw StorageError(code: .io, detail: "cannot open the backup to sync it") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw StorageError(code: .io, detail: "cannot sync the backup to disk") }
    }

    private static func syncDirectory(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}
