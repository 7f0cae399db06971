// SPDX-License-Identifier: Apache-2.0
import Foundation

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
        if let made = credit.newOrder {
            try Self.checkNew(made.order)
            guard made.order.channel == .apple, made.order.appleProductID == credit.transaction.productID else {
                throw .invalidArgument("the new order must be an App Store order for the transaction's product")
            }
        }
        return try await write { db throws(StorageError) in
            let facts = credit.transaction
            // 1. The claim of the id: from here on this transaction is the only writer of its row.
            try Self.insertLedgerRow(facts, source: credit.source, at: credit.at, on: db)
            guard var ledger = try Self.appleTransaction(facts.transactionID, on: db) else { throw .unexpectedRow }
            if let credited = ledger.outTradeNo {
                return .alreadyCredited(try Self.existingOrder(credited, on: db), ledger.matchedBy ?? .userProduct)
            }
            if let revoked = facts.revocationDate, ledger.facts.revocationDate == nil {
                ledger = try Self.revoke(facts.transactionID, at: revoked, now: credit.at, on: db)
            }
            if ledger.isRevoked { return .revoked(ledger) }

            // 2. The candidates, in the order they are tried.
            var notes: [AppleMatchNote] = []
            var user = credit.userID
            var candidates: [(order: OrderRecord, how: AppleMatch)] = []
            if let token = facts.appAccountToken {
                if let order = try Self.order(appAccountToken: token, on: db) {
                    // The token says whose purchase it is, whoever reports it (an account switch).
                    if let owner = order.userID { user = owner }
                    if order.channel != .apple || order.appleProductID != facts.productID {
                        notes.append(.tokenOrderOtherProduct(outTradeNo: order.outTradeNo, appleProductID: order.appleProductID))
                    } else if order.state == .success || order.state == .refund {
                        notes.append(.tokenOrderAlreadyPaid(outTradeNo: order.outTradeNo))
                    } else {
                        candidates.append((order, .appAccountToken))
                    }
                } else {
                    notes.append(.tokenUnknown)
                }
            }
            if let outTradeNo = credit.outTradeNo, !candidates.contains(where: { $0.order.outTradeNo == outTradeNo }) {
                if let order = try Self.order(outTradeNo, on: db), let user, order.userID == user,
                   Self.isOpenAppleOrder(order, product: facts.productID) {
                    candidates.append((order, .outTradeNo))
                } else {
                    notes.append(.outTradeNoNotUsable(outTradeNo: outTradeNo))
                }
            }
            if let user {
                let open = try db.rows(
                    "SELECT " + OrderRecord.columns + """
                         FROM orders
                        WHERE channel = 'apple' AND state IN ('NOTPAY', 'USERPAYING') AND user_id = ?1 AND apple_product_id = ?2
                        ORDER BY created_at, out_trade_no LIMIT 8
                        """, user, facts.productID, decode: OrderRecord.init(row:))
                for order in open where !candidates.contains(where: { $0.order.outTradeNo == order.outTradeNo }) {
                    candidates.append((order, .userProduct))
                }
            }

            // 3. The first candidate the door moves to SUCCESS.
            for (candidate, how) in candidates {
                if let credited = try Self.credit(candidate, how, credit, notes: notes, on: db) {
                    return .credited(credited, how)
                }
            }

            // 4. Nothing open: an order made for the purchase, or the ledger row waits.
            guard var made = credit.newOrder, let user else { return .unmatched(ledger) }
            made.order.userID = user
            guard try Self.insert(made.order, on: db) else { throw .constraint }
            _ = try Self.insertEvent(made.order.outTradeNo, made.event, on: db)
            guard let credited = try Self.credit(try Self.existingOrder(made.order.outTradeNo, on: db), .newOrder, credit,
                                                 notes: notes, on: db)
            else { throw .unexpectedRow }
            return .credited(credited, .newOrder)
        }
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
        try await write { db throws(StorageError) in
            try Self.insertLedgerRow(facts, source: source, at: at, on: db)
            return try Self.revoke(facts.transactionID, at: facts.revocationDate ?? at, now: at, on: db)
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
        try await write { db throws(StorageError) in
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

    /// Credits `candidate` through the door if it is still in a state it may be credited from;
    /// returns the order as credited, or nil when it was not (then nothing was written).
    private static func credit(_ candidate: OrderRecord, _ how: AppleMatch, _ credit: AppleCredit,
                               notes: [AppleMatchNote], on db: SQLiteConnection) throws(StorageError) -> OrderRecord? {
        let facts = credit.transaction
        // Only the token proves an order closed at its expiry was paid after all.
        let from = how == .appAccountToken ? OrderState.open.union([.closed]) : OrderState.open
        guard from.contains(candidate.state) else { return nil }
        var flags: Set<OrderFlag> = []
        if candidate.state == .closed { flags.insert(.paidAfterClose) }
        if how == .newOrder { flags.insert(.matchedWithoutOrder) }
        let apple = AppleTransactionFields(transactionID: facts.transactionID,
                                           originalTransactionID: facts.originalTransactionID, environment: facts.environment)
        // The order as it will read once this commits: what the outbox event describes.
        var paid = candidate
        paid.state = .success
        paid.paidAt = SQLiteTime.date(milliseconds: SQLiteTime.milliseconds(facts.purchaseDate))
        paid.appleTransactionID = apple.transactionID
        paid.originalTransactionID = apple.originalTransactionID
        paid.environment = apple.environment
        paid.flags.formUnion(flags)
        let outbox = credit.outbox(paid)
        if let outbox, outbox.outTradeNo != candidate.outTradeNo {
            throw .invalidArgument("the outbox event belongs to another order")
        }
        let result = try transition(
            OrderTransition(outTradeNo: candidate.outTradeNo, to: .success, from: from, paidAt: facts.purchaseDate,
                            detail: candidate.state == .closed ? credit.source + " (paid after close)" : credit.source,
                            outbox: outbox, addingFlags: flags, at: credit.at, apple: apple),
            on: db)
        guard case .changed(let after) = result else { return nil }
        guard try db.run(
            """
            UPDATE apple_transactions SET out_trade_no = ?1, matched_by = ?2, credited_at = ?3, updated_at = MAX(updated_at, ?3)
            WHERE transaction_id = ?4 AND out_trade_no IS NULL
            """, after.outTradeNo, how.rawValue, credit.at, facts.transactionID) == 1
        else { throw .unexpectedRow }
        let decision = AppleMatchDecision(matchedBy: how, order: after, previousState: candidate.state, notes: notes)
        for event in credit.events(decision) { _ = try insertEvent(after.outTradeNo, event, on: db) }
        return after
    }

    private static func isOpenAppleOrder(_ order: OrderRecord, product: String) -> Bool {
        order.channel == .apple && order.appleProductID == product && OrderState.open.contains(order.state)
    }

    private static func insertLedgerRow(_ facts: AppleTransactionFacts, source: String, at: Date, on db: SQLiteConnection)
        throws(StorageError)
    {
        try db.run(
            """
            INSERT INTO apple_transactions (transaction_id, original_transaction_id, product_id, environment,
                app_account_token, purchase_date, revocation_date, source, first_seen_at, updated_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9) ON CONFLICT (transaction_id) DO NOTHING
            """, facts.transactionID, facts.originalTransactionID, facts.productID, facts.environment, facts.appAccountToken,
            facts.purchaseDate, facts.revocationDate, source, at)
    }

    /// Sets the revocation date unless one is known; returns the row.
    private static func revoke(_ transactionID: String, at revoked: Date, now: Date, on db: SQLiteConnection)
        throws(StorageError) -> AppleTransactionRecord
    {
        guard
            let row = try db.row(
                """
                UPDATE apple_transactions SET revocation_date = COALESCE(revocation_date, ?1), updated_at = MAX(updated_at, ?2)
                WHERE transaction_id = ?3 RETURNING
                """ + " " + AppleTransactionRecord.columns, revoked, now, transactionID,
                decode: AppleTransactionRecord.init(row:))
        else { throw .unexpectedRow }
        return row
    }

    private static func appleTransaction(_ transactionID: String, on db: SQLiteConnection) throws(StorageError)
        -> AppleTransactionRecord?
    {
        try db.row(
            "SELECT " + AppleTransactionRecord.columns + " FROM apple_transactions WHERE transaction_id = ?", transactionID,
            decode: AppleTransactionRecord.init(row:))
    }

    private static func order(appAccountToken token: String, on db: SQLiteConnection) throws(StorageError) -> OrderRecord? {
        try db.row("SELECT " + OrderRecord.columns + " FROM orders WHERE app_account_token = ?", token,
                   decode: OrderRecord.init(row:))
    }
}

extension AppleTransactionRecord {
    static let columns: SQL = """
        transaction_id, original_transaction_id, product_id, environment, app_account_token, purchase_date, \
        revocation_date, out_trade_no, matched_by, source, first_seen_at, credited_at, updated_at
        """

    init(row: SQLiteRow) throws(StorageError) {
        let matchedBy = try row.optionalText(8)
        let match = try matchedBy.map { text throws(StorageError) in
            guard let match = AppleMatch(rawValue: text) else { throw StorageError.unexpectedRow }
            return match
        }
        self.init(
            facts: AppleTransactionFacts(
                transactionID: try row.text(0), originalTransactionID: try row.text(1), productID: try row.text(2),
                environment: try row.text(3), appAccountToken: try row.optionalText(4), purchaseDate: try row.date(5),
                revocationDate: try row.optionalDate(6)),
            outTradeNo: try row.optionalText(7), matchedBy: match, source: try row.text(9), firstSeenAt: try row.date(10),
            creditedAt: try row.optionalDate(11), updatedAt: try row.date(12))
    }
}

extension AppleAnchor {
    init(row: SQLiteRow) throws(StorageError) {
        self.init(userID: try row.text(0), transactionID: try row.text(1), environment: try row.text(2))
    }
}

extension AppStoreNotificationRecord {
    static let columns: SQL = """
        notification_uuid, notification_type, subtype, environment, transaction_id, signed_date, received_at, outcome
        """

    init(row: SQLiteRow) throws(StorageError) {
        self.init(
            notificationUUID: try row.text(0), notificationType: try row.text(1), subtype: try row.optionalText(2),
            environment: try row.text(3), transactionID: try row.optionalText(4), signedDate: try row.date(5),
            receivedAt: try row.date(6), outcome: try row.text(7))
    }
}
