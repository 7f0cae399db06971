// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

/// The schema, as numbered migrations applied in order, each once, in one transaction at open.
///
/// Never edit a released migration: add a new one. A database migrated by a newer program (a higher
/// version than the last one here) is refused rather than used half-understood.
enum SQLiteMigrations {
    struct Migration: Sendable {
        let version: Int
        let name: String
        let sql: SQL
        /// Columns added where missing (SQLite has no `ADD COLUMN IF NOT EXISTS`), so that the
        /// migration runs again cleanly on a schema that has them but lost its record.
        var columns: [NewColumn] = []
    }

    struct NewColumn: Sendable {
        let table: SQL
        let name: SQL
        let definition: SQL
    }

    static let all: [Migration] = [
        Migration(version: 1, name: "orders, events, outbox", sql: """
            CREATE TABLE orders (
                out_trade_no TEXT PRIMARY KEY NOT NULL,
                amount INTEGER NOT NULL CHECK (amount > 0),
                description TEXT NOT NULL,
                client_ip TEXT NOT NULL,
                attach TEXT,
                user_id TEXT,
                product_id TEXT,
                sign_type TEXT NOT NULL,
                time_expire TEXT NOT NULL,
                expires_at INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                state TEXT NOT NULL
                    CHECK (state IN ('NOTPAY', 'SUCCESS', 'REFUND', 'CLOSED', 'REVOKED', 'PAYERROR', 'USERPAYING')),
                transaction_id TEXT,
                paid_at INTEGER,
                prepay_id TEXT,
                prepay_issued_at INTEGER,
                parameters_digest TEXT NOT NULL,
                last_notify_at INTEGER,
                last_queried_at INTEGER,
                flags TEXT NOT NULL DEFAULT '',
                updated_at INTEGER NOT NULL,
                claimed_by TEXT,
                claimed_until INTEGER
            ) STRICT;
            CREATE INDEX orders_by_transaction_id ON orders (transaction_id) WHERE transaction_id IS NOT NULL;
            CREATE INDEX orders_by_user_id ON orders (user_id, created_at) WHERE user_id IS NOT NULL;
            CREATE INDEX orders_by_state_created_at ON orders (state, created_at);
            CREATE INDEX orders_open_by_expires_at ON orders (expires_at) WHERE state IN ('NOTPAY', 'USERPAYING');

            -- C1: once paid, an order is never reported unpaid again, whatever code runs against it.
            CREATE TRIGGER orders_paid_stays_paid BEFORE UPDATE OF state ON orders
            WHEN OLD.state IN ('SUCCESS', 'REFUND') AND NEW.state NOT IN ('SUCCESS', 'REFUND')
            BEGIN SELECT RAISE(ABORT, 'a paid order cannot become unpaid'); END;

            CREATE TABLE order_events (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                out_trade_no TEXT NOT NULL REFERENCES orders (out_trade_no),
                at INTEGER NOT NULL,
                kind TEXT NOT NULL,
                detail TEXT NOT NULL
            ) STRICT;
            CREATE INDEX order_events_by_order ON order_events (out_trade_no, id);
            -- The timeline is evidence: append-only, enforced by the database itself.
            CREATE TRIGGER order_events_no_update BEFORE UPDATE ON order_events
            BEGIN SELECT RAISE(ABORT, 'order_events is append-only'); END;
            CREATE TRIGGER order_events_no_delete BEFORE DELETE ON order_events
            BEGIN SELECT RAISE(ABORT, 'order_events is append-only'); END;

            CREATE TABLE outbox (
                id TEXT PRIMARY KEY NOT NULL,
                out_trade_no TEXT NOT NULL REFERENCES orders (out_trade_no),
                type TEXT NOT NULL,
                payload TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
                next_attempt_at INTEGER NOT NULL,
                delivered_at INTEGER,
                dead_at INTEGER,
                last_error TEXT,
                claimed_by TEXT,
                claimed_until INTEGER
            ) STRICT;
            CREATE INDEX outbox_pending_by_next_attempt_at ON outbox (next_attempt_at)
                WHERE delivered_at IS NULL AND dead_at IS NULL;
            CREATE INDEX outbox_by_order ON outbox (out_trade_no);
            """),
        // The reconciler closes expired orders from its leased batches (claimOpenOrders), so no
        // query reads open orders by expiry, and the index only cost a write per order change.
        Migration(version: 2, name: "drop the unused expiry index", sql: """
            DROP INDEX orders_open_by_expires_at;
            """),
        Migration(version: 3, name: "refunds", sql: SQLiteOrderStore.refundsSchema),
        Migration(version: 4, name: "App Store purchases", sql: SQLiteOrderStore.appStoreSchema),
        Migration(version: 5, name: "console sessions and logins, audit log, orders by creation",
                  sql: SQLiteOrderStore.consoleSchema + SQLiteOrderStore.auditSchema),
        Migration(version: 6, name: "console logins by name and address, and the addresses names sign in from",
                  sql: SQLiteOrderStore.consoleLoginsByAddressSchema),
        Migration(version: 7, name: "App Store recovery: unknown products, notification history, consumption, reversals",
                  sql: SQLiteOrderStore.appStoreRecoverySchema),
        // Every order keeps the WeChat Pay API version it was created with, as it keeps its sign
        // type: orders made before v3 existed are v2's.
        Migration(version: 8, name: "orders' WeChat Pay API version", sql: """
            ALTER TABLE orders ADD COLUMN api_version TEXT NOT NULL DEFAULT 'v2' CHECK (api_version IN ('v2', 'v3'));
            """),
        // Every WeChat order keeps the app it was created through and its trade type: orders made
        // before apps had names were the default app's (app NULL), all of trade type APP.
        Migration(version: 9, name: "orders' app and trade type", sql: """
            ALTER TABLE orders ADD COLUMN app TEXT;
            ALTER TABLE orders ADD COLUMN app_id TEXT;
            ALTER TABLE orders ADD COLUMN trade_type TEXT CHECK (trade_type IN ('APP', 'JSAPI', 'NATIVE', 'MWEB'));
            UPDATE orders SET trade_type = 'APP' WHERE channel = 'wechat';
            """),
        // What an identical create must answer again: a JSAPI order's openid (sent with every
        // prepay), a NATIVE order's code_url and an MWEB order's mweb_url (from the prepay's answer).
        Migration(version: 10, name: "orders' openid, code_url and mweb_url", sql: """
            ALTER TABLE orders ADD COLUMN openid TEXT;
            ALTER TABLE orders ADD COLUMN code_url TEXT;
            ALTER TABLE orders ADD COLUMN mweb_url TEXT;
            """),
        Migration(version: 11, name: "paid orders by user, for entitlements", sql: SQLiteOrderStore.paidOrdersIndex),
        Migration(version: 12, name: "auto-renewable subscriptions as Apple last told of them",
                  sql: SQLiteOrderStore.subscriptionsSchema),
        Migration(version: 13, name: "paid orders by user, with what entitlements read",
                  sql: SQLiteOrderStore.coveringPaidOrdersIndex),
        Migration(version: 14, name: "a consumption answer Apple refused may be corrected",
                  sql: SQLiteOrderStore.correctableConsumptionTrigger),
        // How many of the product an App Store transaction sold (a consumable bought several at
        // once), in the ledger and on the order it credited. Rows from before stay NULL: unknown.
        Migration(version: 15, name: "App Store quantities", sql: "", columns: [
            NewColumn(table: "apple_transactions", name: "quantity", definition: "INTEGER CHECK (quantity BETWEEN 1 AND 1000000)"),
            NewColumn(table: "orders", name: "apple_quantity", definition: "INTEGER CHECK (apple_quantity BETWEEN 1 AND 1000000)"),
        ]),
        Migration(version: 16, name: "what the database is bound to: its owner, what each sold product grants",
                  sql: SQLiteOrderStore.bindingsSchema),
        // The events out for delivery now (a delivery's bookkeeping clears its lease): what a claim
        // reads to leave one user's entitlement events to the dispatcher holding one, without
        // reading every pending event of a backlog.
        Migration(version: 17, name: "outbox events leased", sql: """
            CREATE INDEX IF NOT EXISTS outbox_leased ON outbox (claimed_until) WHERE claimed_until IS NOT NULL;
            """),
        // Apple's reason for a subscription's transaction: a renewal credited after it waited (its
        // user unknown) is still one Apple charged by itself. Rows from before stay NULL: unknown.
        Migration(version: 18, name: "App Store transaction reasons", sql: "", columns: [
            NewColumn(table: "apple_transactions", name: "transaction_reason",
                      definition: "TEXT CHECK (transaction_reason IN ('PURCHASE', 'RENEWAL'))"),
        ]),
    ]

    static var latestVersion: Int { all.last?.version ?? 0 }

    /// Applies the missing migrations in one transaction; a failure leaves the schema as it was.
    /// Answers what it applied, or nil when the schema was the latest already.
    @discardableResult
    static func apply(on connection: SQLiteConnection, now: Date) throws(StorageError) -> SchemaUpgrade? {
        let started = ContinuousClock.now
        try connection.execute("BEGIN IMMEDIATE")
        do throws(StorageError) {
            try connection.execute("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version INTEGER PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL,
                    applied_at INTEGER NOT NULL
                ) STRICT
                """)
            let current = try connection.row("SELECT COALESCE(MAX(version), 0) FROM schema_migrations") {
                row throws(StorageError) in try row.int(0)
            } ?? 0
            guard current <= latestVersion else {
                throw StorageError.schemaTooNew(found: current, known: latestVersion)
            }
            let pending = all.filter { $0.version > current }
            for migration in pending {
                for column in migration.columns {
                    let present = try connection.row(
                        "SELECT 1 FROM pragma_table_info(?) WHERE name = ?", column.table.text, column.name.text,
                        decode: { row throws(StorageError) in try row.int(0) }) != nil
                    if !present {
                        try connection.execute("ALTER TABLE " + column.table + " ADD COLUMN " + column.name + " "
                            + column.definition)
                    }
                }
                if !migration.sql.text.isEmpty { try connection.execute(migration.sql) }
                try connection.run(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    migration.version, migration.name, now)
            }
            try connection.execute("COMMIT")
            guard !pending.isEmpty else { return nil }
            return SchemaUpgrade(from: current, to: latestVersion, applied: pending.map { "\($0.version) \($0.name)" },
                                 duration: ContinuousClock.now - started)
        } catch {
            if !connection.isAutocommit { try? connection.execute("ROLLBACK") }
            throw error
        }
    }
}
