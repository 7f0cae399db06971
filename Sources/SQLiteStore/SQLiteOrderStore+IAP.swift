// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore: IAPStore {
    /// Migration 4: the App Store columns of an order, the ledger of App Store transactions and the
    /// notifications handled. The indexes and triggers hold C7 in the database itself, whatever code
    /// runs against it: a transaction id credits one order (the ledger's key, set once; a unique
    /// index on the orders), an order is credited by one transaction, and a token names one order.
    /// Portable apart from SQLite's `IS NOT` (PostgreSQL: `IS DISTINCT FROM`) in the triggers.
    static let appStoreSchema: SQL = """
        ALTER TABLE orders ADD COLUMN channel TEXT NOT NULL DEFAULT 'wechat' CHECK (channel IN ('wechat', 'apple'));
        ALTER TABLE orders ADD COLUMN apple_product_id TEXT;
        ALTER TABLE orders ADD COLUMN app_account_token TEXT;
        ALTER TABLE orders ADD COLUMN environment TEXT CHECK (environment IN ('Production', 'Sandbox'));
        ALTER TABLE orders ADD COLUMN apple_transaction_id TEXT;
        ALTER TABLE orders ADD COLUMN original_transaction_id TEXT;
        CREATE UNIQUE INDEX orders_by_app_account_token ON orders (app_account_token)
            WHERE app_account_token IS NOT NULL;
        CREATE UNIQUE INDEX orders_by_apple_transaction_id ON orders (apple_transaction_id)
            WHERE apple_transaction_id IS NOT NULL;
        CREATE INDEX orders_by_original_transaction_id ON orders (original_transaction_id)
            WHERE original_transaction_id IS NOT NULL;
        -- 凑单: the user's open App Store orders for one product, oldest first.
        CREATE INDEX orders_open_apple_by_user_product ON orders (user_id, apple_product_id, created_at)
            WHERE channel = 'apple' AND state IN ('NOTPAY', 'USERPAYING');

        CREATE TRIGGER orders_apple_transaction_once BEFORE UPDATE OF apple_transaction_id ON orders
        WHEN OLD.apple_transaction_id IS NOT NULL AND NEW.apple_transaction_id IS NOT OLD.apple_transaction_id
        BEGIN SELECT RAISE(ABORT, 'an order is credited by one App Store transaction'); END;
        CREATE TRIGGER orders_channel_fixed BEFORE UPDATE OF channel, app_account_token ON orders
        WHEN NEW.channel IS NOT OLD.channel OR NEW.app_account_token IS NOT OLD.app_account_token
        BEGIN SELECT RAISE(ABORT, 'an order keeps its channel and token'); END;

        CREATE TABLE apple_transactions (
            transaction_id TEXT PRIMARY KEY NOT NULL,
            original_transaction_id TEXT NOT NULL,
            product_id TEXT NOT NULL,
            environment TEXT NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
            app_account_token TEXT,
            purchase_date INTEGER NOT NULL,
            revocation_date INTEGER,
            out_trade_no TEXT UNIQUE REFERENCES orders (out_trade_no),
            matched_by TEXT CHECK (matched_by IN ('app_account_token', 'out_trade_no', 'user_product', 'new_order')),
            source TEXT NOT NULL,
            first_seen_at INTEGER NOT NULL,
            credited_at INTEGER,
            checked_at INTEGER,
            updated_at INTEGER NOT NULL,
            CHECK ((out_trade_no IS NULL) = (matched_by IS NULL))
        ) STRICT;
        CREATE INDEX apple_transactions_by_original ON apple_transactions (original_transaction_id);
        CREATE INDEX apple_transactions_unmatched ON apple_transactions (first_seen_at)
            WHERE out_trade_no IS NULL AND revocation_date IS NULL;
        -- A transaction id credits one order, ever: once set, its order never changes, and the
        -- ledger is never pruned.
        CREATE TRIGGER apple_transactions_credit_once BEFORE UPDATE OF out_trade_no, matched_by ON apple_transactions
        WHEN OLD.out_trade_no IS NOT NULL
            AND (NEW.out_trade_no IS NOT OLD.out_trade_no OR NEW.matched_by IS NOT OLD.matched_by)
        BEGIN SELECT RAISE(ABORT, 'an App Store transaction credits one order, ever'); END;
        CREATE TRIGGER apple_transactions_no_delete BEFORE DELETE ON apple_transactions
        BEGIN SELECT RAISE(ABORT, 'the App Store ledger is append-only'); END;

        CREATE TABLE appstore_notifications (
            notification_uuid TEXT PRIMARY KEY NOT NULL,
            notification_type TEXT NOT NULL,
            subtype TEXT,
            environment TEXT NOT NULL,
            transaction_id TEXT,
            signed_date INTEGER NOT NULL,
            received_at INTEGER NOT NULL,
            outcome TEXT NOT NULL
        ) STRICT;
        """

    public func creditAppleTransaction(_ credit: AppleCredit) async throws(StorageError) -> AppleCreditResult {
        try credit.validate()
        return try await write { db throws(StorageError) in try credit.perform(in: SQLiteAppleCreditSession(db: db)) }
    }

    public func appleTransaction(_ transactionID: String) async throws(StorageError) -> AppleTransactionRecord? {
        try await read { db throws(StorageError) in try Self.appleTransaction(transactionID, on: db) }
    }

    public func appleTransactions(originalTransactionID: String) async throws(StorageError) -> [AppleTransactionRecord] {
        try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + AppleTransactionRecord.columns
                    + " FROM apple_transactions WHERE original_transaction_id = ? ORDER BY purchase_date, transaction_id",
                originalTransactionID, decode: AppleTransactionRecord.init(row:))
        }
    }

    public func recordAppleRevocation(_ facts: AppleTransactionFacts, source: String, at: Date) async throws(StorageError)
        -> AppleTransactionRecord
    {
        try facts.validate()
        try StoreText.validate(source)
        return try await write { db throws(StorageError) in
            try Self.insertLedgerRow(facts, source: source, at: at, on: db)
            return try Self.revoke(facts.transactionID, at: facts.revocationDate ?? at, now: at, on: db)
        }
    }

    public func recordAppleRefundReversal(_ facts: AppleTransactionFacts, reversedAt: Date, source: String, at: Date)
        async throws(StorageError) -> AppleTransactionRecord
    {
        try facts.validate()
        try StoreText.validate(source)
        return try await write { db throws(StorageError) in
            try Self.insertLedgerRow(facts, source: source, at: at, on: db)
            try db.run(
                """
                UPDATE apple_transactions
                SET revocation_date = CASE WHEN revocation_date > ?1 THEN revocation_date END,
                    refund_reversed_at = MAX(COALESCE(refund_reversed_at, ?1), ?1), updated_at = MAX(updated_at, ?2)
                WHERE transaction_id = ?3
                """, reversedAt, at, facts.transactionID)
            guard let row = try Self.appleTransaction(facts.transactionID, on: db) else { throw .unexpectedRow }
            return row
        }
    }

    public func order(appAccountToken token: String) async throws(StorageError) -> OrderRecord? {
        try await read { db throws(StorageError) in try Self.order(appAccountToken: token, on: db) }
    }

    public func orders(appleTransactionID: String) async throws(StorageError) -> [OrderRecord] {
        try await read { db throws(StorageError) in
            try db.rows("SELECT " + OrderRecord.columns + " FROM orders WHERE apple_transaction_id = ?",
                        appleTransactionID, decode: OrderRecord.init(row:))
        }
    }

    public func orders(originalTransactionID: String) async throws(StorageError) -> [OrderRecord] {
        try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + OrderRecord.columns
                    + " FROM orders WHERE original_transaction_id = ? ORDER BY paid_at, out_trade_no",
                originalTransactionID, decode: OrderRecord.init(row:))
        }
    }

    public func latestAppleTransaction(userID: String) async throws(StorageError) -> AppleAnchor? {
        try await read { db throws(StorageError) in
            try db.row(
                """
                SELECT user_id, apple_transaction_id, environment FROM orders
                WHERE user_id = ? AND channel = 'apple' AND apple_transaction_id IS NOT NULL
                ORDER BY paid_at DESC, apple_transaction_id DESC LIMIT 1
                """, userID, decode: AppleAnchor.init(row:))
        }
    }

    public func appleRefundAnchors(paidSince: Date, limit: Int) async throws(StorageError) -> [AppleAnchor] {
        guard limit > 0 else { return [] }
        return try await read { db throws(StorageError) in
            // Any of the account's transactions serves as the handle; the greatest id is one of them.
            try db.rows(
                """
                SELECT user_id, MAX(apple_transaction_id), environment FROM orders
                WHERE channel = 'apple' AND state = 'SUCCESS' AND paid_at >= ?1 AND user_id IS NOT NULL
                    AND apple_transaction_id IS NOT NULL
                GROUP BY user_id, environment ORDER BY user_id, environment LIMIT ?2
                """, paidSince, limit, decode: AppleAnchor.init(row:))
        }
    }

    public func usersWithAppleOrdersOpen(appleProductID: String, at: Date, madeAfter: Date, limit: Int) async throws(StorageError)
        -> [String]
    {
        guard limit > 0 else { return [] }
        return try await read { db throws(StorageError) in
            try db.rows(
                """
                SELECT DISTINCT user_id FROM orders
                WHERE state IN ('NOTPAY', 'USERPAYING') AND created_at > ?3 AND created_at <= ?2
                    AND expires_at > ?2 AND channel = 'apple' AND apple_product_id = ?1 AND user_id IS NOT NULL
                LIMIT ?4
                """, appleProductID, at, madeAfter, limit, decode: { row throws(StorageError) in try row.text(0) })
        }
    }

    public func unmatchedAppleTransactions(before: Date, limit: Int) async throws(StorageError) -> [AppleTransactionRecord] {
        guard limit > 0 else { return [] }
        return try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + AppleTransactionRecord.columns + """
                     FROM apple_transactions
                    WHERE out_trade_no IS NULL AND revocation_date IS NULL AND COALESCE(checked_at, first_seen_at) < ?1
                    ORDER BY COALESCE(checked_at, first_seen_at), transaction_id LIMIT ?2
                    """, before, limit, decode: AppleTransactionRecord.init(row:))
        }
    }

    public func markAppleTransactionChecked(_ transactionID: String, at: Date) async throws(StorageError) -> Bool {
        try await write { db throws(StorageError) in
            try db.run(
                """
                UPDATE apple_transactions SET checked_at = MAX(COALESCE(checked_at, ?1), ?1), updated_at = MAX(updated_at, ?1)
                WHERE transaction_id = ?2
                """, at, transactionID) == 1
        }
    }

    public func unmatchedAppleTransactionCount() async throws(StorageError) -> Int {
        try await read { db throws(StorageError) in
            try db.row(
                "SELECT COUNT(*) FROM apple_transactions WHERE out_trade_no IS NULL AND revocation_date IS NULL",
                decode: { row throws(StorageError) in try row.int(0) }) ?? 0
        }
    }

    public func appStoreNotification(_ notificationUUID: String) async throws(StorageError) -> AppStoreNotificationRecord? {
        try await read { db throws(StorageError) in
            try db.row(
                "SELECT " + AppStoreNotificationRecord.columns + " FROM appstore_notifications WHERE notification_uuid = ?",
                notificationUUID, decode: AppStoreNotificationRecord.init(row:))
        }
    }

    public func recordAppStoreNotification(_ notification: AppStoreNotificationRecord) async throws(StorageError) -> Bool {
        try notification.validate()
        return try await write { db throws(StorageError) in
            try db.run(
                "INSERT INTO appstore_notifications (" + AppStoreNotificationRecord.columns + """
                    ) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (notification_uuid) DO NOTHING
                    """,
                notification.notificationUUID, notification.notificationType, notification.subtype,
                notification.environment, notification.transactionID, notification.signedDate, notification.receivedAt,
                notification.outcome) == 1
        }
    }

    // MARK: Statements shared by the operations above (inside the caller's transaction)

    static func insertLedgerRow(_ facts: AppleTransactionFacts, source: String, at: Date, on db: SQLiteConnection)
        throws(StorageError)
    {
        try db.run(
            """
            INSERT INTO apple_transactions (transaction_id, original_transaction_id, product_id, environment,
                app_account_token, purchase_date, revocation_date, source, first_seen_at, updated_at, price, currency,
                storefront, quantity, transaction_reason)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10, ?11, ?12, ?13, ?14) ON CONFLICT (transaction_id) DO UPDATE SET
            """ + AppleTransactionRecord.ledgerFill, facts.transactionID, facts.originalTransactionID, facts.productID, facts.environment, facts.appAccountToken,
            facts.purchaseDate, facts.revocationDate, source, at, facts.price, facts.currency, facts.storefront,
            facts.quantity, facts.transactionReason)
    }

    /// Sets the revocation date, the later of the one known and this one, unless Apple reversed a
    /// refund after it (a late copy of a refund taken back); returns the row.
    static func revoke(_ transactionID: String, at revoked: Date, now: Date, on db: SQLiteConnection)
        throws(StorageError) -> AppleTransactionRecord
    {
        try db.run(
            """
            UPDATE apple_transactions SET revocation_date = MAX(COALESCE(revocation_date, ?1), ?1), updated_at = MAX(updated_at, ?2)
            WHERE transaction_id = ?3 AND (refund_reversed_at IS NULL OR ?1 > refund_reversed_at)
            """, revoked, now, transactionID)
        guard let row = try appleTransaction(transactionID, on: db) else { throw .unexpectedRow }
        return row
    }

    static func appleTransaction(_ transactionID: String, on db: SQLiteConnection) throws(StorageError)
        -> AppleTransactionRecord?
    {
        try db.row(
            "SELECT " + AppleTransactionRecord.columns + " FROM apple_transactions WHERE transaction_id = ?", transactionID,
            decode: AppleTransactionRecord.init(row:))
    }

    static func order(appAccountToken token: String, on db: SQLiteConnection) throws(StorageError) -> OrderRecord? {
        try db.row("SELECT " + OrderRecord.columns + " FROM orders WHERE app_account_token = ?", token,
                   decode: OrderRecord.init(row:))
    }
}

/// `AppleCreditSession` on SQLite: the statements above, inside the caller's write transaction.
struct SQLiteAppleCreditSession: AppleCreditSession {
    let db: SQLiteConnection

    func claimLedgerRow(_ facts: AppleTransactionFacts, source: String, at: Date) throws(StorageError)
        -> AppleTransactionRecord
    {
        // Inside the write transaction nobody else writes: the row read is the row kept.
        try SQLiteOrderStore.insertLedgerRow(facts, source: source, at: at, on: db)
        guard let row = try SQLiteOrderStore.appleTransaction(facts.transactionID, on: db) else { throw .unexpectedRow }
        return row
    }

    func revoke(_ transactionID: String, at revoked: Date, now: Date) throws(StorageError) -> AppleTransactionRecord {
        try SQLiteOrderStore.revoke(transactionID, at: revoked, now: now, on: db)
    }

    func order(_ outTradeNo: String) throws(StorageError) -> OrderRecord? {
        try SQLiteOrderStore.order(outTradeNo, on: db)
    }

    func order(appAccountToken: String) throws(StorageError) -> OrderRecord? {
        try SQLiteOrderStore.order(appAccountToken: appAccountToken, on: db)
    }

    func openAppleOrders(userID: String, appleProductID: String, limit: Int) throws(StorageError) -> [OrderRecord] {
        try db.rows(
            "SELECT " + OrderRecord.columns + """
                 FROM orders
                WHERE channel = 'apple' AND state IN ('NOTPAY', 'USERPAYING') AND user_id = ?1 AND apple_product_id = ?2
                ORDER BY created_at, out_trade_no LIMIT ?3
                """, userID, appleProductID, limit, decode: OrderRecord.init(row:))
    }

    func lock(_ candidates: [OrderRecord]) throws(StorageError) -> [OrderRecord?] {
        // The write transaction is the lock: nobody else writes, so the rows it read are current.
        candidates
    }

    func saleAgrees(_ terms: SaleTerms, productID: String?) throws(StorageError) -> Bool {
        try SQLiteOrderStore.saleAgrees(terms, productID, on: db)
    }

    func insert(_ order: OrderRecord, event: NewOrderEvent) throws(StorageError) -> Bool {
        guard try SQLiteOrderStore.insert(order, on: db) else { return false }
        try SQLiteOrderStore.appendEvent(event, to: order.outTradeNo, on: db)
        return true
    }

    func transition(_ transition: OrderTransition) throws(StorageError) -> TransitionResult {
        try SQLiteOrderStore.transition(transition, on: db)
    }

    func markCredited(_ transactionID: String, outTradeNo: String, matchedBy: AppleMatch, at: Date) throws(StorageError) {
        guard try db.run(
            """
            UPDATE apple_transactions SET out_trade_no = ?1, matched_by = ?2, credited_at = ?3, updated_at = MAX(updated_at, ?3)
            WHERE transaction_id = ?4 AND out_trade_no IS NULL
            """, outTradeNo, matchedBy.rawValue, at, transactionID) == 1
        else { throw .unexpectedRow }
    }

    func appendEvents(_ events: [NewOrderEvent], to outTradeNo: String) throws(StorageError) {
        for event in events { try SQLiteOrderStore.appendEvent(event, to: outTradeNo, on: db) }
    }

    func fillQuantity(_ outTradeNo: String, _ quantity: Int, event: NewOrderEvent) throws(StorageError) -> OrderRecord? {
        guard let filled = try db.row(
            "UPDATE orders SET apple_quantity = ?1, updated_at = MAX(updated_at, ?2) WHERE out_trade_no = ?3 AND apple_quantity IS NULL "
                + "RETURNING " + OrderRecord.columns,
            quantity, event.at, outTradeNo, decode: OrderRecord.init(row:))
        else { return nil }
        try SQLiteOrderStore.appendEvent(event, to: outTradeNo, on: db)
        return filled
    }
}
