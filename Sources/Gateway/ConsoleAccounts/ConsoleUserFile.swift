// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Observability
import OperatorFiles
import Glibc

/// The console's user file (`GATEWAY_CONSOLE_USERS`): one `name:role:hash` line per user, `#`
/// comments, edited by `wxpay-gateway console-user add|remove|passwd`.
///
/// Writes are atomic: the new content goes to a temporary file in the same directory, created
/// with mode 0600, synced, and renamed over the old one (then the directory is synced), so a
/// reader — a running gateway — sees the old file or the new one, never half of one. Concurrent
/// editors take turns on a lock file beside it, so no edit is lost.
public enum ConsoleUserFile {
    static let header = "# wxpay-gateway console users: name:role:scrypt-hash, one per line.\n"
        + "# Edit with `wxpay-gateway console-user add|remove|passwd NAME`; keep the file mode 0600.\n"

    /// The users of a file's text, in file order.
    public static func parse(_ text: String) throws(ConsoleUserFileError) -> [ConsoleUser] {
        var users: [ConsoleUser] = []
        var seen: Set<String> = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            let number = index + 1
            guard fields.count == 3 else { throw .malformedLine(number, "expected name:role:hash") }
            guard ConsoleUser.isValidName(fields[0]) else { throw .malformedLine(number, "the name is not 1-64 of a-z 0-9 . _ @ -") }
            guard let role = ConsoleRole(rawValue: fields[1]) else {
                throw .malformedLine(number, "unknown role (viewer, refunder or admin)")
            }
            guard let hash = PasswordHash(encoded: fields[2]) else {
                throw .malformedLine(number, "the password hash is not scrypt with ln>=17, r>=8, p>=1")
            }
            guard seen.insert(fields[0]).inserted else { throw .malformedLine(number, "the name \(fields[0]) appears twice") }
            users.append(ConsoleUser(name: fields[0], role: role, password: hash))
        }
        return users
    }

    /// The file's text for `users`.
    public static func render(_ users: [ConsoleUser]) -> String {
        header + users.map { "\($0.name):\($0.role.rawValue):\($0.password.encoded)\n" }.joined()
    }

    /// The users in the file at `path`.
    public static func read(path: String) throws(ConsoleUserFileError) -> [ConsoleUser] {
        let bytes: [UInt8]
        do {
            bytes = try OperatorFile.read(path, maximumBytes: maximumFileBytes)
        } catch {
            switch error {
            case .notRegular: throw .notRegularFile(path)
            case .tooLarge: throw .malformedLine(0, "the file is larger than \(maximumFileBytes) bytes")
            case .missing, .unreadable: throw .unreadable(path)
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .malformedLine(0, "the file is not UTF-8") }
        return try parse(text)
    }

    /// Tens of thousands of users' lines; more is not a user file.
    public static let maximumFileBytes = 4 * 1024 * 1024

    /// Reads the file (none yet: no users), lets `change` edit the list, and writes the result
    /// atomically with mode 0600, holding the lock file `path.lock` throughout. Nothing is written
    /// when `change` throws.
    public static func update(path: String, _ change: (inout [ConsoleUser]) throws(ConsoleUserFileError) -> Void)
        throws(ConsoleUserFileError)
    {
        let lock = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw .unwritable(path, errno) }
        defer { close(lock) }
        guard flock(lock, LOCK_EX) == 0 else { throw .unwritable(path, errno) }
        var users = FileManager.default.fileExists(atPath: path) ? try read(path: path) : []
        try change(&users)
        try write(render(users), to: path)
    }

    /// Writes `text` to `path` atomically (temporary file, fsync, rename, directory fsync), mode 0600.
    static func write(_ text: String, to path: String) throws(ConsoleUserFileError) {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let temporary = directory + "/." + url.lastPathComponent + ".tmp-" + Base64.encode(RandomBytes.take(9), .urlUnpadded)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .unwritable(path, errno) }
        var failure: Int32 = 0
        // The umask cannot widen 0600, but an inherited default ACL could: set it explicitly.
        if fchmod(fd, 0o600) != 0 { failure = errno }
        if failure == 0 { failure = DescriptorWriting.writeAll(Array(text.utf8), to: fd) }
        if failure == 0 && fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure == 0 && rename(temporary, path) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(temporary)
            throw .unwritable(path, failure)
        }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
    }
}

/// Why the user file could not be read or written. Never carries a password or a hash.
public enum ConsoleUserFileError: Error, Sendable, Hashable, CustomStringConvertible {
    case unreadable(String)
    case notRegularFile(String)
    case unwritable(String, Int32)
    case malformedLine(Int, String)
    case userExists(String)
    case noSuchUser(String)

    public var description: String {
        switch self {
        case .unreadable(let path): "cannot read \(path)"
        case .notRegularFile(let path): "\(path) is not a regular file (a FIFO, a device, a socket or a directory)"
        case .unwritable(let path, let code): "cannot write \(path): \(String(cString: strerror(code)))"
        case .malformedLine(let line, let reason): "line \(line): \(reason)"
        case .userExists(let name): "the user \(name) exists already (passwd changes a password)"
        case .noSuchUser(let name): "there is no user \(name)"
        }
    }
}
