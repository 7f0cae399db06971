// SPDX-License-Identifier: Apache-2.0
import CSQLite
import Foundation

/// What `wxpay-gateway doctor` learns of a database without changing it: never migrated (only
/// `serve` migrates), never written (a write transaction is begun and rolled back).
public struct StoreInspection: Sendable, Hashable {
    /// The last migration applied; 0 for a database not created yet.
    public var schemaVersion: Int
    /// The last migration this program knows.
    public var latestVersion: Int
    /// Whether a write transaction could begin (SQLite: the file and its directory are writable and
    /// no restore holds it; PostgreSQL: the server is not a read-only standby and the role may
    /// write the orders).
    public var writable: Bool
    /// Whether the database exists yet (`serve` creates and migrates it at its first start).
    public var exists: Bool
}

extension SQLiteOrderStore {
    /// Inspects the database at `path` (absent: whether its directory can take it).
    public static func inspect(path: String) async throws(StorageError) -> StoreInspection {
        let result = await Blocking.run { () -> Result<StoreInspection, StorageError> in
            do throws(StorageError) { return .success(try inspectNow(path: path)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private static func inspectNow(path: String) throws(StorageError) -> StoreInspection {
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
        return StoreInspection(schemaVersion: version, latestVersion: latest, writable: writable, exists: true)
    }
}

extension PostgresOrderStore {
    /// Inspects the PostgreSQL database of `settings` with one connection of its own.
    public static func inspect(_ settings: PostgresSettings) async throws(StorageError) -> StoreInspection {
        let result = await Blocking.run { () -> Result<StoreInspection, StorageError> in
            do throws(StorageError) {
                let connection = try PGConnection.connect(settings)
                defer { connection.close() }
                let results = try connection.run([
                    PGQuery("SELECT to_regclass('schema_migrations') IS NOT NULL"),
                    PGQuery("SELECT pg_is_in_recovery()"),
                    PGQuery("SELECT to_regclass('orders') IS NULL OR has_table_privilege('orders', 'INSERT,UPDATE')"),
                    PGQuery("SELECT has_schema_privilege(current_schema(), 'CREATE')"),
                ], timeout: .seconds(30))
                let migrated = try results[0].first { row throws(StorageError) in try row.bool(0) } ?? false
                let standby = try results[1].first { row throws(StorageError) in try row.bool(0) } ?? true
                let mayWrite = try results[2].first { row throws(StorageError) in try row.bool(0) } ?? false
                let mayCreate = try results[3].first { row throws(StorageError) in try row.bool(0) } ?? false
                let version = migrated
                    ? try connection.run(PGQuery("SELECT COALESCE(MAX(version), 0)::bigint FROM schema_migrations"))
                        .first { row throws(StorageError) in try row.int(0) } ?? 0
                    : 0
                // Before the first start the role must be able to create the tables.
                return .success(StoreInspection(
                    schemaVersion: version, latestVersion: PostgresMigrations.latestVersion,
                    writable: !standby && mayWrite && (migrated || mayCreate), exists: migrated))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}
