// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import Glibc
import Observability
import Synchronization

/// The console users in force, from the user file. A running gateway sees an edit without a
/// restart: every lookup compares the file's identity (device, inode, size, modification time)
/// with the one it read — a `stat`, no read — and re-reads it when it changed; SIGHUP re-reads it
/// unconditionally (`reload`). A file that does not parse leaves the previous users in force and
/// is logged once per version of the file.
public final class ConsoleUserDirectory: Sendable {
    public let path: String
    private let logger: Logger
    private struct State {
        var users: [String: ConsoleUser]
        var signature: FileSignature?
        /// The version that failed to parse, so it is reported once, not on every request.
        var refused: FileSignature?
    }
    private let state: Mutex<State>
    /// Told whether each reload (SIGHUP's or a change's) was applied: `wxpay_reload_successful`.
    private let reported: @Sendable (Bool) -> Void

    /// Reads the file; a missing or malformed file is an error (start-up refuses it).
    public init(path: String, logger: Logger = .disabled, reported: @escaping @Sendable (Bool) -> Void = { _ in })
        throws(ConsoleUserFileError)
    {
        self.path = path
        self.logger = logger
        self.reported = reported
        let signature = FileSignature(path: path)
        let users = try ConsoleUserFile.read(path: path)
        state = Mutex(State(users: Self.index(users), signature: signature, refused: nil))
        if let signature, signature.mode & 0o077 != 0 {
            logger.warning("the console user file is readable by other users; make it mode 0600", ["path": path])
        }
    }

    /// The user called `name`, as the file says now.
    public func user(_ name: String) -> ConsoleUser? {
        refreshIfChanged()
        return state.withLock { $0.users[name] }
    }

    /// How many users there are now.
    public var count: Int {
        refreshIfChanged()
        return state.withLock { $0.users.count }
    }

    /// Reads the file again whatever its identity says (SIGHUP). Returns the number of users, or
    /// why the previous ones stay.
    @discardableResult
    public func reload() -> Result<Int, ConsoleUserFileError> {
        let signature = FileSignature(path: path)
        do {
            let users = try ConsoleUserFile.read(path: path)
            state.withLock { $0 = State(users: Self.index(users), signature: signature, refused: nil) }
            reported(true)
            return .success(users.count)
        } catch {
            state.withLock { $0.refused = signature }
            reported(false)
            return .failure(error)
        }
    }

    private func refreshIfChanged() {
        let current = FileSignature(path: path)
        let stale = state.withLock { $0.signature != current && $0.refused != current }
        guard stale else { return }
        switch reload() {
        case .success(let count):
            logger.notice("console users reloaded", ["path": path, "users": String(count)])
        case .failure(let error):
            logger.error("console user file refused; the previous users stay in force",
                         ["path": path, "reason": error.description])
        }
    }

    private static func index(_ users: [ConsoleUser]) -> [String: ConsoleUser] {
        Dictionary(users.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }
}

/// Enough of a file's `stat` to tell that it changed: an atomic rename gives a new inode, an edit
/// in place a new size or modification time.
struct FileSignature: Sendable, Hashable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modifiedSeconds: Int
    var modifiedNanoseconds: Int
    var mode: UInt32

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modifiedSeconds = Int(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int(info.st_mtim.tv_nsec)
        mode = UInt32(info.st_mode)
    }
}
