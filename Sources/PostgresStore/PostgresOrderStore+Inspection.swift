// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension PostgresOrderStore {
    /// Inspects the PostgreSQL database of `settings` with one connection of its own, and what it
    /// would refuse of a catalog's `terms`.
    public static func inspect(_ settings: PostgresSettings, terms: [ProductTerms] = [], reading: NameReading? = nil)
        async throws(StorageError)
        -> StoreInspection
    {
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
                let columns = Set(try connection.run(PGQuery(
                    "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'orders'"))
                    .rows { row throws(StorageError) in try row.text(0) })
                let openV2Orders = columns.isEmpty ? 0
                    : try connection.run(PGQuery(StoreInspection.openV2OrdersCount(columns: columns)))
                        .first { row throws(StorageError) in try row.int(0) } ?? 0
                let hasBindings = try connection.run(PGQuery("SELECT to_regclass('bindings') IS NOT NULL"))
                    .first { row throws(StorageError) in try row.bool(0) } ?? false
                let owner = hasBindings
                    ? try connection.run(PGQuery("SELECT value FROM bindings WHERE key = 'owner'"))
                        .first { row throws(StorageError) in try row.text(0) }.flatMap(DatabaseOwner.init(recorded:))
                    : nil
                // The binding's rule, read only (a database from before bindings binds at its next start).
                let termChanges = hasBindings ? try decideTerms(terms, reading: reading, on: connection).changes : []
                // Before the first start the role must be able to create the tables.
                return .success(StoreInspection(
                    schemaVersion: version, latestVersion: PostgresMigrations.latestVersion,
                    writable: !standby && mayWrite && (migrated || mayCreate), exists: migrated, openV2Orders: openV2Orders,
                    owner: owner, termChanges: termChanges))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}
