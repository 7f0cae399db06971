// SPDX-License-Identifier: Apache-2.0
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

    package init(schemaVersion: Int, latestVersion: Int, writable: Bool, exists: Bool) {
        self.schemaVersion = schemaVersion
        self.latestVersion = latestVersion
        self.writable = writable
        self.exists = exists
    }
}
