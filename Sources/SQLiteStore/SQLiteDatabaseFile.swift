// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// The names a SQLite database file goes by, and why only one of them is safe.
///
/// SQLite keeps a database's write-ahead log and its index beside the name a program opened
/// (`<name>-wal`, `<name>-shm`), after resolving symbolic links. A hard link is another name of
/// the same file that nothing can resolve: a program opening it finds no WAL beside it, so it reads
/// the file without the committed writes still in the WAL, and a WAL left beside the other name is
/// replayed later over whatever was written through this one. So `backup` and `restore` resolve
/// symbolic links first (the sidecars and the safety copy then belong to the real file) and refuse
/// a file with more than one name, and `serve` and `doctor` warn of one.
public enum SQLiteDatabaseFile {
    /// The file has several hard links; which one a gateway opened cannot be told.
    public struct SeveralNames: Error, Sendable, Hashable, CustomStringConvertible {
        /// The path given (after symbolic links are resolved).
        public let path: String
        /// How many names the file has.
        public let links: Int

        public var description: String {
            "\(path) has \(links) names (hard links): SQLite keeps the WAL beside the name a program opened, "
                + "so committed writes may be in a WAL beside another name, where this command cannot see them; "
                + "remove the extra names (find / -samefile \(path) lists them) and use the name the gateway uses"
        }
    }

    /// `path` with every symbolic link resolved (of the file and its directories), or nil when it
    /// names nothing (a link to nothing included).
    public static func resolved(_ path: String) -> String? {
        guard let real = realpath(path, nil) else { return nil }
        defer { free(real) }
        return String(cString: real)
    }

    /// Makes `directory` and every missing parent, each mode 0700 whatever the umask, as the
    /// database files are 0600: the directories `serve` makes for a database hold nothing but it,
    /// its WAL and its backups' neighbours, which no other user should list or add to. Directories
    /// that exist already are left as they are (the operator's). Returns false when one could not
    /// be made.
    public static func makeDirectories(_ directory: String) -> Bool {
        var made = ""
        for (index, component) in directory.split(separator: "/", omittingEmptySubsequences: false).enumerated() {
            if index == 0 {
                made = String(component)
                if made.isEmpty { continue }
            } else {
                if component.isEmpty { continue }
                made += "/" + component
            }
            var info = stat()
            if stat(made, &info) == 0 { continue }
            guard errno == ENOENT else { return false }
            // The umask can only take bits away from 0700; a default ACL could add some back.
            guard mkdir(made, 0o700) == 0 || errno == EEXIST else { return false }
            _ = chmod(made, 0o700)
        }
        var info = stat()
        return stat(directory, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// How many names (hard links) the file at `path` has, or nil when there is none.
    public static func links(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_nlink)
    }

    /// Refuses a file with more than one name; a missing file passes (nothing to confuse).
    public static func requireOneName(_ path: String) throws(SeveralNames) {
        if let links = links(path), links > 1 { throw SeveralNames(path: path, links: links) }
    }
}
