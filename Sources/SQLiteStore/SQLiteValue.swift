// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

/// The three storage classes the schema uses (tables are STRICT: TEXT, INTEGER, NULL).
enum SQLiteValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case text(String)
}

/// A Swift value that binds to a statement parameter.
protocol SQLiteBindable: Sendable {
    var sqliteValue: SQLiteValue { get }
}

extension String: SQLiteBindable {
    var sqliteValue: SQLiteValue { .text(self) }
}

extension Int: SQLiteBindable {
    var sqliteValue: SQLiteValue { .integer(Int64(self)) }
}

extension Int64: SQLiteBindable {
    var sqliteValue: SQLiteValue { .integer(self) }
}

extension Date: SQLiteBindable {
    /// Times are stored as integer milliseconds since 1970: sortable, indexable, and readable with
    /// `datetime(x / 1000, 'unixepoch')` in the sqlite3 shell.
    var sqliteValue: SQLiteValue { .integer(StoreTime.milliseconds(self)) }
}

extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    var sqliteValue: SQLiteValue { self?.sqliteValue ?? .null }
}

extension SQLiteValue: SQLiteBindable {
    var sqliteValue: SQLiteValue { self }
}
