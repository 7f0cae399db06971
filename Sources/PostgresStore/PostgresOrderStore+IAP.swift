// SPDX-License-Identifier: Apache-2.0
// Over 400 lines as one file: the App Store ledger's reads and the credit's session share the
// ledger's statements and its row lock, and SQLite's counterpart is one file too.
import Foundation
import StorageCore

/// iOS purchases on PostgreSQL. A credit runs in a transaction of its own (not in a group-commit
/// batch): it locks the transaction id's ledger row first, so concurrent credits of one id — the
/// app's report, its retry, the notification, the reconciler, on any instance — are decided one
/// after the other, and each candidate order's row is locked by the one door before it is moved.
extension PostgresOrderStore: IAPStore {
    /// Migration 3: what SQLite's migration 4 adds, with the same promises held by the database
    /// (C7): the ledger's key, its order set once, one order per App Store transaction and per
    /// app_account_token.
    static let appStoreSchema: [SQL] = [
        "ALTER TABLE orders ADD COLUMN channel text NOT NULL DEFAULT 'wechat' CHECK (channel IN ('wechat', 'apple'))",
        "ALTER TABLE orders ADD COLUMN apple_product_id text",
        "ALTER TABLE orders ADD COLUMN app_account_token text",
        "ALTER TABLE orders ADD COLUMN environment text CHECK (environment IN ('Production', 'Sandbox'))",
        "ALTER TABLE orders ADD COLUMN apple_transaction_id text",
        "ALTER TABLE orders ADD COLUMN original_transaction_id text",
        "CREATE UNIQUE INDEX orders_by_app_account_token ON orders (app_account_token) WHERE app_account_token IS NOT NULL",
        """
        CREATE UNIQUE INDEX orders_by_apple_transaction_id ON orders (apple_transaction_id)
            WHERE apple_transaction_id IS NOT NULL
        """,
        """
        CREATE INDEX orders_by_original_transaction_id ON orders (original_transaction_id)
            WHERE original_transaction_id IS NOT NULL
        """,
        // 凑单: the user's open App Store orders for one product, oldest first.
        """
        CREATE INDEX orders_open_apple_by_user_product ON orders (user_id, apple_product_id, created_at)
            WHERE channel = 'apple' AND state IN ('NOTPAY', 'USERPAYING')
        """,
        """
        CREATE FUNCTION wxpay_orders_apple_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF OLD.apple_transaction_id IS NOT NULL AND NEW.apple_transaction_id IS DISTINCT FROM OLD.apple_transaction_id THEN
                RAISE EXCEPTION 'an order is credited by one App Store transaction' USING ERRCODE = 'check_violation';
            END IF;
            IF NEW.channel IS DISTINCT FROM OLD.channel OR NEW.app_account_token IS DISTINCT FROM OLD.app_account_token THEN
                RAISE EXCEPTION 'an order keeps its channel and token' USING ERRCODE = 'check_violation';
            END IF;
            RETURN NEW;
        END $$
        """,
        """
        CREATE TRIGGER orders_apple_fixed BEFORE UPDATE OF apple_transaction_id, channel, app_account_token ON orders
            FOR EACH ROW EXECUTE FUNCTION wxpay_orders_apple_fixed()
        """,
        """
        CREATE TABLE apple_transactions (
            transaction_id text PRIMARY KEY,
            original_transaction_id text NOT NULL,
            product_id text NOT NULL,
            environment text NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
            app_account_token text,
            purchase_date timestamptz NOT NULL,
            revocation_date timestamptz,
            out_trade_no text UNIQUE REFERENCES orders (out_trade_no),
            matched_by text CHECK (matched_by IN ('app_account_token', 'out_trade_no', 'user_product', 'new_order')),
            source text NOT NULL,
            first_seen_at timestamptz NOT NULL,
            credited_at timestamptz,
            checked_at timestamptz,
            updated_at timestamptz NOT NULL,
            CHECK ((out_trade_no IS NULL) = (matched_by IS NULL))
        )
        """,
        "CREATE INDEX apple_transactions_by_original ON apple_transactions (original_transaction_id)",
        """
        CREATE INDEX apple_transactions_unmatched ON apple_transactions (first_seen_at)
            WHERE out_trade_no IS NULL AND revocation_date IS NULL
        """,
        // A transaction id credits one order, ever: once set, its order never changes, and the
        // ledger is never pruned.
        """
        CREATE FUNCTION wxpay_apple_transactions_credit_once() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF OLD.out_trade_no IS NOT NULL
                AND (NEW.out_trade_no IS DISTINCT FROM OLD.out_trade_no OR NEW.matched_by IS DISTINCT FROM OLD.matched_by) THEN
                RAISE EXCEPTION 'an App Store transaction credits one order, ever' USING ERRCODE = 'check_violation';
            END IF;
            RETURN NEW;
        END $$
        """,
        """
        CREATE TRIGGER apple_transactions_credit_once BEFORE UPDATE ON apple_transactions
            FOR EACH ROW EXECUTE FUNCTION wxpay_apple_transactions_credit_once()
        """,
        """
        CREATE TRIGGER apple_transactions_append_only BEFORE DELETE ON apple_transactions
            FOR EACH ROW EXECUTE FUNCTION wxpay_append_only()
        """,
        """
        CREATE TRIGGER apple_transactions_no_truncate BEFORE TRUNCATE ON apple_transactions
            FOR EACH STATEMENT EXECUTE FUNCTION wxpay_append_only()
        """,
        """
        CREATE TABLE appstore_notifications (
            notification_uuid text PRIMARY KEY,
            notification_type text NOT NULL,
            subtype text,
            environment text NOT NULL,
            transaction_id text,
            signed_date timestamptz NOT NULL,
            received_at timestamptz NOT NULL,
            outcome text NOT NULL
        )
        """,
        // The integrity check covers the new tables.
        PostgresMigrations.amcheckFunction(relations: ["orders", "order_events", "outbox", "refunds", "apple_transactions",
                                                       "appstore_notifications"]),
    ]

    public func creditAppleTransaction(_ credit: AppleCredit) async throws(StorageError) -> AppleCreditResult {
        try credit.validate()
        return try await transaction { db throws(StorageError) in
            let result = try credit.perform(in: PostgresAppleCreditSession(db: db))
            guard case .credited(let order, _) = result else { return (result, nil) }
            // Announced at COMMIT: waiters on other instances wake for the paid order.
            return (result, order.outTradeNo)
        }
    }

    public func appleTransaction(_ transactionID: String) async throws(StorageError) -> AppleTransactionRecord? {
        try await read { db throws(StorageError) in
            try db.run(Self.selectAppleTransaction(transactionID)).first(AppleTransactionRecord.init(row:))
        }
    }

    public func appleTransactions(originalTransactionID: String) async throws(StorageError) -> [AppleTransactionRecord] {
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + AppleTransactionRecord.columns + """
                     FROM apple_transactions WHERE original_transaction_id = $1
                    ORDER BY purchase_date, transaction_id COLLATE "C"
                    """, originalTransactionID)).rows(AppleTransactionRecord.init(row:))
        }
    }

    public func recordAppleRevocation(_ facts: AppleTransactionFacts, source: String, at: Date) async throws(StorageError)
        -> AppleTransactionRecord
    {
        try facts.validate()
        try StoreText.validate(source)
        return try await transaction { db throws(StorageError) in
            let session = PostgresAppleCreditSession(db: db)
            _ = try session.claimLedgerRow(facts, source: source, at: at)
            return (try session.revoke(facts.transactionID, at: facts.revocationDate ?? at, now: at), nil)
        }
    }

    public func recordAppleRefundReversal(_ facts: AppleTransactionFacts, reversedAt: Date, source: String, at: Date)
        async throws(StorageError) -> AppleTransactionRecord
    {
        try facts.validate()
        try StoreText.validate(source)
        return try await transaction { db throws(StorageError) in
            let session = PostgresAppleCreditSession(db: db)
            _ = try session.claimLedgerRow(facts, source: source, at: at)
            guard let row = try db.run(PGQuery(
                """
                UPDATE apple_transactions
                SET revocation_date = CASE WHEN revocation_date > $1 THEN revocation_date END,
                    refund_reversed_at = GREATEST(COALESCE(refund_reversed_at, $1), $1), updated_at = GREATEST(updated_at, $2)
                WHERE transaction_id = $3 RETURNING
                """ + " " + AppleTransactionRecord.columns, reversedAt, at, facts.transactionID)).first(AppleTransactionRecord.init(row:))
            else { throw .unexpectedRow }
            return (row, nil)
        }
    }

    public func order(appAccountToken token: String) async throws(StorageError) -> OrderRecord? {
        try await read { db throws(StorageError) in
            try db.run(Self.selectOrder(appAccountToken: token)).first(OrderRecord.init(row:))
        }
    }

    public func orders(appleTransactionID: String) async throws(StorageError) -> [OrderRecord] {
        try await read { db throws(StorageError) in
            try db.run(PGQuery("SELECT " + OrderRecord.columns + " FROM orders WHERE apple_transaction_id = $1",
                               appleTransactionID)).rows(OrderRecord.init(row:))
        }
    }

    public func orders(originalTransactionID: String) async throws(StorageError) -> [OrderRecord] {
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + OrderRecord.columns + """
                     FROM orders WHERE original_transaction_id = $1 ORDER BY paid_at, out_trade_no COLLATE "C"
                    """, originalTransactionID)).rows(OrderRecord.init(row:))
        }
    }

    public func latestAppleTransaction(userID: String) async throws(StorageError) -> AppleAnchor? {
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                """
                SELECT user_id, apple_transaction_id, environment FROM orders
                WHERE user_id = $1 AND channel = 'apple' AND apple_transaction_id IS NOT NULL
                ORDER BY paid_at DESC, apple_transaction_id COLLATE "C" DESC LIMIT 1
                """, userID)).first(AppleAnchor.init(row:))
        }
    }

    public func appleRefundAnchors(paidSince: Date, limit: Int) async throws(StorageError) -> [AppleAnchor] {
        guard limit > 0 else { return [] }
        return try await read { db throws(StorageError) in
            // Any of the account's transactions serves as the handle; the greatest id is one of them.
            try db.run(PGQuery(
                """
                SELECT user_id, MAX(apple_transaction_id COLLATE "C"), environment FROM orders
                WHERE channel = 'apple' AND state = 'SUCCESS' AND paid_at >= $1 AND user_id IS NOT NULL
                    AND apple_transaction_id IS NOT NULL
                GROUP BY user_id, environment ORDER BY user_id COLLATE "C", environment LIMIT $2
                """, paidSince, limit)).rows(AppleAnchor.init(row:))
        }
    }

    public func usersWithAppleOrdersOpen(appleProductID: String, at: Date, madeAfter: Date, limit: Int) async throws(StorageError)
        -> [String]
    {
        guard limit > 0 else { return [] }
        return try await read { db throws(StorageError) in
            try db.run(PGQuery(
                """
                SELECT DISTINCT user_id FROM orders
                WHERE state IN ('NOTPAY', 'USERPAYING') AND created_at > $3 AND created_at <= $2
                    AND expires_at > $2 AND channel = 'apple' AND apple_product_id = $1 AND user_id IS NOT NULL
                LIMIT $4
                """, appleProductID, at, madeAfter, limit)).rows { row throws(StorageError) in try row.text(0) }
        }
    }

    public func unmatchedAppleTransactions(before: Date, limit: Int) async throws(StorageError) -> [AppleTransactionRecord] {
        guard limit > 0 else { return [] }
        return try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + AppleTransactionRecord.columns + """
                     FROM apple_transactions
                    WHERE out_trade_no IS NULL AND revocation_date IS NULL AND COALESCE(checked_at, first_seen_at) < $1
                    ORDER BY COALESCE(checked_at, first_seen_at), transaction_id COLLATE "C" LIMIT $2
                    """, before, limit)).rows(AppleTransactionRecord.init(row:))
        }
    }

    public func markAppleTransactionChecked(_ transactionID: String, at: Date) async throws(StorageError) -> Bool {
        try await write(key: Self.appleTransactionKey(transactionID)) { db throws(StorageError) in
            (try db.run(PGQuery(
                """
                UPDATE apple_transactions SET checked_at = GREATEST(COALESCE(checked_at, $1), $1),
                    updated_at = GREATEST(updated_at, $1)
                WHERE transaction_id = $2
                """, at, transactionID)).affectedRows == 1, nil)
        }
    }

    public func unmatchedAppleTransactionCount() async throws(StorageError) -> Int {
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT COUNT(*) FROM apple_transactions WHERE out_trade_no IS NULL AND revocation_date IS NULL"))
                .first { row throws(StorageError) in try row.int(0) } ?? 0
        }
    }

    public func appStoreNotification(_ notificationUUID: String) async throws(StorageError) -> AppStoreNotificationRecord? {
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + AppStoreNotificationRecord.columns + " FROM appstore_notifications WHERE notification_uuid = $1",
                notificationUUID)).first(AppStoreNotificationRecord.init(row:))
        }
    }

    public func recordAppStoreNotification(_ notification: AppStoreNotificationRecord) async throws(StorageError) -> Bool {
        try notification.validate()
        return try await write(key: "n:" + notification.notificationUUID) { db throws(StorageError) in
            (try db.run(PGQuery(
                "INSERT INTO appstore_notifications (" + AppStoreNotificationRecord.columns + """
                    ) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (notification_uuid) DO NOTHING
                    """,
                notification.notificationUUID, notification.notificationType, notification.subtype,
                notification.environment, notification.transactionID, notification.signedDate, notification.receivedAt,
                notification.outcome)).affectedRows == 1, nil)
        }
    }

    // MARK: Statements

    static func appleTransactionKey(_ transactionID: String) -> String { "a:" + transactionID }

    static func selectAppleTransaction(_ transactionID: String, locking: Bool = false) -> PGQuery {
        PGQuery(
            "SELECT " + AppleTransactionRecord.columns + " FROM apple_transactions WHERE transaction_id = $1"
                + (locking ? " FOR UPDATE" : ""), transactionID)
    }

    static func selectOrder(appAccountToken token: String) -> PGQuery {
        PGQuery("SELECT " + OrderRecord.columns + " FROM orders WHERE app_account_token = $1", token)
    }
}

/// `AppleCreditSession` on PostgreSQL, inside the credit's own transaction.
struct PostgresAppleCreditSession: AppleCreditSession {
    let db: PGConnection

    func claimLedgerRow(_ facts: AppleTransactionFacts, source: String, at: Date) throws(StorageError)
        -> AppleTransactionRecord
    {
        // A racing insert of the same id waits for this one's COMMIT and then does nothing; the
        // row lock keeps every other credit of the id waiting until this transaction ends.
        let results = try db.run([
            PGQuery(
                """
                INSERT INTO apple_transactions (transaction_id, original_transaction_id, product_id, environment,
                    app_account_token, purchase_date, revocation_date, source, first_seen_at, updated_at, price, currency,
                    storefront, quantity, transaction_reason)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12, $13, $14) ON CONFLICT (transaction_id) DO UPDATE SET
                """ + AppleTransactionRecord.ledgerFill, facts.transactionID, facts.originalTransactionID, facts.productID, facts.environment,
                facts.appAccountToken, facts.purchaseDate, facts.revocationDate, source, at, facts.price, facts.currency,
                facts.storefront, facts.quantity, facts.transactionReason),
            PostgresOrderStore.selectAppleTransaction(facts.transactionID, locking: true),
        ])
        guard let row = try results[1].first(AppleTransactionRecord.init(row:)) else { throw .unexpectedRow }
        return row
    }

    func revoke(_ transactionID: String, at revoked: Date, now: Date) throws(StorageError) -> AppleTransactionRecord {
        // The row is locked by `claimLedgerRow`; the later revocation date is kept, and a refund
        // Apple reversed after this revocation's date leaves it as it is (a late copy of a refund
        // taken back).
        let results = try db.run([
            PGQuery(
                """
                UPDATE apple_transactions SET revocation_date = GREATEST(COALESCE(revocation_date, $1), $1),
                    updated_at = GREATEST(updated_at, $2)
                WHERE transaction_id = $3 AND (refund_reversed_at IS NULL OR $1 > refund_reversed_at)
                """, revoked, now, transactionID),
            PostgresOrderStore.selectAppleTransaction(transactionID),
        ])
        guard let row = try results[1].first(AppleTransactionRecord.init(row:)) else { throw .unexpectedRow }
        return row
    }

    func order(_ outTradeNo: String) throws(StorageError) -> OrderRecord? {
        try db.run(PostgresOrderStore.selectOrder(outTradeNo)).first(OrderRecord.init(row:))
    }

    func order(appAccountToken: String) throws(StorageError) -> OrderRecord? {
        try db.run(PostgresOrderStore.selectOrder(appAccountToken: appAccountToken)).first(OrderRecord.init(row:))
    }

    func openAppleOrders(userID: String, appleProductID: String, limit: Int) throws(StorageError) -> [OrderRecord] {
        try db.run(PGQuery(
            "SELECT " + OrderRecord.columns + """
                 FROM orders
                WHERE channel = 'apple' AND state IN ('NOTPAY', 'USERPAYING') AND user_id = $1 AND apple_product_id = $2
                ORDER BY created_at, out_trade_no COLLATE "C" LIMIT $3
                """, userID, appleProductID, limit)).rows(OrderRecord.init(row:))
    }

    func lock(_ candidates: [OrderRecord]) throws(StorageError) -> [OrderRecord?] {
        guard !candidates.isEmpty else { return [] }
        // ORDER BY runs before the locking clause: the rows are locked in out_trade_no order (bytewise,
        // as the group-commit batches sort their lock keys), by every credit of every instance.
        let locked = try db.run(PGQuery(
            "SELECT " + OrderRecord.columns + """
                 FROM orders WHERE out_trade_no = ANY($1) ORDER BY out_trade_no COLLATE "C" FOR NO KEY UPDATE
                """, candidates.map(\.outTradeNo))).rows(OrderRecord.init(row:))
        let byNumber = Dictionary(locked.map { ($0.outTradeNo, $0) }, uniquingKeysWith: { first, _ in first })
        return candidates.map { byNumber[$0.outTradeNo] }
    }

    func saleAgrees(_ terms: SaleTerms, productID: String?) throws(StorageError) -> Bool {
        let checks = PostgresOrderStore.saleCheck(terms, productID: productID)
        guard !checks.isEmpty else { return true }
        return try PostgresOrderStore.saleAgrees(terms, productID: productID, db.run(checks)[1])
    }

    func insert(_ order: OrderRecord, event: NewOrderEvent) throws(StorageError) -> Bool {
        let inserted = try db.run(PGQuery(
            "INSERT INTO orders (" + OrderRecord.insertColumns + """
                ) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
                          $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35)
                ON CONFLICT (out_trade_no) DO NOTHING
                """, parameters: PostgresOrderStore.orderParameters(order))).affectedRows == 1
        guard inserted else { return false }
        _ = try db.run(PostgresOrderStore.insertEvent(event, of: order.outTradeNo))
        return true
    }

    func transition(_ transition: OrderTransition) throws(StorageError) -> TransitionResult {
        try PostgresOrderStore.transition(transition, on: db)
    }

    func markCredited(_ transactionID: String, outTradeNo: String, matchedBy: AppleMatch, at: Date) throws(StorageError) {
        guard try db.run(PGQuery(
            """
            UPDATE apple_transactions SET out_trade_no = $1, matched_by = $2, credited_at = $3,
                updated_at = GREATEST(updated_at, $3)
            WHERE transaction_id = $4 AND out_trade_no IS NULL
            """, outTradeNo, matchedBy.rawValue, at, transactionID)).affectedRows == 1
        else { throw .unexpectedRow }
    }

    func appendEvents(_ events: [NewOrderEvent], to outTradeNo: String) throws(StorageError) {
        guard !events.isEmpty else { return }
        _ = try db.run(events.map { PostgresOrderStore.insertEvent($0, of: outTradeNo) })
    }

    func fillQuantity(_ outTradeNo: String, _ quantity: Int, event: NewOrderEvent) throws(StorageError) -> OrderRecord? {
        guard let filled = try db.run(PGQuery(
            "UPDATE orders SET apple_quantity = $1, updated_at = GREATEST(updated_at, $2) WHERE out_trade_no = $3 "
                + "AND apple_quantity IS NULL RETURNING " + OrderRecord.columns,
            quantity, event.at, outTradeNo)).first(OrderRecord.init(row:))
        else { return nil }
        try appendEvents([event], to: outTradeNo)
        return filled
    }
}
