// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore {
    public func create(_ order: OrderRecord, event: NewOrderEvent, terms: SaleTerms) async throws(StorageError)
        -> CreateResult
    {
        try order.validateNew()
        try event.validate()
        return try await write { db throws(StorageError) in
            // The writer's transaction: no binding can come between this check and the insert.
            let agrees = try Self.saleAgrees(terms, order.productID, on: db)
            if agrees, try Self.insert(order, on: db) {
                // The order was just inserted: a plain INSERT (insertEvent's existence check and
                // RETURNING would cost an ephemeral table for a row nobody reads).
                try Self.appendEvent(event, to: order.outTradeNo, on: db)
                return .created(try Self.existingOrder(order.outTradeNo, on: db))
            }
            // A stored order is answered whatever the catalog says now: it was priced before.
            guard let existing = try Self.order(order.outTradeNo, on: db) else { throw agrees ? .unexpectedRow : .termsChanged }
            return existing.parametersDigest == order.parametersDigest ? .existing(existing) : .conflict(existing)
        }
    }

    /// `ProductTerms.saleAgrees` on the rows on record (one indexed read for an order naming a
    /// catalog product; the table's few hundred rows for one sold outside the catalog).
    static func saleAgrees(_ terms: SaleTerms, _ productID: String?, on db: SQLiteConnection) throws(StorageError) -> Bool {
        guard let keys = ProductTerms.saleKeys(terms, productID) else { return true }
        let row = { (row: SQLiteRow) throws(StorageError) in (key: try row.text(0), value: try row.text(1)) }
        let rows = terms.readsNames
            ? try db.rows(
                "SELECT key, value FROM bindings WHERE key IN (?1, ?2, ?3) OR substr(key, 1, 8) = 'product:' OR substr(key, 1, 5) = ?4",
                keys[0], keys[1], keys[2], ProductTerms.namePrefix, decode: row)
            : try db.rows("SELECT key, value FROM bindings WHERE key IN (?, ?, ?)", keys[0], keys[1], keys[2], decode: row)
        return ProductTerms.saleAgrees(terms, productID ?? "", rows: rows)
    }

    public func order(_ outTradeNo: String) async throws(StorageError) -> OrderRecord? {
        try await read { db throws(StorageError) in try Self.order(outTradeNo, on: db) }
    }

    public func orders(transactionID: String) async throws(StorageError) -> [OrderRecord] {
        try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + OrderRecord.columns + " FROM orders WHERE transaction_id = ? ORDER BY created_at",
                transactionID, decode: OrderRecord.init(row:))
        }
    }

    public func orders(userID: String, limit: Int, after: OrderPageKey?) async throws(StorageError) -> OrderPage {
        guard limit > 0 else { return OrderPage(orders: [], next: nil) }
        let select: SQL = "SELECT " + OrderRecord.columns + " FROM orders WHERE user_id = ?"
        let order: SQL = " ORDER BY created_at DESC, out_trade_no DESC LIMIT ?"
        // One row more than asked says whether there is a next page. The keyset comparison runs on
        // the (user_id, created_at) index; out_trade_no only breaks ties within one millisecond.
        let rows = try await read { db throws(StorageError) in
            if let after {
                try db.rows(
                    select + " AND (created_at, out_trade_no) < (?, ?)" + order,
                    userID, after.createdAt, after.outTradeNo, limit + 1, decode: OrderRecord.init(row:))
            } else {
                try db.rows(select + order, userID, limit + 1, decode: OrderRecord.init(row:))
            }
        }
        return OrderPage(rows: rows, limit: limit)
    }

    public func setPrepay(_ outTradeNo: String, prepay: StoredPrepay, issuedAt: Date, event: NewOrderEvent?)
        async throws(StorageError) -> OrderRecord?
    {
        try StoreText.validate(outTradeNo, prepay.prepayID, prepay.codeURL, prepay.mwebURL)
        try event.validate()
        // No RETURNING: SQLite collects returned rows in an ephemeral table, which costs more
        // than reading the row again by its key in the same transaction.
        return try await write { db throws(StorageError) in
            let changed = try db.run(
                """
                UPDATE orders SET prepay_id = ?1, prepay_issued_at = ?2, updated_at = MAX(updated_at, ?2),
                    code_url = ?4, mweb_url = ?5
                WHERE out_trade_no = ?3
                """,
                prepay.prepayID, issuedAt, outTradeNo, prepay.codeURL, prepay.mwebURL)
            guard changed == 1 else { return nil }
            if let event { try Self.appendEvent(event, to: outTradeNo, on: db) }
            return try Self.existingOrder(outTradeNo, on: db)
        }
    }

    public func touch(_ outTradeNo: String, _ timestamp: OrderTimestamp, at: Date) async throws(StorageError) -> Bool {
        try await write { db throws(StorageError) in try Self.touch(outTradeNo, timestamp, at: at, on: db) != nil }
    }

    public func addFlags(_ outTradeNo: String, _ flags: Set<OrderFlag>, at: Date) async throws(StorageError)
        -> OrderRecord?
    {
        try await write { db throws(StorageError) in
            guard let order = try Self.order(outTradeNo, on: db) else { return nil }
            guard let added = order.flags(adding: flags) else { return order }
            return try Self.setFlags(added, of: outTradeNo, at: at, on: db)
        }
    }

    public func transition(_ transition: OrderTransition) async throws(StorageError) -> TransitionResult {
        try transition.validate()
        return try await write { db throws(StorageError) in try Self.transition(transition, on: db) }
    }

    /// The door itself, inside the caller's write transaction: `transition(_:)` and
    /// `creditAppleTransaction` both change an order's state only through here.
    static func transition(_ transition: OrderTransition, on db: SQLiteConnection) throws(StorageError)
        -> TransitionResult
    {
        let allowed = transition.sourceStates
        // Inside the write transaction nobody else writes, so this is the state the UPDATE sees.
        // Only the state: the whole row is read once the UPDATE has decided.
        guard
            let beforeState = try db.row(
                "SELECT state FROM orders WHERE out_trade_no = ?", transition.outTradeNo,
                decode: { row throws(StorageError) in try row.text(0) })
        else { return .notFound }
        // A receipt's bookkeeping time rides in the same UPDATE when the state changes.
        let touchCode =
            switch transition.receipt?.touching {
            case .lastNotify: 1
            case .lastQueried: 2
            case nil: 0
            }
        // The door itself: a conditional UPDATE, so even a second process writing the same file
        // could not make two callers both see a change. An App Store transaction is stored only
        // where none is (COALESCE), and the unique index refuses one another order holds.
        // The allowed states are one bound list, `,NOTPAY,USERPAYING,`, matched with instr (state
        // names are fixed capital words): `IN (SELECT value FROM json_each(?))` built an ephemeral
        // index per call. No RETURNING either (an ephemeral table per call): the changed row is
        // read back by its key, inside the same transaction.
        // Only an App Store credit sets its identifiers: SQLite maintains every index holding a
        // column named in SET, changed or not (`orders_by_apple_transaction_id`,
        // `orders_by_original_transaction_id`), so a WeChat payment's UPDATE leaves them out.
        let changed =
            if let apple = transition.apple {
                try db.run(
                    doorCrediting,
                    transition.to.rawValue, transition.transactionID, transition.paidAt, transition.at,
                    transition.outTradeNo, allowed.commaDelimited, transition.expectedAmount, touchCode,
                    apple.transactionID, apple.originalTransactionID, apple.environment, apple.quantity)
            } else {
                try db.run(
                    door,
                    transition.to.rawValue, transition.transactionID, transition.paidAt, transition.at,
                    transition.outTradeNo, allowed.commaDelimited, transition.expectedAmount, touchCode)
            }
        guard changed == 1 else {
            if let state = OrderState(rawValue: beforeState), transition.writesReceipt(unchangedIn: state),
                let receipt = transition.receiptEvent(changed: false)
            {
                try appendEvent(receipt, to: transition.outTradeNo, on: db)
                if let timestamp = transition.receipt?.touching,
                    let touched = try touch(transition.outTradeNo, timestamp, at: transition.at, on: db)
                {
                    return .unchanged(touched)
                }
            }
            return .unchanged(try existingOrder(transition.outTradeNo, on: db))
        }
        var after = try existingOrder(transition.outTradeNo, on: db)
        if let flags = transition.flags(after: after.flags) {
            after = try setFlags(flags, of: transition.outTradeNo, at: transition.at, on: db)
        }
        guard let before = OrderState(rawValue: beforeState) else { throw .unexpectedRow }
        // The state change and the receipt (a notify's `notify_received: settled`) in one INSERT,
        // in that order: every notify writes both.
        let stateChanged = transition.stateChangedEvent(from: before)
        if let receipt = transition.receiptEvent(changed: true) {
            try appendEvents(stateChanged, then: receipt, to: transition.outTradeNo, on: db)
        } else {
            try appendEvent(stateChanged, to: transition.outTradeNo, on: db)
        }
        if let outbox = transition.outbox {
            try insertOutbox(outbox, on: db)
        }
        if let followUp = transition.followUp {
            try insertOutbox(followUp, on: db)
        }
        return .changed(after)
    }

    public func appendEvent(_ outTradeNo: String, _ event: NewOrderEvent) async throws(StorageError) -> OrderEvent? {
        try StoreText.validate(outTradeNo)
        try event.validate()
        return try await write { db throws(StorageError) in try Self.insertEvent(outTradeNo, event, on: db) }
    }

    public func appendEvent(_ outTradeNo: String, _ event: NewOrderEvent, quietSince: Date, matching: QuietLineMatch)
        async throws(StorageError) -> OrderEvent?
    {
        try StoreText.validate(outTradeNo)
        try event.validate()
        let anyDetail: Int64 = matching == .kind ? 1 : 0
        return try await write { db throws(StorageError) in
            try db.row(
                """
                INSERT INTO order_events (out_trade_no, at, kind, detail)
                SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM orders WHERE out_trade_no = ?1)
                AND NOT EXISTS (SELECT 1 FROM order_events WHERE out_trade_no = ?1 AND kind = ?3 AND at > ?5
                                AND (?6 = 1 OR detail = ?4))
                RETURNING
                """ + " " + OrderEvent.columns,
                outTradeNo, event.at, event.kind, event.detail, quietSince, anyDetail, decode: OrderEvent.init(row:))
        }
    }

    public func events(_ outTradeNo: String) async throws(StorageError) -> [OrderEvent] {
        try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + OrderEvent.columns + " FROM order_events WHERE out_trade_no = ? ORDER BY id",
                outTradeNo, decode: OrderEvent.init(row:))
        }
    }

    // MARK: Statements shared by operations (run inside the caller's transaction)

    /// Inserts a new order unless its out_trade_no exists; returns whether it did.
    static func insert(_ order: OrderRecord, on db: SQLiteConnection) throws(StorageError) -> Bool {
        try db.run(
            "INSERT INTO orders (" + OrderRecord.insertColumns + """
                ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (out_trade_no) DO NOTHING
                """,
            order.outTradeNo, order.amount, order.description, order.clientIP, order.attach, order.userID,
            order.productID, order.signType, order.timeExpire, order.expiresAt, order.createdAt,
            order.state.rawValue, order.transactionID, order.paidAt, order.prepayID, order.prepayIssuedAt,
            order.parametersDigest, order.lastNotifyAt, order.lastQueriedAt,
            OrderRecord.encodeFlags(order.flags), order.updatedAt, order.channel.rawValue, order.appleProductID,
            order.appAccountToken, order.environment, order.appleTransactionID, order.originalTransactionID,
            order.currency, order.apiVersion, order.app, order.appID, order.tradeType, order.openID, order.codeURL,
            order.mwebURL) == 1
    }

    static func order(_ outTradeNo: String, on db: SQLiteConnection) throws(StorageError) -> OrderRecord? {
        try db.row(
            "SELECT " + OrderRecord.columns + " FROM orders WHERE out_trade_no = ?", outTradeNo,
            decode: OrderRecord.init(row:))
    }

    /// For an order this transaction just saw: its absence means the database broke a promise.
    static func existingOrder(_ outTradeNo: String, on db: SQLiteConnection) throws(StorageError)
        -> OrderRecord
    {
        guard let order = try order(outTradeNo, on: db) else { throw .unexpectedRow }
        return order
    }

    /// Sets a bookkeeping time; returns the order afterwards, or `nil` if unknown.
    static func touch(_ outTradeNo: String, _ timestamp: OrderTimestamp, at: Date, on db: SQLiteConnection)
        throws(StorageError) -> OrderRecord?
    {
        // MAX: a late, out-of-order touch never moves a time backwards.
        let sql: SQL =
            switch timestamp {
            case .lastNotify:
                "UPDATE orders SET last_notify_at = MAX(COALESCE(last_notify_at, ?1), ?1), "
            case .lastQueried:
                "UPDATE orders SET last_queried_at = MAX(COALESCE(last_queried_at, ?1), ?1), "
            }
        return try db.row(
            sql + "updated_at = MAX(updated_at, ?1) WHERE out_trade_no = ?2 RETURNING " + OrderRecord.columns,
            at, outTradeNo, decode: OrderRecord.init(row:))
    }

    /// Appends an event of an order this transaction has seen (no existence check).
    static func appendEvent(_ event: NewOrderEvent, to outTradeNo: String, on db: SQLiteConnection)
        throws(StorageError)
    {
        try db.run(
            "INSERT INTO order_events (out_trade_no, at, kind, detail) VALUES (?, ?, ?, ?)",
            outTradeNo, event.at, event.kind, event.detail)
    }

    // The door's UPDATE, from one text: its SET, the App Store columns only a credit names, its WHERE.
    private static let doorSet: SQL = """
        UPDATE orders SET state = ?1, transaction_id = COALESCE(?2, transaction_id),
            paid_at = COALESCE(?3, paid_at), updated_at = ?4,
            last_notify_at = CASE WHEN ?8 = 1 THEN MAX(COALESCE(last_notify_at, ?4), ?4)
                ELSE last_notify_at END,
            last_queried_at = CASE WHEN ?8 = 2 THEN MAX(COALESCE(last_queried_at, ?4), ?4)
                ELSE last_queried_at END
        """
    private static let doorAppleColumns: SQL = """
        ,
            apple_transaction_id = COALESCE(apple_transaction_id, ?9),
            original_transaction_id = COALESCE(original_transaction_id, ?10),
            environment = COALESCE(environment, ?11),
            apple_quantity = COALESCE(apple_quantity, ?12)
        """
    private static let doorWhere: SQL = """

        WHERE out_trade_no = ?5 AND instr(?6, ',' || state || ',') > 0
            AND (?7 IS NULL OR amount = ?7)
        """
    /// A payment's or a close's: parameters ?1 to ?8.
    private static let door = doorSet + doorWhere
    /// An App Store credit's: ?9 to ?12 its transaction ids, environment and quantity.
    private static let doorCrediting = doorSet + doorAppleColumns + doorWhere

    /// Appends two events to one order, `first` before `second`.
    static func appendEvents(_ first: NewOrderEvent, then second: NewOrderEvent, to outTradeNo: String,
                             on db: SQLiteConnection) throws(StorageError)
    {
        try db.run(
            "INSERT INTO order_events (out_trade_no, at, kind, detail) VALUES (?1, ?2, ?3, ?4), (?1, ?5, ?6, ?7)",
            outTradeNo, first.at, first.kind, first.detail, second.at, second.kind, second.detail)
    }

    /// Appends an event if the order exists; `nil` otherwise.
    static func insertEvent(_ outTradeNo: String, _ event: NewOrderEvent, on db: SQLiteConnection)
        throws(StorageError) -> OrderEvent?
    {
        try db.row(
            """
            INSERT INTO order_events (out_trade_no, at, kind, detail)
            SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM orders WHERE out_trade_no = ?1)
            RETURNING
            """ + " " + OrderEvent.columns,
            outTradeNo, event.at, event.kind, event.detail, decode: OrderEvent.init(row:))
    }

    /// Replaces the flags and returns the updated order.
    static func setFlags(_ flags: Set<OrderFlag>, of outTradeNo: String, at: Date, on db: SQLiteConnection)
        throws(StorageError) -> OrderRecord
    {
        guard
            let updated = try db.row(
                "UPDATE orders SET flags = ?1, updated_at = MAX(updated_at, ?2) WHERE out_trade_no = ?3 RETURNING "
                    + OrderRecord.columns,
                OrderRecord.encodeFlags(flags), at, outTradeNo, decode: OrderRecord.init(row:))
        else { throw .unexpectedRow }
        return updated
    }

    /// An event whose id is on record already is the same event written again (an `order.paid`'s
    /// id is its payment's: `OutboxEvent.id`): it is kept as it is, and the write goes on.
    static func insertOutbox(_ event: OutboxEvent, on db: SQLiteConnection) throws(StorageError) {
        try db.run(
            "INSERT INTO outbox (" + OutboxEvent.columns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            event.id, event.outTradeNo, event.type, event.payload, event.createdAt, event.attempts,
            event.nextAttemptAt, event.deliveredAt, event.deadAt, event.lastError)
    }
}
