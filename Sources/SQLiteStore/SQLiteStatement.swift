// SPDX-License-Identifier: Apache-2.0
import CSQLite
import Foundation
import StorageCore

/// A prepared statement borrowed from a connection's cache for one execution.
struct SQLiteStatement {
    let handle: OpaquePointer
    let connection: OpaquePointer

    func bind(_ parameters: [any SQLiteBindable]) throws(StorageError) {
        for (offset, parameter) in parameters.enumerated() {
            try bind(parameter.sqliteValue, at: Int32(offset + 1))
        }
    }

    private func bind(_ value: SQLiteValue, at index: Int32) throws(StorageError) {
        let result: Int32
        switch value {
        case .null:
            result = sqlite3_bind_null(handle, index)
        case .integer(let integer):
            result = sqlite3_bind_int64(handle, index, integer)
        case .text(var text):
            result = text.withUTF8 { bytes in
                // An empty buffer may have a nil base address, which SQLite would bind as NULL.
                guard let base = bytes.baseAddress, bytes.count > 0 else {
                    return sqlite3_bind_text(handle, index, "", 0, wxpay_sqlite_transient())
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { chars in
                    sqlite3_bind_text(handle, index, chars, Int32(bytes.count), wxpay_sqlite_transient())
                }
            }
        }
        guard result == SQLITE_OK else {
            throw .sqlite(result, connection: connection, during: "bind")
        }
    }

    /// Advances one row; `true` when a row is available.
    func step() throws(StorageError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let failure: throw .sqlite(failure, connection: connection, during: "step")
        }
    }

    var row: SQLiteRow { SQLiteRow(handle: handle) }
}

/// The current row of a statement; valid until the next `step`.
///
/// Each column is taken once as a value (`sqlite3_column_value`) and read through the
/// `sqlite3_value_*` calls: every `sqlite3_column_*` call checks the statement and the column and
/// ends in SQLite's API-exit bookkeeping, and a type check, the text and its length made three of
/// them per column, about a tenth of a hundred-row read. Values taken this way are
/// "unprotected", which matters only when a connection is shared between threads; ours never are
/// (SQLITE_OPEN_NOMUTEX, one thread at a time).
struct SQLiteRow: StoreRow {
    let handle: OpaquePointer

    private func value(_ column: Int32) -> OpaquePointer? {
        sqlite3_column_value(handle, column)
    }

    func isNull(_ column: Int32) -> Bool {
        sqlite3_value_type(value(column)) == SQLITE_NULL
    }

    func int64(_ column: Int32) throws(StorageError) -> Int64 {
        let value = value(column)
        guard sqlite3_value_type(value) == SQLITE_INTEGER else { throw .unexpectedRow }
        return sqlite3_value_int64(value)
    }

    func text(_ column: Int32) throws(StorageError) -> String {
        let value = value(column)
        guard sqlite3_value_type(value) == SQLITE_TEXT else { throw .unexpectedRow }
        return Self.text(of: value)
    }

    func optionalText(_ column: Int32) throws(StorageError) -> String? {
        let value = value(column)
        switch sqlite3_value_type(value) {
        case SQLITE_NULL: return nil
        case SQLITE_TEXT: return Self.text(of: value)
        default: throw .unexpectedRow
        }
    }

    func guaranteedInt64(_ column: Int32) throws(StorageError) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    /// The text of a value whose type is TEXT.
    private static func text(of value: OpaquePointer?) -> String {
        // Read the length after the pointer: sqlite3_value_bytes is only reliable in that order.
        guard let bytes = sqlite3_value_text(value) else { return "" }
        let count = Int(sqlite3_value_bytes(value))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    func date(_ column: Int32) throws(StorageError) -> Date {
        StoreTime.date(milliseconds: try int64(column))
    }
}
