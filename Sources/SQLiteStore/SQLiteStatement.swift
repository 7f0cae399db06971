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
struct SQLiteRow: StoreRow {
    let handle: OpaquePointer

    func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    func int64(_ column: Int32) throws(StorageError) -> Int64 {
        guard sqlite3_column_type(handle, column) == SQLITE_INTEGER else { throw .unexpectedRow }
        return sqlite3_column_int64(handle, column)
    }

    func text(_ column: Int32) throws(StorageError) -> String {
        guard sqlite3_column_type(handle, column) == SQLITE_TEXT else { throw .unexpectedRow }
        // Read the length after the pointer: sqlite3_column_bytes is only reliable in that order.
        guard let bytes = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    func date(_ column: Int32) throws(StorageError) -> Date {
        StoreTime.date(milliseconds: try int64(column))
    }
}
