// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Why a file an operator named was not read.
public enum OperatorFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing at the path.
    case missing
    /// A FIFO, a device, a socket or a directory: reading one can block for good or never end.
    case notRegular
    /// There, but this process may not open it (permissions), or the read failed.
    case unreadable
    /// Longer than the bound its reader sets.
    case tooLarge(maximumBytes: Int)

    public var description: String {
        switch self {
        case .missing: "no such file"
        case .notRegular: "not a regular file (a FIFO, a device, a socket or a directory)"
        case .unreadable: "cannot be read"
        case .tooLarge(let maximumBytes): "larger than \(maximumBytes) bytes"
        }
    }
}

/// The one way the gateway opens a file an operator names (the catalog, the console's users,
/// certificates and keys, a backup to restore): never blocking on what is not a regular file.
///
/// An `open` of a FIFO with no writer waits for one for ever, so a FIFO at a configured path would
/// hang a start, or a reload hook and every stop after it. Opening with `O_NONBLOCK` returns at
/// once whatever the path is, and the type is then asked of the descriptor opened (`fstat`), not
/// of the path, so nothing can be swapped in between the check and the read.
public enum OperatorFile {
    /// Opens `path` for reading; the caller closes the descriptor. Only a regular file opens.
    public static func open(_ path: String) throws(OperatorFileError) -> Int32 {
        let descriptor = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else {
            // A Unix socket does not open at all (ENXIO): it is there, and not a regular file.
            switch errno {
            case ENOENT, ENOTDIR: throw .missing
            case ENXIO: throw .notRegular
            default: throw .unreadable
            }
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            close(descriptor)
            throw .unreadable
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw .notRegular
        }
        return descriptor
    }

    /// Throws unless `path` is a regular file this process can open for reading.
    public static func requireRegular(_ path: String) throws(OperatorFileError) {
        close(try open(path))
    }

    /// Whether something is at `path` that is not a regular file; false when nothing is there or
    /// it cannot be opened (the reader says so in its own words).
    public static func isPresentButNotRegular(_ path: String) -> Bool {
        do {
            try requireRegular(path)
            return false
        } catch {
            return error == .notRegular
        }
    }

    /// The bytes of the regular file at `path`, refused past `maximumBytes`.
    public static func read(_ path: String, maximumBytes: Int) throws(OperatorFileError) -> [UInt8] {
        let descriptor = try open(path)
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > maximumBytes { throw .tooLarge(maximumBytes: maximumBytes) }
        }
    }
}
