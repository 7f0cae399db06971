// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import StorageCore
import Synchronization

/// "This database is in use": an advisory `flock` on the database file itself, shared by every
/// open `SQLiteOrderStore`, `backup` and `doctor` (several may use one file) and exclusive for a
/// restore.
///
/// The lock belongs to the file, not to a name of it: a symbolic link, a hard link (another path,
/// the same inode) or a path through a linked directory all open the one file and meet the one
/// lock. The kernel drops it when its holder exits, however it exits (a crash, SIGKILL), so it
/// never goes stale the way a pid file does. `flock` locks are apart from the POSIX record locks
/// SQLite takes on the same file (Linux keeps the two kinds separately on a local file system,
/// where WAL must be anyway), so the lock neither blocks nor is blocked by SQLite's own.
///
/// One hazard shapes the code: closing *any* descriptor of a file drops every POSIX lock the
/// process holds on it, SQLite's included. So a process opens the file for this lock once per file
/// (per device and inode), shares that descriptor among its users, and closes it only when the
/// last of them, whose SQLite connections are closed by then, lets go. Every connection this
/// program opens to a database it serves is opened under this lock, so none is open when the
/// descriptor closes.
final class SQLiteUsageLock: Sendable {
    /// A file as the kernel knows it.
    private struct FileIdentity: Hashable {
        var device: UInt64
        var inode: UInt64

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    /// This process's descriptor of one database file and who holds it.
    private struct Holding {
        var descriptor: Int32
        var users: Int
        var exclusive: Bool
    }

    private static let holdings = Mutex<[FileIdentity: Holding]>([:])

    private let identity: FileIdentity
    private let released = Atomic<Bool>(false)

    private init(identity: FileIdentity) {
        self.identity = identity
    }

    /// Taken by a store as it opens (`create`: the file is made, empty, when missing, mode 0600),
    /// by a backup and by doctor. Waits up to `timeout` while a restore holds the exclusive lock,
    /// then fails with `busy`.
    static func shared(_ database: String, create: Bool, timeout: Duration) throws(StorageError) -> SQLiteUsageLock {
        let deadline = ContinuousClock.now + timeout
        while true {
            if case .locked(let lock) = try attempt(database, create: create, exclusive: false) { return lock }
            guard ContinuousClock.now < deadline else {
                throw StorageError(code: .busy, detail: "the database is being restored")
            }
            usleep(50_000)
        }
    }

    /// Taken by a restore: `busy` while any process (this one included) has the database open.
    /// Makes the file, empty, when it is missing.
    ///
    /// A lock let go elsewhere can linger for a moment: the kernel drops it when the last copy of
    /// its descriptor closes, and a child being started (posix_spawn) holds a copy of every
    /// descriptor until its program runs, close-on-exec or not; so does a gateway still exiting.
    /// So the lock held by another process is tried again for up to `patience` before the restore
    /// is refused; held by this process, it is refused at once.
    static func exclusive(_ database: String, patience: Duration = .seconds(3)) throws(StorageError) -> SQLiteUsageLock {
        let deadline = ContinuousClock.now + patience
        while true {
            switch try attempt(database, create: true, exclusive: true) {
            case .locked(let lock): return lock
            case .heldHere: throw StorageError(code: .busy, detail: "the database is in use")
            case .heldElsewhere:
                guard ContinuousClock.now < deadline else {
                    throw StorageError(code: .busy, detail: "the database is in use")
                }
                usleep(50_000)
            }
        }
    }

    /// What one try found.
    private enum Attempt {
        case locked(SQLiteUsageLock)
        /// This process holds the file in a way that excludes the lock asked for.
        case heldHere
        /// Another process's lock is in the way (or the path was renamed meanwhile: try again).
        case heldElsewhere
    }

    /// One try at the lock.
    private static func attempt(_ database: String, create: Bool, exclusive: Bool) throws(StorageError) -> Attempt {
        try holdings.withLock { holdings throws(StorageError) -> Attempt in
            // This process has the file already: share its descriptor (opening and closing another
            // one would drop SQLite's locks).
            var info = stat()
            if stat(database, &info) == 0, let holding = holdings[FileIdentity(info)] {
                guard !exclusive, !holding.exclusive else { return .heldHere }
                holdings[FileIdentity(info)]?.users += 1
                return .locked(SQLiteUsageLock(identity: FileIdentity(info)))
            }
            // Non-blocking: a FIFO at the database's path would otherwise hold the open for good
            // (the fstat below refuses it).
            let descriptor = open(database, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (create ? O_CREAT : 0), 0o600)
            guard descriptor >= 0 else {
                throw StorageError(code: .openFailed, detail: errno == ENOENT ? "no database file at the configured path"
                                   : "cannot open the database file to lock it")
            }
            var opened = stat()
            guard fstat(descriptor, &opened) == 0, opened.st_mode & S_IFMT == S_IFREG else {
                close(descriptor)
                throw StorageError(code: .openFailed, detail: "the database is not a regular file")
            }
            let identity = FileIdentity(opened)
            if holdings[identity] != nil {
                // Renamed into this path since the stat above: rare; try again with the new name.
                close(descriptor)
                return .heldElsewhere
            }
            guard flock(descriptor, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0 else {
                close(descriptor)
                guard errno == EWOULDBLOCK || errno == EINTR else {
                    throw StorageError(code: .io, detail: "cannot lock the database file")
                }
                return .heldElsewhere
            }
            // The path must still name the file locked: one renamed over it meanwhile is another file.
            var now = stat()
            guard stat(database, &now) == 0, FileIdentity(now) == identity else {
                close(descriptor)
                return .heldElsewhere
            }
            holdings[identity] = Holding(descriptor: descriptor, users: 1, exclusive: exclusive)
            return .locked(SQLiteUsageLock(identity: identity))
        }
    }

    /// Lets go; the last holder in this process closes the descriptor, which releases the lock.
    /// Call it only once every SQLite connection opened under this lock is closed.
    func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Self.holdings.withLock { holdings in
            guard var holding = holdings[identity] else { return }
            holding.users -= 1
            if holding.users > 0 {
                holdings[identity] = holding
            } else {
                holdings[identity] = nil
                close(holding.descriptor)
            }
        }
    }
}
