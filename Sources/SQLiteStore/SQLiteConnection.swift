// SPDX-License-Identifier: Apache-2.0
import CSQLite
import Foundation
import StorageCore

/// One SQLite connection with its prepared-statement cache.
///
/// A connection is confined to the thread of the worker that owns it; nothing here is thread-safe.
// @unchecked Sendable: handed over once, at start, to the one worker thread that uses it thereafter.
final class SQLiteConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    private var statements: [SQL: OpaquePointer] = [:]
    private var isClosed = false

    private init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        assert(isClosed, "SQLiteConnection deinitialised without close()")
    }

    /// Opens (or creates) the database and applies the per-connection settings.
    ///
    /// - Parameters:
    ///   - path: a file path, or `:memory:`.
    ///   - readOnly: reader connections are opened read-only, so a bug cannot write around the writer.
    ///   - busyTimeout: how long a statement waits for a lock held by another connection.
    static func open(path: String, readOnly: Bool, busyTimeout: Duration) throws(StorageError) -> SQLiteConnection {
        _ = processSettings
        var pointer: OpaquePointer?
        // NOMUTEX: each connection is used by one thread, so SQLite's own per-call mutex is wasted.
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            | SQLITE_OPEN_NOMUTEX
        let result = sqlite3_open_v2(path, &pointer, flags, nil)
        guard result == SQLITE_OK, let pointer else {
            // Even a failed open usually allocates a handle, which carries the message.
            let error = StorageError.sqlite(result, connection: pointer, during: "open")
            sqlite3_close_v2(pointer)
            throw error
        }
        let connection = SQLiteConnection(handle: pointer)
        do throws(StorageError) {
            sqlite3_extended_result_codes(pointer, 1)
            let milliseconds = busyTimeout.components.seconds * 1000
                + busyTimeout.components.attoseconds / 1_000_000_000_000_000
            sqlite3_busy_timeout(pointer, Int32(clamping: milliseconds))
            try connection.execute("PRAGMA foreign_keys = ON")
            // Schema objects (triggers, views) may not call functions with side effects.
            try connection.execute("PRAGMA trusted_schema = OFF")
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    /// Settings for the whole process, applied once before the first connection opens. Memory
    /// statistics off: nothing reads them (no soft heap limit, no `sqlite3_memory_used`), and
    /// keeping them cost a global mutex and two counter updates per allocation, on the writer
    /// thread every payment waits for. If SQLite was already in use (a test opened a raw
    /// connection first) the call is refused and the statistics simply stay on.
    private static let processSettings: Void = {
        _ = wxpay_sqlite_disable_memory_statistics()
    }()

    /// Runs static SQL, possibly several statements, with no parameters (schema, pragmas,
    /// transaction control).
    func execute(_ sql: SQL) throws(StorageError) {
        let result = sqlite3_exec(handle, sql.text, nil, nil, nil)
        guard result == SQLITE_OK else { throw .sqlite(result, connection: handle, during: "execute") }
    }

    /// Runs one statement to completion and returns the number of rows it changed.
    @discardableResult
    func run(_ sql: SQL, _ parameters: any SQLiteBindable...) throws(StorageError) -> Int {
        try withStatement(sql, parameters) { statement throws(StorageError) in
            while try statement.step() {}
            return Int(sqlite3_changes(handle))
        }
    }

    /// Runs one statement and decodes every row; `expecting` rows are made room for up front
    /// (a read that usually returns many, such as a user's payments, then does not grow its
    /// array seven times).
    func rows<T>(
        _ sql: SQL, _ parameters: any SQLiteBindable..., expecting: Int = 0, decode: (SQLiteRow) throws(StorageError) -> T
    ) throws(StorageError) -> [T] {
        try withStatement(sql, parameters) { statement throws(StorageError) in
            var decoded: [T] = []
            decoded.reserveCapacity(expecting)
            while try statement.step() {
                decoded.append(try decode(statement.row))
            }
            return decoded
        }
    }

    /// Runs one statement and decodes the first row, if any.
    func row<T>(
        _ sql: SQL, _ parameters: any SQLiteBindable..., decode: (SQLiteRow) throws(StorageError) -> T
    ) throws(StorageError) -> T? {
        try withStatement(sql, parameters) { statement throws(StorageError) in
            guard try statement.step() else { return nil }
            let value = try decode(statement.row)
            // Finish the statement so it releases its read lock and completes any write.
            while try statement.step() {}
            return value
        }
    }

    /// The sqlite3 handle, for the APIs that take two connections (the online backup).
    var rawHandle: OpaquePointer { handle }

    /// Whether no transaction is open: after a failure, SQLite may have rolled back the whole
    /// transaction on its own (disk full, I/O error), and the writer must know.
    var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// Finalizes every cached statement and closes the connection.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        for statement in statements.values {
            sqlite3_finalize(statement)
        }
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Borrows the cached prepared statement for `sql`, binds the parameters, and resets it after
    /// `body`, whatever happens, so the next user finds it clean.
    private func withStatement<T>(
        _ sql: SQL, _ parameters: [any SQLiteBindable], _ body: (SQLiteStatement) throws(StorageError) -> T
    ) throws(StorageError) -> T {
        let statement = SQLiteStatement(handle: try prepared(sql), connection: handle)
        defer {
            sqlite3_reset(statement.handle)
            sqlite3_clear_bindings(statement.handle)
        }
        try statement.bind(parameters)
        return try body(statement)
    }

    private func prepared(_ sql: SQL) throws(StorageError) -> OpaquePointer {
        if let cached = statements[sql] { return cached }
        var statement: OpaquePointer?
        // PERSISTENT: these statements live for the connection's lifetime.
        let result = sqlite3_prepare_v3(handle, sql.text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard result == SQLITE_OK, let statement else {
            throw .sqlite(result, connection: handle, during: "prepare")
        }
        statements[sql] = statement
        return statement
    }
}
