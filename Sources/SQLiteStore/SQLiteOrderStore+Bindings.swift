// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore: BindingStore {
    /// Migration 16: what the database is bound to, one row per fact (`owner`, `product:<id>`).
    /// IF NOT EXISTS: the migration runs again cleanly on a schema that has the table but lost
    /// its record.
    static let bindingsSchema: SQL = """
        CREATE TABLE IF NOT EXISTS bindings (
            key TEXT PRIMARY KEY NOT NULL,
            value TEXT NOT NULL,
            recorded_at INTEGER NOT NULL
        ) STRICT;
        """

    public func bindOwner(_ owner: DatabaseOwner, at: Date) async throws(StorageError) -> DatabaseOwner {
        try owner.validate()
        return try await write { db throws(StorageError) in
            try db.run(
                "INSERT INTO bindings (key, value, recorded_at) VALUES ('owner', ?, ?) ON CONFLICT (key) DO NOTHING",
                owner.recorded, at)
            guard
                let recorded = try db.row(
                    "SELECT value FROM bindings WHERE key = 'owner'", decode: { row throws(StorageError) in try row.text(0) }),
                let bound = DatabaseOwner(recorded: recorded)
            else { throw .unexpectedRow }
            return bound
        }
    }

    public func bindProductTerms(_ terms: [ProductTerms], at: Date, reading: NameReading?, adopting: Adoption?)
        async throws(StorageError) -> [ProductTermsChange]
    {
        for product in terms { try product.validate() }
        return try await write { db throws(StorageError) in
            let (changes, writes, forget) = try Self.decideTerms(terms, reading: reading, on: db)
            for product in writes {
                try db.run(
                    """
                    INSERT INTO bindings (key, value, recorded_at) VALUES ('product:' || ?1, ?2, ?3)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value, recorded_at = excluded.recorded_at
                    """,
                    product.productID, product.terms, at)
            }
            if changes.isEmpty {
                try db.run("INSERT INTO bindings (key, value, recorded_at) VALUES (?, 'bound', ?) ON CONFLICT (key) DO NOTHING",
                           ProductTerms.boundMarker, at)
                if let adopting { try Self.adoptUnknownPurchases(terms, adopting, on: db) }
                for productID in forget {
                    try db.run("DELETE FROM bindings WHERE key = ?1 OR (substr(key, 1, 5) = ?2 AND value = ?3)",
                               "product:" + productID, ProductTerms.namePrefix, productID)
                }
                for (name, productID) in ProductTerms.recordedNames(terms) {
                    try db.run(
                        """
                        INSERT INTO bindings (key, value, recorded_at) VALUES (?1, ?2, ?3)
                        ON CONFLICT (key) DO UPDATE SET value = excluded.value
                        """, ProductTerms.namePrefix + name, productID, at)
                }
            }
            return changes
        }
    }

    /// `ProductTerms.decide` on what `db` has on record, read in the caller's transaction (the
    /// binding's write, or doctor's look that writes nothing).
    static func decideTerms(_ terms: [ProductTerms], reading: NameReading?, on db: SQLiteConnection) throws(StorageError)
        -> (changes: [ProductTermsChange], writes: [ProductTerms], forget: [String])
    {
        // Every product and name on record (a catalog's few hundred rows); a scan of the orders
        // for `sold`, for a changed or deleted product only, and for `soldThrough`, for an App
        // Store product id its product no longer gives only.
        let recorded = try db.rows(
            "SELECT substr(key, 9), value FROM bindings WHERE substr(key, 1, 8) = 'product:'",
            decode: { row throws(StorageError) in (try row.text(0), try row.text(1)) })
        let names = try db.rows(
            "SELECT substr(key, 6), value FROM bindings WHERE substr(key, 1, 5) = ?", ProductTerms.namePrefix,
            decode: { row throws(StorageError) in (try row.text(0), try row.text(1)) })
        let firstBinding = try db.row(
            "SELECT NOT EXISTS (SELECT 1 FROM bindings WHERE key = ?)", ProductTerms.boundMarker,
            decode: { row throws(StorageError) in try row.int64(0) }) == 1
        return try ProductTerms.decide(
            terms, recorded: Dictionary(recorded, uniquingKeysWith: { first, _ in first }),
            recordedNames: Dictionary(names, uniquingKeysWith: { first, _ in first }),
            firstBinding: firstBinding,
            sold: { id throws(StorageError) in
                try db.row("SELECT EXISTS (SELECT 1 FROM orders WHERE product_id = ?)", id,
                           decode: { row throws(StorageError) in try row.int64(0) }) == 1
            },
            soldThrough: { id, apple throws(StorageError) in
                try db.row("SELECT EXISTS (SELECT 1 FROM orders WHERE product_id = ? AND apple_product_id = ?)", id, apple,
                           decode: { row throws(StorageError) in try row.int64(0) }) == 1
            },
            reading: reading,
            soldIDs: { () throws(StorageError) in
                try db.rows("SELECT DISTINCT product_id FROM orders WHERE product_id IS NOT NULL",
                            decode: { row throws(StorageError) in try row.text(0) })
            })
    }

    /// Credits the App Store purchases recorded without a product to the product that now gives
    /// their App Store product id for the first time (not yet a `name:` row): from then on they
    /// are that product's sales, their grant fixed like any (`bindProductTerms`' `adopting`).
    private static func adoptUnknownPurchases(_ terms: [ProductTerms], _ adopting: Adoption, on db: SQLiteConnection)
        throws(StorageError)
    {
        let onRecord = Set(try db.rows(
            "SELECT substr(key, 6) FROM bindings WHERE substr(key, 1, 5) = ?", ProductTerms.namePrefix,
            decode: { row throws(StorageError) in try row.text(0) }))
        let newlyGiven = ProductTerms.newlyGivenAppleIDs(terms, onRecord: onRecord)
        guard !newlyGiven.isEmpty else { return }
        // One scan for all of them (a database's first binding gives every App Store id at once).
        let unknown = try db.rows(
            "SELECT " + OrderRecord.columns + " FROM orders WHERE product_id IS NULL AND channel = 'apple'",
            decode: OrderRecord.init(row:))
        for unknownOrder in unknown {
            guard let apple = unknownOrder.appleProductID, let productID = newlyGiven[apple] else { continue }
            let order = unknownOrder.adopted(by: productID)
            let (event, outbox) = adopting(order)
            try db.run("UPDATE orders SET product_id = ?1, flags = ?4, updated_at = ?2 WHERE out_trade_no = ?3",
                       productID, event.at, order.outTradeNo, OrderRecord.encodeFlags(order.flags))
            try appendEvent(event, to: order.outTradeNo, on: db)
            if let outbox { try insertOutbox(outbox, on: db) }
        }
    }
}
