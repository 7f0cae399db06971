// SPDX-License-Identifier: Apache-2.0
import CSQLite
import Foundation
import Glibc
import OperatorFiles
import StorageCore

/// Backups of a SQLite order store while gateways serve from it, and restores while none does.
///
/// A backup goes through SQLite's online backup API inside one read transaction of the live
/// database (WAL: writers carry on meanwhile, and frames not yet checkpointed are read as SQLite
/// reads them), so the copy is the database as of one instant — never a file copy, which can catch
/// the file halfway through a checkpoint or miss what is still in the WAL. The rows of every table
/// are counted in that same transaction, and the copy is then opened on its own, checked with
/// `PRAGMA integrity_check` and counted again: a backup that does not match what it was taken from
/// is an error, not a file. The safety copy a restore makes of the database it replaces is made by
/// the same code.
///
/// Both work on the database's real path (symbolic links resolved: SQLite's WAL and its index are
/// beside it, and so is the safety copy) and refuse a database file with more than one name
/// (`SQLiteDatabaseFile`): the WAL of a hard link's other name cannot be found.
///
/// A restore is refused while any process uses the database: every `SQLiteOrderStore`, backup and
/// doctor holds a shared `flock` on the database file itself (`SQLiteUsageLock`: the file, not its
/// name, so a hard or symbolic link meets the same lock), and the restore takes it exclusively,
/// then SQLite's own exclusive lock (which also shuts out a program that takes no usage lock, such
/// as a sqlite3 shell). Holding both, it saves the database (WAL included), folds the WAL into
/// the file and leaves WAL mode (no -wal then, and the -shm of the old WAL is removed: nothing of
/// the old database is left beside the new one for SQLite to replay), and writes the backup in
/// through the backup API in one rollback-journal transaction: a crash leaves the old database or
/// the new one. The next gateway to open it switches it back to WAL.
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
        /// A restore's: the backup's console sessions it ended (everyone signs in again).
        public var endedSessions = 0
    }

    /// Why a backup was not written.
    public enum BackupFailure: Error, Sendable, CustomStringConvertible {
        /// The database file has more than one name.
        case severalNames(SQLiteDatabaseFile.SeveralNames)
        /// The destination or the database named cannot be used as given (said in the operator's words).
        case refused(String)
        /// Reading, copying or verifying failed.
        case failed(StorageError)

        public var description: String {
            switch self {
            case .severalNames(let names): names.description
            case .refused(let reason): reason
            case .failed(let error): error.description
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
        ("appstore_subscriptions", "SELECT count(*) FROM appstore_subscriptions"),
        ("audit_log", "SELECT count(*) FROM audit_log"),
        ("bindings", "SELECT count(*) FROM bindings"),
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
    /// Refused when the database file has more than one name: read through a name the gateway
    /// does not use, the copy would miss what is still in the gateway's WAL.
    public static func backup(database: String, to destination: String) async throws(BackupFailure) -> Report {
        let outcome = await Blocking.run { () -> Result<Report, BackupFailure> in
            do throws(StorageError) {
                guard FileManager.default.fileExists(atPath: database) else {
                    return .failure(.refused("no database at \(database) (GATEWAY_DATABASE): nothing to back up"))
                }
                var isDirectory: ObjCBool = false
                let isDirectoryName = FileManager.default.fileExists(atPath: destination, isDirectory: &isDirectory)
                    && isDirectory.boolValue
                if isDirectoryName {
                    return .failure(.refused("\(destination) is a directory: name the new backup file, e.g. "
                        + (destination as NSString).appendingPathComponent("gateway-backup.sqlite")))
                }
                if destination.hasSuffix("/") {
                    return .failure(.refused("\(destination) ends in / but is no directory: name the new backup file, without the /"))
                }
                // lstat, not stat: a symbolic link to nothing is a name that exists, and is not replaced either.
                var status = stat()
                if lstat(destination, &status) == 0 {
                    return .failure(.refused("\(destination) exists already (a backup never replaces a file or link): choose a new name"))
                }
                let directory = (destination as NSString).deletingLastPathComponent
                guard FileManager.default.fileExists(atPath: directory.isEmpty ? "." : directory, isDirectory: &isDirectory),
                      isDirectory.boolValue
                else {
                    return .failure(.refused("no directory \(directory) for the backup file; make it first"))
                }
                // Shared with the gateways; waits out a restore in progress.
                let lock = try SQLiteUsageLock.shared(database, create: false, timeout: .seconds(30))
                defer { lock.release() }
                do throws(SQLiteDatabaseFile.SeveralNames) {
                    try SQLiteDatabaseFile.requireOneName(SQLiteDatabaseFile.resolved(database) ?? database)
                } catch {
                    return .failure(.severalNames(error))
                }
                let source = try SQLiteConnection.open(path: database, readOnly: true, busyTimeout: .seconds(30))
                defer { source.close() }
                // A mistyped GATEWAY_DATABASE naming some other file must not yield a "backup" that
                // only a restore, when it is needed, finds empty.
                let migrations: Int
                do throws(StorageError) {
                    migrations = try source.row(
                        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
                    ) { row throws(StorageError) in try row.int(0) } ?? 0
                } catch where error.sqliteCode == 26 {
                    return .failure(.refused("\(database) (GATEWAY_DATABASE) is not a SQLite database: nothing to back up"))
                }
                guard migrations == 1 else {
                    return .failure(.refused(
                        "\(database) (GATEWAY_DATABASE) is not a wxpay-gateway database (it has no schema_migrations table): nothing to back up"))
                }
                return .success(try copyVerified(from: source, to: destination))
            } catch {
                return .failure(.failed(error))
            }
        }
        return try outcome.get()
    }

    /// The one way a database is copied, for a backup and for a restore's safety copy: every page
    /// of `source` (through SQLite, so its WAL's frames too) into `<destination>.partial` inside
    /// one read transaction whose row counts it must match, made one self-contained file (no WAL),
    /// verified on its own, synced, and only then renamed to `destination`.
    static func copyVerified(from source: SQLiteConnection, to destination: String) throws(StorageError) -> Report {
        let partial = destination + ".partial"
        try? FileManager.default.removeItem(atPath: partial)
        do throws(StorageError) {
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
                throw StorageError(code: .io, detail: "cannot rename the finished copy into place")
            }
            syncDirectory(of: destination)
            return found
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
    }

    /// Refuses what is not a readable regular file (a FIFO would block the open for good).
    static func requireRegularFile(_ path: String) throws(StorageError) {
        do {
            try OperatorFile.requireRegular(path)
        } catch {
            switch error {
            case .missing: throw StorageError(code: .openFailed, detail: "no such file")
            case .notRegular: throw StorageError(code: .openFailed, detail: "not a regular file")
            case .unreadable, .tooLarge: throw StorageError(code: .openFailed, detail: "cannot read the file")
            }
        }
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

    /// Every page of `source`'s main database into `target`'s, in one step (one read of the
    /// source, one write transaction of the target).
    static func copy(from source: SQLiteConnection, to target: SQLiteConnection) throws(StorageError) {
        guard let backup = sqlite3_backup_init(target.rawHandle, "main", source.rawHandle, "main") else {
            throw .sqlite(sqlite3_errcode(target.rawHandle), connection: target.rawHandle, during: "backup")
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE else { throw .sqlite(stepped, connection: target.rawHandle, during: "backup") }
        guard finished == SQLITE_OK else { throw .sqlite(finished, connection: target.rawHandle, during: "backup") }
    }

    static func summary(of connection: SQLiteConnection) throws(StorageError) -> Report {
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
