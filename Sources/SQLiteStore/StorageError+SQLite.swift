// SPDX-License-Identifier: Apache-2.0
import CSQLite
import StorageCore

extension StorageError {
    /// The one place where a SQLite result code becomes a `StorageError`.
    ///
    /// `sqlite3_errmsg` names at most a table, a column or a constraint (values are always bound,
    /// never part of the SQL text), and it only reaches `debugDescription`.
    static func sqlite(_ result: Int32, connection: OpaquePointer?, during context: String) -> StorageError {
        let code: Code
        switch result & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED: code = .busy
        case SQLITE_CONSTRAINT: code = .constraint
        case SQLITE_CORRUPT, SQLITE_NOTADB: code = .corrupt
        case SQLITE_IOERR, SQLITE_PROTOCOL, SQLITE_NOLFS: code = .io
        case SQLITE_FULL: code = .full
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH: code = .readOnly
        case SQLITE_CANTOPEN: code = .openFailed
        case SQLITE_MISUSE, SQLITE_RANGE:
            // A bad bind index or a call in the wrong order is our bug; fail loudly in debug builds
            // and degrade to an error in release rather than taking the gateway down.
            assertionFailure("SQLite misuse during \(context)")
            code = .other
        default: code = .other
        }
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        return StorageError(code: code, sqliteCode: result, context: context, message: message)
    }
}
