// SPDX-License-Identifier: Apache-2.0
import Foundation
import StoreTestSupport

/// The number of rows in every table of a store's database, tables discovered from its schema (so a
/// table a later migration adds is counted too), read over a separate connection.
enum TableRowCounts {
    static func of(_ database: TestDatabase) async -> [String: Int] {
        await database.tableRowCounts()
    }
}
