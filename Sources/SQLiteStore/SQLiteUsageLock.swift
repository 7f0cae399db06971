// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import StorageCore

/// "This database is in use": an advisory `flock` on `<database>.lock`, shared by every open
/// `SQLiteOrderStore` (several processes may serve one file) and exclusive for a restore. The
/// kernel drops it when its holder exits, however it exits (a crash, SIGKILL), so it never goes
/// stale the way a pid file does, and it needs nothing but the file beside the database.
final class SQLiteUsageLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// The lock file of the database at `path`: beside the file the path resolves to, so that every
    /// name of one database — a symbolic link to it or to its directory, `..` segments — takes the
    /// same lock (a restore through a symlink must still see the gateway serving the real file).
    static func path(for database: String) -> String { resolved(database) + ".lock" }

    /// The database's path with every symbolic link resolved: the file's own when it exists, else
    /// its resolved directory's with its name (a database about to be made).
    static func resolved(_ database: String) -> String {
        if let real = realPath(database) { return real }
        let name = (database as NSString).lastPathComponent
        let directory = (database as NSString).deletingLastPathComponent
        guard !name.isEmpty, let real = realPath(directory.isEmpty ? "." : directory) else { return database }
        return real == "/" ? "/" + name : real + "/" + name
    }

    private static func realPath(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    /// Taken by a store as it opens. Waits up to `timeout` while a restore holds the exclusive
    /// lock, then fails with `busy`.
    static func shared(_ database: String, timeout: Duration) throws(StorageError) -> SQLiteUsageLock {
        let lock = try openFile(database)
        let deadline = ContinuousClock.now + timeout
        while flock(lock.descriptor, LOCK_SH | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else {
                lock.release()
                throw StorageError(code: .busy, detail: "the database is being restored")
            }
            usleep(50_000)
        }
        return lock
    }

    /// Taken by a restore: `busy` at once while any store has the database open.
    static func exclusive(_ database: String) throws(StorageError) -> SQLiteUsageLock {
        let lock = try openFile(database)
        guard flock(lock.descriptor, LOCK_EX | LOCK_NB) == 0 else {
            lock.release()
            throw StorageError(code: .busy, detail: "the database is in use")
        }
        return lock
    }

    /// Whether some process has the database open now (a store, or a restore running).
    static func isInUse(_ database: String) -> Bool {
        guard let lock = try? exclusive(database) else { return true }
        lock.release()
        return false
    }

    private static func openFile(_ database: String) throws(StorageError) -> SQLiteUsageLock {
        let fd = open(path(for: database), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StorageError(code: .openFailed, detail: "cannot open the database's lock file") }
        return SQLiteUsageLock(descriptor: fd)
    }

    /// Closing the descriptor releases the lock.
    func release() {
        close(descriptor)
    }
}
