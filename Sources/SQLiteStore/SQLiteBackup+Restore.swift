// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import StorageCore

/// The restore: a backup put in place of a database no process uses, on its real path, the
/// database it replaces kept beside it (SQLiteBackup.swift says how).
extension SQLiteBackup {
    /// Why a restore did not happen (nothing changed).
    public enum RestoreRefusal: Error, Sendable, CustomStringConvertible {
        /// A process has the database open: a gateway serving, a backup or doctor running (`byOtherProgram`
        /// false), or a program that is not wxpay-gateway, such as a sqlite3 shell (true).
        case inUse(String, byOtherProgram: Bool)
        /// The backup is not a sound database of this program.
        case badBackup(String)
        /// The database file has more than one name.
        case severalNames(SQLiteDatabaseFile.SeveralNames)
        /// No database is at the path (nothing or an empty file), and the restore was not told it
        /// is a new one (a mistyped path would otherwise take the backup where no gateway reads it).
        case noDatabase(String)
        /// Told it is a new database, but one is there (it would be replaced without being meant to).
        case databaseExists(String)
        /// No database is at the path, but a WAL or rollback journal is beside it: the only copy,
        /// perhaps, of committed payments whose database was moved or lost. A restore never
        /// removes one (a `--new` restore would have, replacing it with the backup's clean file).
        case leftoverJournal(String)
        /// Reading or writing failed.
        case failed(String)

        public var description: String {
            switch self {
            case .inUse(let path, false):
                "\(path) is in use by a running gateway (or another wxpay-gateway command); stop it first"
            case .inUse(let path, true):
                "\(path) is open in another program (not wxpay-gateway: a sqlite3 shell?); close it first"
            case .badBackup(let reason): "the backup cannot be restored: \(reason)"
            case .severalNames(let names): names.description
            case .noDatabase(let path):
                "no database at \(path) (GATEWAY_DATABASE): check the path; on a new machine, where no gateway has "
                    + "made one yet, give --new"
            case .databaseExists(let path):
                "--new is for a machine without a database, but there is one at \(path); leave out --new to "
                    + "replace it (it is kept as a safety copy)"
            case .leftoverJournal(let journal):
                "no database, but \(journal) is there: it may hold the only copy of committed payments "
                    + "(put back the database it belongs to, then back it up, or move it aside once you "
                    + "know it is not needed); a restore never removes it"
            case .failed(let reason): reason
            }
        }
    }

    /// Replaces the database at `database` (symbolic links resolved) with the backup at `backup`;
    /// the database replaced is kept beside the real file as `<database>.before-restore-<UTC time>`
    /// (answered with the report). Refused while the database file is open anywhere, by any of its
    /// names; when it has more than one name; and when there is no database (nothing, or an empty
    /// file) unless `newDatabase` says so — then there is nothing to keep, and no safety copy.
    /// `patience`: how long a usage lock held by another process is tried again before the
    /// restore is refused (`SQLiteUsageLock.exclusive` says why it may linger).
    public static func restore(from backup: String, to database: String, newDatabase: Bool = false, now: Date = Date(),
                               patience: Duration = .seconds(3))
        async throws(RestoreRefusal) -> (report: Report, saved: String?)
    {
        let outcome = await Blocking.run { () -> Result<(Report, String?), RestoreRefusal> in
            do throws(RestoreRefusal) {
                return .success(try restoreNow(from: backup, to: database, newDatabase: newDatabase, now: now,
                                               patience: patience))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// The real path of the database to restore: symbolic links resolved, so that its WAL, the
    /// WAL's index and the safety copy are the real file's. A database that is not there (no name,
    /// a link to nothing, an empty file) is one only with `newDatabase`, whose directory is then
    /// made; with `newDatabase`, a database that is there is refused.
    private static func realDatabase(_ database: String, newDatabase: Bool) throws(RestoreRefusal) -> String {
        var info = stat()
        guard lstat(database, &info) == 0 else {
            guard errno == ENOENT else {
                throw .failed("cannot look at \(database): \(String(cString: strerror(errno)))")
            }
            try requireNoLeftoverJournal(database)
            guard newDatabase else { throw .noDatabase(database) }
            let directory = (database as NSString).deletingLastPathComponent
            if !directory.isEmpty { _ = SQLiteDatabaseFile.makeDirectories(directory) }
            guard let real = SQLiteDatabaseFile.resolved(directory.isEmpty ? "." : directory) else {
                throw .failed("cannot make the directory of \(database)")
            }
            return (real as NSString).appendingPathComponent((database as NSString).lastPathComponent)
        }
        guard let real = SQLiteDatabaseFile.resolved(database) else {
            throw .failed("\(database) is a symbolic link to nothing; point GATEWAY_DATABASE at the database itself")
        }
        let empty = fileSize(real) == 0
        if empty { try requireNoLeftoverJournal(real) }
        if empty && !newDatabase { throw .noDatabase(database) }
        if !empty && newDatabase { throw .databaseExists(database) }
        return real
    }

    /// Refuses when a WAL or rollback journal is beside a database that is not there.
    private static func requireNoLeftoverJournal(_ database: String) throws(RestoreRefusal) {
        for suffix in ["-wal", "-journal"] where fileSize(database + suffix) > 0 {
            throw .leftoverJournal(database + suffix)
        }
    }

    private static func restoreNow(from backup: String, to given: String, newDatabase: Bool, now: Date,
                                   patience: Duration) throws(RestoreRefusal) -> (Report, String?)
    {
        do {
            try requireRegularFile(backup)
        } catch {
            throw .failed("cannot read the backup \(backup): \(error)")
        }
        if sameFile(backup, given) { throw .badBackup("it is the database itself") }
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
        let database = try realDatabase(given, newDatabase: newDatabase)
        let existed = FileManager.default.fileExists(atPath: database)
        let lock: SQLiteUsageLock
        do {
            lock = try SQLiteUsageLock.exclusive(database, patience: patience)
        } catch {
            throw error == .busy ? .inUse(given, byOtherProgram: false) : .failed("cannot lock \(database): \(error)")
        }
        defer { lock.release() }
        do throws(RestoreRefusal) {
            // Under the lock: its only name is the one whose -wal and -shm the restore handles.
            do throws(SQLiteDatabaseFile.SeveralNames) {
                try SQLiteDatabaseFile.requireOneName(database)
            } catch {
                throw RestoreRefusal.severalNames(error)
            }
            return try replace(database, with: backup, expected: expected, keep: !newDatabase, now: now)
        } catch {
            // A database this restore made (it was missing) is removed again: nothing changed.
            if !existed { unlink(database) }
            throw error
        }
    }

    /// The restore proper, under the exclusive usage lock, keeping a safety copy of the database
    /// unless it is a new one (`keep` false: opening it has given it a header, but nothing to keep).
    /// Its one connection to the database closes before the lock is let go.
    private static func replace(_ database: String, with backup: String, expected: Report, keep: Bool, now: Date)
        throws(RestoreRefusal) -> (Report, String?)
    {
        let target: SQLiteConnection
        do {
            target = try SQLiteConnection.open(path: database, readOnly: false, busyTimeout: .seconds(5))
        } catch {
            throw .failed("cannot open \(database): \(error)")
        }
        defer { target.close() }
        // SQLite's own exclusive lock, kept until the connection closes: a program that takes no
        // usage lock cannot be reading or writing the file either, and set before the first read
        // it keeps this connection off the WAL's shared memory (so the -shm is nobody's).
        do throws(StorageError) {
            try target.execute("PRAGMA locking_mode = EXCLUSIVE")
            try target.execute("BEGIN EXCLUSIVE")
            try target.execute("COMMIT")
        } catch {
            throw error == .busy ? .inUse(database, byOtherProgram: true) : .failed("cannot open \(database): \(error)")
        }
        var saved: String?
        if keep {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
            let copy = uniqueName(database + ".before-restore-" + formatter.string(from: now))
            do {
                _ = try copyVerified(from: target, to: copy)
            } catch {
                throw .failed("cannot save the database it would replace, so it was left as it was: \(error)")
            }
            saved = copy
        } else {
            restrictToOwner(database)
        }
        do throws(StorageError) {
            // One file from here: the WAL folded into the database and deleted (the old database
            // still, now saved), and the write below journalled by a rollback journal.
            let mode = try target.row("PRAGMA journal_mode = DELETE") { row throws(StorageError) in try row.text(0) }
            guard mode?.lowercased() == "delete" else {
                throw StorageError(code: .io, detail: "cannot leave WAL mode")
            }
            // The old WAL's shared-memory index: SQLite would rebuild it, but nothing of the old
            // database stays beside the new one. No one maps it: the exclusive lock is held.
            if unlink(database + "-shm") != 0 && errno != ENOENT {
                throw StorageError(code: .io, detail: "cannot remove the old \(database)-shm")
            }
            let source = try SQLiteConnection.open(path: backup, readOnly: true, busyTimeout: .seconds(30))
            defer { source.close() }
            try copy(from: source, to: target)
            let found = try summary(of: target)
            guard found.rows == expected.rows, found.schemaVersion == expected.schemaVersion else {
                throw StorageError(code: .corrupt, detail: "the restored database's row counts differ from the backup's")
            }
            var report = found
            report.bytes = expected.bytes
            // The backup's console sessions do not come back: one signed out since would sign in
            // again by its old cookie. After a restore everyone signs in anew.
            if found.rows["console_sessions"] != nil {
                report.endedSessions = try target.run("DELETE FROM console_sessions")
                report.rows["console_sessions"] = 0
            }
            return (report, saved)
        } catch {
            throw .failed("the restore failed: \(error)")
        }
    }

    /// Whether two paths name one file (a restore from the database onto itself).
    private static func sameFile(_ first: String, _ second: String) -> Bool {
        var one = stat()
        var two = stat()
        guard stat(first, &one) == 0, stat(second, &two) == 0 else { return false }
        return one.st_dev == two.st_dev && one.st_ino == two.st_ino
    }

    private static func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }
}
