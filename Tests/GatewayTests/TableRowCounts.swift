// SPDX-License-Identifier: Apache-2.0
import CSQLite
import Foundation

/// The number of rows in every table of a SQLite database, tables discovered from its schema (so a
/// table a later migration adds is counted too), read over a separate read-only connection.
enum TableRowCounts {
    static func of(_ path: String) -> [String: Int] {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let handle else {
            sqlite3_close(handle)
            return [:]
        }
        defer { sqlite3_close(handle) }
        sqlite3_busy_timeout(handle, 30_000)
        let tables = column(handle, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        var counts: [String: Int] = [:]
        for table in tables {
            let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            counts[table] = column(handle, "SELECT COUNT(*) FROM \(quoted)").first.flatMap { Int($0) } ?? -1
        }
        return counts
    }

    private static func column(_ handle: OpaquePointer, _ sql: String) -> [String] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else { return [] }
        defer { sqlite3_finalize(statement) }
        var values: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            if let text = sqlite3_column_text(statement, 0) { values.append(String(cString: text)) }
        }
        return values
    }
}
