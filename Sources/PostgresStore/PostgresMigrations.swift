// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

/// The PostgreSQL schema, as numbered migrations recorded in `schema_migrations`, each applied
/// once, all of them in one transaction under an advisory lock: instances starting at once
/// migrate once (the others wait for the lock, then find nothing left to do).
///
/// Never edit a released migration: add a new one. A database migrated by a newer program (a higher
/// version than the last one here) is refused rather than used half-understood. The numbering is
/// this store's own; it does not follow `SQLiteMigrations`.
enum PostgresMigrations {
    struct Migration: Sendable {
        let version: Int
        let name: String
        let statements: [SQL]
    }

    static let all: [Migration] = [
        Migration(version: 1, name: "orders, events, outbox", statements: [
            """
            CREATE TABLE orders (
                out_trade_no text PRIMARY KEY,
                amount bigint NOT NULL CHECK (amount > 0),
                description text NOT NULL,
                client_ip text NOT NULL,
                attach text,
                user_id text,
                product_id text,
                sign_type text NOT NULL,
                time_expire text NOT NULL,
                expires_at timestamptz NOT NULL,
                created_at timestamptz NOT NULL,
                state text NOT NULL
                    CHECK (state IN ('NOTPAY', 'SUCCESS', 'REFUND', 'CLOSED', 'REVOKED', 'PAYERROR', 'USERPAYING')),
                transaction_id text,
                paid_at timestamptz,
                prepay_id text,
                prepay_issued_at timestamptz,
                parameters_digest text NOT NULL,
                last_notify_at timestamptz,
                last_queried_at timestamptz,
                flags text NOT NULL DEFAULT '',
                updated_at timestamptz NOT NULL,
                -- The reconciler's lease (claimOpenOrders).
                claimed_by text,
                claimed_until timestamptz,
                -- Until when one instance has the right to call WeChat about the order (claimCall):
                -- a wait's orderquery (one per poll interval across all instances), unifiedorder.
                query_claimed_until timestamptz,
                prepay_claimed_until timestamptz
            )
            """,
            "CREATE INDEX orders_by_transaction_id ON orders (transaction_id) WHERE transaction_id IS NOT NULL",
            "CREATE INDEX orders_by_user_id ON orders (user_id, created_at) WHERE user_id IS NOT NULL",
            "CREATE INDEX orders_by_state_created_at ON orders (state, created_at)",
            // C1: once paid, an order is never reported unpaid again, whatever code runs against it.
            """
            CREATE FUNCTION wxpay_paid_stays_paid() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF OLD.state IN ('SUCCESS', 'REFUND') AND NEW.state NOT IN ('SUCCESS', 'REFUND') THEN
                    RAISE EXCEPTION 'a paid order cannot become unpaid' USING ERRCODE = 'check_violation';
                END IF;
                RETURN NEW;
            END $$
            """,
            """
            CREATE TRIGGER orders_paid_stays_paid BEFORE UPDATE OF state ON orders
                FOR EACH ROW EXECUTE FUNCTION wxpay_paid_stays_paid()
            """,
            """
            CREATE TABLE order_events (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                out_trade_no text NOT NULL REFERENCES orders (out_trade_no),
                at timestamptz NOT NULL,
                kind text NOT NULL,
                detail text NOT NULL
            )
            """,
            "CREATE INDEX order_events_by_order ON order_events (out_trade_no, id)",
            // The timeline is evidence: append-only, enforced by the database itself.
            """
            CREATE FUNCTION wxpay_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'integrity_constraint_violation';
            END $$
            """,
            """
            CREATE TRIGGER order_events_append_only BEFORE UPDATE OR DELETE ON order_events
                FOR EACH ROW EXECUTE FUNCTION wxpay_append_only()
            """,
            """
            CREATE TRIGGER order_events_no_truncate BEFORE TRUNCATE ON order_events
                FOR EACH STATEMENT EXECUTE FUNCTION wxpay_append_only()
            """,
            """
            CREATE TABLE outbox (
                id text PRIMARY KEY,
                out_trade_no text NOT NULL REFERENCES orders (out_trade_no),
                type text NOT NULL,
                payload text NOT NULL,
                created_at timestamptz NOT NULL,
                attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
                next_attempt_at timestamptz NOT NULL,
                delivered_at timestamptz,
                dead_at timestamptz,
                last_error text,
                claimed_by text,
                claimed_until timestamptz
            )
            """,
            """
            CREATE INDEX outbox_pending_by_next_attempt_at ON outbox (next_attempt_at)
                WHERE delivered_at IS NULL AND dead_at IS NULL
            """,
            "CREATE INDEX outbox_by_order ON outbox (out_trade_no)",
            // amcheck's B-tree and heap checks of the store's tables, wherever the extension is
            // installed (its schema need not be on the search path); NULL when it is not.
            """
            CREATE FUNCTION wxpay_amcheck() RETURNS bigint LANGUAGE plpgsql AS $$
            DECLARE
                extension_schema text;
                findings bigint;
            BEGIN
                SELECT extnamespace::regnamespace::text INTO extension_schema FROM pg_extension WHERE extname = 'amcheck';
                IF extension_schema IS NULL THEN
                    RETURN NULL;
                END IF;
                EXECUTE format(
                    'SELECT count(%I.bt_index_check(c.oid, true)) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid '
                    'JOIN pg_am am ON am.oid = c.relam WHERE am.amname = ''btree'' AND i.indrelid = ANY ($1)',
                    extension_schema)
                    USING ARRAY['orders'::regclass, 'order_events'::regclass, 'outbox'::regclass];
                EXECUTE format(
                    'SELECT count(*) FROM unnest($1) AS t (relation), LATERAL %I.verify_heapam(t.relation) AS finding',
                    extension_schema)
                    INTO findings USING ARRAY['orders'::regclass, 'order_events'::regclass, 'outbox'::regclass];
                RETURN findings;
            END $$
            """,
            // LISTEN takes no parameters; this lets the channel name travel as one.
            """
            CREATE FUNCTION wxpay_listen(channel text) RETURNS void LANGUAGE plpgsql AS $$
            BEGIN
                EXECUTE format('LISTEN %I', channel);
            END $$
            """,
        ]),
        Migration(version: 2, name: "refunds", statements: PostgresOrderStore.refundsSchema),
        Migration(version: 3, name: "App Store purchases", statements: PostgresOrderStore.appStoreSchema),
        Migration(version: 4, name: "console sessions and logins, audit log, orders by creation",
                  statements: PostgresOrderStore.consoleSchema + PostgresOrderStore.auditSchema),
        // The orders' guard triggers fire only for an update they refuse: the same rules, but a
        // payment no longer runs two PL/pgSQL calls that let it through.
        Migration(version: 5, name: "orders' guard triggers only when they refuse", statements: [
            "DROP TRIGGER orders_paid_stays_paid ON orders",
            """
            CREATE TRIGGER orders_paid_stays_paid BEFORE UPDATE OF state ON orders FOR EACH ROW
                WHEN (OLD.state IN ('SUCCESS', 'REFUND') AND NEW.state NOT IN ('SUCCESS', 'REFUND'))
                EXECUTE FUNCTION wxpay_paid_stays_paid()
            """,
            "DROP TRIGGER orders_apple_fixed ON orders",
            """
            CREATE TRIGGER orders_apple_fixed BEFORE UPDATE OF apple_transaction_id, channel, app_account_token
                ON orders FOR EACH ROW
                WHEN ((OLD.apple_transaction_id IS NOT NULL
                           AND NEW.apple_transaction_id IS DISTINCT FROM OLD.apple_transaction_id)
                      OR NEW.channel IS DISTINCT FROM OLD.channel
                      OR NEW.app_account_token IS DISTINCT FROM OLD.app_account_token)
                EXECUTE FUNCTION wxpay_orders_apple_fixed()
            """,
        ]),
        // Migration 4 added tables without adding them to amcheck's list.
        Migration(version: 6, name: "amcheck of the console tables and the audit log", statements: [
            amcheckFunction(relations: ["orders", "order_events", "outbox", "refunds", "apple_transactions",
                                        "appstore_notifications", "console_sessions", "console_login_failures",
                                        "console_login_locks", "audit_log"]),
        ]),
        Migration(version: 7, name: "console logins by name and address, and the addresses names sign in from",
                  statements: PostgresOrderStore.consoleLoginsByAddressSchema + [
                      amcheckFunction(relations: ["orders", "order_events", "outbox", "refunds", "apple_transactions",
                                                  "appstore_notifications", "console_sessions", "console_login_failures",
                                                  "console_login_locks", "console_login_addresses", "audit_log"]),
                  ]),
        Migration(version: 8, name: "App Store recovery: unknown products, notification history, consumption, reversals",
                  statements: PostgresOrderStore.appStoreRecoverySchema),
        // Every order keeps the WeChat Pay API version it was created with, as it keeps its sign
        // type: orders made before v3 existed are v2's.
        Migration(version: 9, name: "orders' WeChat Pay API version", statements: [
            "ALTER TABLE orders ADD COLUMN api_version text NOT NULL DEFAULT 'v2' CHECK (api_version IN ('v2', 'v3'))",
        ]),
        // Every WeChat order keeps the app it was created through and its trade type: orders made
        // before apps had names were the default app's (app NULL), all of trade type APP.
        Migration(version: 10, name: "orders' app and trade type", statements: [
            "ALTER TABLE orders ADD COLUMN app text",
            "ALTER TABLE orders ADD COLUMN app_id text",
            "ALTER TABLE orders ADD COLUMN trade_type text CHECK (trade_type IN ('APP', 'JSAPI', 'NATIVE', 'MWEB'))",
            "UPDATE orders SET trade_type = 'APP' WHERE channel = 'wechat'",
        ]),
        // What an identical create must answer again: a JSAPI order's openid (sent with every
        // prepay), a NATIVE order's code_url and an MWEB order's mweb_url (from the prepay's answer).
        Migration(version: 11, name: "orders' openid, code_url and mweb_url", statements: [
            "ALTER TABLE orders ADD COLUMN openid text",
            "ALTER TABLE orders ADD COLUMN code_url text",
            "ALTER TABLE orders ADD COLUMN mweb_url text",
        ]),
        Migration(version: 12, name: "paid orders by user, for entitlements",
                  statements: PostgresOrderStore.paidOrdersIndex),
        Migration(version: 13, name: "auto-renewable subscriptions as Apple last told of them",
                  statements: PostgresOrderStore.subscriptionsSchema),
        Migration(version: 14, name: "paid orders by user, with what entitlements read",
                  statements: PostgresOrderStore.coveringPaidOrdersIndex),
        Migration(version: 15, name: "a consumption answer Apple refused may be corrected",
                  statements: PostgresOrderStore.correctableConsumptionTrigger),
        // How many of the product an App Store transaction sold (a consumable bought several at
        // once), in the ledger and on the order it credited. Rows from before stay NULL: unknown.
        Migration(version: 16, name: "App Store quantities", statements: [
            "ALTER TABLE apple_transactions ADD COLUMN IF NOT EXISTS quantity integer CHECK (quantity BETWEEN 1 AND 1000000)",
            "ALTER TABLE orders ADD COLUMN IF NOT EXISTS apple_quantity integer CHECK (apple_quantity BETWEEN 1 AND 1000000)",
        ]),
        Migration(version: 17, name: "what the database is bound to: its owner, what each sold product grants",
                  statements: PostgresOrderStore.bindingsSchema),
        // The events out for delivery now (as SQLite's 17).
        Migration(version: 18, name: "outbox events leased", statements: [
            "CREATE INDEX IF NOT EXISTS outbox_leased ON outbox (claimed_until) WHERE claimed_until IS NOT NULL",
        ]),
        // Apple's reason for a subscription's transaction (as SQLite's 18).
        Migration(version: 19, name: "App Store transaction reasons", statements: [
            "ALTER TABLE apple_transactions ADD COLUMN IF NOT EXISTS transaction_reason text CHECK (transaction_reason IN ('PURCHASE', 'RENEWAL'))",
        ]),
    ]

    static var latestVersion: Int { all.last?.version ?? 0 }

    /// `wxpay_amcheck()`: amcheck's B-tree and heap checks of `relations` (the store's tables),
    /// wherever the extension is installed; NULL when it is not. A migration that adds a table
    /// replaces the function with the longer list.
    static func amcheckFunction(relations: [SQL]) -> SQL {
        let list = relations.dropFirst().reduce("'" + relations[0] + "'::regclass") { $0 + ", '" + $1 + "'::regclass" }
        return """
            CREATE OR REPLACE FUNCTION wxpay_amcheck() RETURNS bigint LANGUAGE plpgsql AS $$
            DECLARE
                extension_schema text;
                findings bigint;
                relations regclass[] := ARRAY[
            """ + list + """
            ];
            BEGIN
                SELECT extnamespace::regnamespace::text INTO extension_schema FROM pg_extension WHERE extname = 'amcheck';
                IF extension_schema IS NULL THEN
                    RETURN NULL;
                END IF;
                EXECUTE format(
                    'SELECT count(%I.bt_index_check(c.oid, true)) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid '
                    'JOIN pg_am am ON am.oid = c.relam WHERE am.amname = ''btree'' AND i.indrelid = ANY ($1)',
                    extension_schema) USING relations;
                EXECUTE format(
                    'SELECT count(*) FROM unnest($1) AS t (relation), LATERAL %I.verify_heapam(t.relation) AS finding',
                    extension_schema) INTO findings USING relations;
                RETURN findings;
            END $$
            """
    }

    /// Applies the missing migrations in one transaction; a failure leaves the schema as it was.
    /// The advisory lock is keyed by the schema, so deployments in two schemas of one database do
    /// not wait for each other.
    /// Every exchange may take up to `timeout`: the first one waits for the lock while another
    /// instance migrates.
    /// Answers what it applied, or nil when the schema was the latest already.
    @discardableResult
    static func apply(on connection: PGConnection, now: Date, timeout: Duration) throws(StorageError) -> SchemaUpgrade? {
        let started = ContinuousClock.now
        connection.sendAhead(PGQuery("BEGIN"))
        do throws(StorageError) {
            let current = try connection.run([
                PGQuery("SELECT pg_advisory_xact_lock(hashtext('wxpay-gateway migrations'), hashtext(current_schema()))"),
                PGQuery("""
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version integer PRIMARY KEY,
                        name text NOT NULL,
                        applied_at timestamptz NOT NULL
                    )
                    """),
                PGQuery("SELECT COALESCE(MAX(version), 0)::bigint FROM schema_migrations"),
            ], timeout: timeout)[2].first { row throws(StorageError) in try row.int(0) } ?? 0
            guard current <= latestVersion else {
                throw StorageError.schemaTooNew(found: current, known: latestVersion)
            }
            let pending = all.filter { $0.version > current }
            for migration in pending {
                let record = PGQuery(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1::bigint, $2, $3)",
                    migration.version, migration.name, now)
                _ = try connection.run(migration.statements.map { PGQuery($0) } + [record], timeout: timeout)
            }
            _ = try connection.run([PGQuery("COMMIT")], timeout: timeout)
            guard !pending.isEmpty else { return nil }
            return SchemaUpgrade(from: current, to: latestVersion, applied: pending.map { "\($0.version) \($0.name)" },
                                 duration: ContinuousClock.now - started)
        } catch {
            if !connection.isBroken { _ = try? connection.run([PGQuery("ROLLBACK")]) }
            throw error
        }
    }
}
