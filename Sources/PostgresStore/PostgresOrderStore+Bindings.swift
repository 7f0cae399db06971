// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension PostgresOrderStore: BindingStore {
    /// Migration 17: what the database is bound to, one row per fact (`owner`, `product:<id>`).
    static let bindingsSchema: [SQL] = [
        """
        CREATE TABLE IF NOT EXISTS bindings (
            key text PRIMARY KEY,
            value text NOT NULL,
            recorded_at timestamptz NOT NULL
        )
        """,
        PostgresMigrations.amcheckFunction(relations: [
            "orders", "order_events", "outbox", "refunds", "apple_transactions", "appstore_notifications", "console_sessions",
            "console_login_failures", "console_login_locks", "console_login_addresses", "audit_log", "appstore_backfill",
            "appstore_consumption", "appstore_subscriptions", "bindings",
        ]),
    ]

    public func bindOwner(_ owner: DatabaseOwner, at: Date) async throws(StorageError) -> DatabaseOwner {
        try owner.validate()
        return try await write(key: "bindings") { db throws(StorageError) in
            let results = try db.run([
                PGQuery("INSERT INTO bindings (key, value, recorded_at) VALUES ('owner', $1, $2) ON CONFLICT (key) DO NOTHING",
                        owner.recorded, at),
                PGQuery("SELECT value FROM bindings WHERE key = 'owner'"),
            ])
            guard let recorded = try results[1].first({ row throws(StorageError) in try row.text(0) }),
                  let bound = DatabaseOwner(recorded: recorded)
            else { throw .unexpectedRow }
            return (bound, nil)
        }
    }

    public func bindProductTerms(_ terms: [ProductTerms], at: Date, reading: NameReading?, adopting: Adoption?)
        async throws(StorageError) -> [ProductTermsChange]
    {
        for product in terms { try product.validate() }
        return try await write(key: "bindings") { db throws(StorageError) in
            // Instances reloading one catalog at once decide one after the other (the lock is the
            // transaction's).
            _ = try db.run(PGQuery("LOCK TABLE bindings IN SHARE ROW EXCLUSIVE MODE"))
            let (changes, writes, forget) = try Self.decideTerms(terms, reading: reading, on: db)
            for product in writes {
                _ = try db.run(PGQuery(
                    """
                    INSERT INTO bindings (key, value, recorded_at) VALUES ('product:' || $1, $2, $3)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value, recorded_at = excluded.recorded_at
                    """,
                    product.productID, product.terms, at))
            }
            if changes.isEmpty {
                _ = try db.run(PGQuery(
                    "INSERT INTO bindings (key, value, recorded_at) VALUES ($1, 'bound', $2) ON CONFLICT (key) DO NOTHING",
                    ProductTerms.boundMarker, at))
                if let adopting { try Self.adoptUnknownPurchases(terms, adopting, on: db) }
                for productID in forget {
                    _ = try db.run(PGQuery(
                        "DELETE FROM bindings WHERE key = $1 OR (substr(key, 1, 5) = $2 AND value = $3)",
                        "product:" + productID, ProductTerms.namePrefix, productID))
                }
                for (name, productID) in ProductTerms.recordedNames(terms) {
                    _ = try db.run(PGQuery(
                        """
                        INSERT INTO bindings (key, value, recorded_at) VALUES ($1, $2, $3)
                        ON CONFLICT (key) DO UPDATE SET value = excluded.value
                        """, ProductTerms.namePrefix + name, productID, at))
                }
            }
            return (changes, nil)
        }
    }

    /// `ProductTerms.decide` on what `db` has on record, read in the caller's transaction (the
    /// binding's write, or doctor's look that writes nothing).
    static func decideTerms(_ terms: [ProductTerms], reading: NameReading?, on db: PGConnection) throws(StorageError)
        -> (changes: [ProductTermsChange], writes: [ProductTerms], forget: [String])
    {
        // Every product and name on record (a catalog's few hundred rows); a scan of the orders
        // for `sold`, for a changed or deleted product only, and for `soldThrough`, for an App
        // Store product id its product no longer gives only.
        let recorded = try db.run(PGQuery(
            "SELECT substr(key, 9), value FROM bindings WHERE substr(key, 1, 8) = 'product:'"))
            .rows { row throws(StorageError) in (try row.text(0), try row.text(1)) }
        let names = try db.run(PGQuery(
            "SELECT substr(key, 6), value FROM bindings WHERE substr(key, 1, 5) = $1", ProductTerms.namePrefix))
            .rows { row throws(StorageError) in (try row.text(0), try row.text(1)) }
        let firstBinding = try db.run(PGQuery(
            "SELECT NOT EXISTS (SELECT 1 FROM bindings WHERE key = $1)", ProductTerms.boundMarker))
            .first { row throws(StorageError) in try row.bool(0) } ?? true
        return try ProductTerms.decide(
            terms, recorded: Dictionary(recorded, uniquingKeysWith: { first, _ in first }),
            recordedNames: Dictionary(names, uniquingKeysWith: { first, _ in first }),
            firstBinding: firstBinding,
            sold: { id throws(StorageError) in
                try db.run(PGQuery("SELECT EXISTS (SELECT 1 FROM orders WHERE product_id = $1)", id))
                    .first { row throws(StorageError) in try row.bool(0) } ?? false
            },
            soldThrough: { id, apple throws(StorageError) in
                try db.run(PGQuery(
                    "SELECT EXISTS (SELECT 1 FROM orders WHERE product_id = $1 AND apple_product_id = $2)", id, apple))
                    .first { row throws(StorageError) in try row.bool(0) } ?? false
            },
            reading: reading,
            soldIDs: { () throws(StorageError) in
                try db.run(PGQuery("SELECT DISTINCT product_id FROM orders WHERE product_id IS NOT NULL"))
                    .rows { row throws(StorageError) in try row.text(0) }
            })
    }

    /// Credits the App Store purchases recorded without a product to the product that now gives
    /// their App Store product id for the first time (not yet a `name:` row): from then on they
    /// are that product's sales, their grant fixed like any (`bindProductTerms`' `adopting`).
    private static func adoptUnknownPurchases(_ terms: [ProductTerms], _ adopting: Adoption, on db: PGConnection)
        throws(StorageError)
    {
        let onRecord = Set(try db.run(PGQuery(
            "SELECT substr(key, 6) FROM bindings WHERE substr(key, 1, 5) = $1", ProductTerms.namePrefix))
            .rows { row throws(StorageError) in try row.text(0) })
        let newlyGiven = ProductTerms.newlyGivenAppleIDs(terms, onRecord: onRecord)
        guard !newlyGiven.isEmpty else { return }
        // One scan for all of them (a database's first binding gives every App Store id at once).
        let unknown = try db.run(PGQuery(
            "SELECT " + OrderRecord.columns + " FROM orders WHERE product_id IS NULL AND channel = 'apple' FOR UPDATE"))
            .rows(OrderRecord.init(row:))
        for unknownOrder in unknown {
            guard let apple = unknownOrder.appleProductID, let productID = newlyGiven[apple] else { continue }
            let order = unknownOrder.adopted(by: productID)
            let (event, outbox) = adopting(order)
            var queries = [
                PGQuery("UPDATE orders SET product_id = $1, flags = $4, updated_at = $2 WHERE out_trade_no = $3",
                        productID, event.at, order.outTradeNo, OrderRecord.encodeFlags(order.flags)),
                insertEvent(event, of: order.outTradeNo),
            ]
            if let outbox { queries.append(insertOutbox(outbox)) }
            _ = try db.run(queries)
        }
    }
}
