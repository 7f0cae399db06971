// SPDX-License-Identifier: Apache-2.0
import CSQLite
import Foundation
import StorageCore

extension SQLiteOrderStore {
    /// Inspects the database at `path` (absent: whether its directory can take it), and what it
    /// would refuse of a catalog's `terms`.
    public static func inspect(path: String, terms: [ProductTerms] = [], reading: NameReading? = nil) async throws(StorageError)
        -> StoreInspection
    {
        let result = await Blocking.run { () -> Result<StoreInspection, StorageError> in
            do throws(StorageError) {
                return .success(try inspectNow(path: path, terms: terms, reading: reading))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private static func inspectNow(path: String, terms: [ProductTerms], reading: NameReading?) throws(StorageError)
        -> StoreInspection
    {
        let latest = SQLiteMigrations.latestVersion
        guard FileManager.default.fileExists(atPath: path) else {
            var directory = (path as NSString).deletingLastPathComponent
            if directory.isEmpty { directory = "." }
            // The nearest existing ancestor must take the directories and the file.
            while !FileManager.default.fileExists(atPath: directory) && directory != "/" {
                directory = (directory as NSString).deletingLastPathComponent
                if directory.isEmpty { directory = "." }
            }
            return StoreInspection(schemaVersion: 0, latestVersion: latest,
                                   writable: FileManager.default.isWritableFile(atPath: directory), exists: false)
        }
        // Under the usage lock, as every connection to a database in service (SQLiteUsageLock).
        let lock = try SQLiteUsageLock.shared(path, create: false, timeout: .seconds(5))
        defer { lock.release() }
        let connection = try SQLiteConnection.open(path: path, readOnly: false, busyTimeout: .seconds(5))
        defer { connection.close() }
        let hasMigrations = try connection.row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'") { row throws(StorageError) in
                try row.int(0)
            } == 1
        let version = hasMigrations
            ? try connection.row("SELECT COALESCE(MAX(version), 0) FROM schema_migrations") { row throws(StorageError) in
                try row.int(0)
            } ?? 0
            : 0
        var writable = true
        do throws(StorageError) {
            try connection.execute("BEGIN IMMEDIATE")
            try connection.execute("ROLLBACK")
        } catch {
            writable = false
        }
        let columns = Set(try connection.rows("SELECT name FROM pragma_table_info('orders')") { row throws(StorageError) in
            try row.text(0)
        })
        let openV2Orders = columns.isEmpty ? 0
            : try connection.row(StoreInspection.openV2OrdersCount(columns: columns)) { row throws(StorageError) in try row.int(0) } ?? 0
        let hasBindings = try connection.row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'bindings'") { row throws(StorageError) in
                try row.int(0)
            } == 1
        let owner = hasBindings
            ? try connection.row("SELECT value FROM bindings WHERE key = 'owner'") { row throws(StorageError) in
                try row.text(0)
            }.flatMap(DatabaseOwner.init(recorded:))
            : nil
        // The binding's rule, read only (a database from before bindings binds at its next start).
        let termChanges = hasBindings ? try decideTerms(terms, reading: reading, on: connection).changes : []
        return StoreInspection(schemaVersion: version, latestVersion: latest, writable: writable, exists: true,
                               openV2Orders: openV2Orders, owner: owner, termChanges: termChanges)
    }
}
