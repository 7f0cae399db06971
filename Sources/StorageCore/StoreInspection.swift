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
    /// WeChat orders created with API v2 and still open (NOTPAY, USERPAYING): those a gateway without
    /// the v2 key finishes through v3. 0 for a database not created yet.
    public var openV2Orders: Int
    /// Whose the database is (`BindingStore.bindOwner`), once a `serve` recorded it; nil before.
    public var owner: DatabaseOwner?
    /// What `BindingStore.bindProductTerms` would refuse of the catalog terms the inspection was
    /// given (the sold products they change or leave out); empty when it would take them.
    public var termChanges: [ProductTermsChange]

    package init(schemaVersion: Int, latestVersion: Int, writable: Bool, exists: Bool, openV2Orders: Int = 0,
                 owner: DatabaseOwner? = nil, termChanges: [ProductTermsChange] = []) {
        self.schemaVersion = schemaVersion
        self.latestVersion = latestVersion
        self.writable = writable
        self.exists = exists
        self.openV2Orders = openV2Orders
        self.owner = owner
        self.termChanges = termChanges
    }

    /// The statement counting `openV2Orders`, the same for both stores, for an orders table with
    /// `columns`: a database migrated before orders had a channel or an API version holds only
    /// WeChat orders of v2.
    package static func openV2OrdersCount(columns: Set<String>) -> SQL {
        var sql: SQL = "SELECT count(*) FROM orders WHERE state IN ('NOTPAY', 'USERPAYING')"
        if columns.contains("channel") { sql = sql + " AND channel = 'wechat'" }
        if columns.contains("api_version") { sql = sql + " AND api_version = 'v2'" }
        return sql
    }
}
