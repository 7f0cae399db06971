// SPDX-License-Identifier: Apache-2.0
// Over 400 lines as one file: the order door (`transition`), its one-statement fast path and the
// multi-row merge of a batch's payments share their statements, which are kept beside them.
import Foundation
import StorageCore

extension PostgresOrderStore {
    public func create(_ order: OrderRecord, event: NewOrderEvent, terms: SaleTerms) async throws(StorageError)
        -> CreateResult
    {
        try order.validateNew()
        try event.validate()
        return try await write(key: Self.orderKey(order.outTradeNo)) { db throws(StorageError) in
            // The product's terms on record, read under a lock that conflicts with the one a
            // binding takes (SHARE ROW EXCLUSIVE) and not with other creates': a binding and this
            // create run one after the other, and the later sees the earlier (the binding this
            // order as sold, or the create the terms the binding wrote). Sent ahead of the insert
            // in one round trip; a new order priced under other terms is rolled back by the throw.
            let checks = Self.saleCheck(terms, productID: order.productID)
            // The primary key decides between racing creates, whichever instance they reach: one
            // INSERT wins, the others wait for it and do nothing. The second statement has a
            // snapshot of its own, so it sees the winner even when that committed a moment ago.
            let results = try db.run(checks + [
                PGQuery(
                    "WITH created AS (INSERT INTO orders (" + OrderRecord.insertColumns + """
                        ) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
                                  $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35)
                        ON CONFLICT (out_trade_no) DO NOTHING
                        RETURNING out_trade_no),
                    event AS (INSERT INTO order_events (out_trade_no, at, kind, detail)
                        SELECT out_trade_no, $36, $37, $38 FROM created)
                    SELECT out_trade_no FROM created
                    """,
                    parameters: Self.orderParameters(order) + [event.at.pgValue, event.kind.pgValue, event.detail.pgValue]),
                Self.selectOrder(order.outTradeNo),
            ])
            guard let stored = try results[checks.count + 1].first(OrderRecord.init(row:)) else { throw .unexpectedRow }
            if results[checks.count].rowCount == 1 {
                if !checks.isEmpty, try !Self.saleAgrees(terms, productID: order.productID, results[1]) { throw .termsChanged }
                return (.created(stored), nil)
            }
            return (stored.parametersDigest == order.parametersDigest ? .existing(stored) : .conflict(stored), nil)
        }
    }

    /// The statements that read what `ProductTerms.saleAgrees` needs, under the lock described in
    /// `create` (none when nothing is checked).
    static func saleCheck(_ terms: SaleTerms, productID: String?) -> [PGQuery] {
        guard let keys = ProductTerms.saleKeys(terms, productID) else { return [] }
        return [
            PGQuery("LOCK TABLE bindings IN ROW EXCLUSIVE MODE"),
            terms.readsNames
                ? PGQuery("""
                    SELECT key, value FROM bindings
                     WHERE key IN ($1, $2, $3) OR substr(key, 1, 8) = 'product:' OR substr(key, 1, 5) = $4
                    """, keys[0], keys[1], keys[2], ProductTerms.namePrefix)
                : PGQuery("SELECT key, value FROM bindings WHERE key IN ($1, $2, $3)", keys[0], keys[1], keys[2]),
        ]
    }

    /// `ProductTerms.saleAgrees` on what `saleCheck`'s SELECT answered.
    static func saleAgrees(_ terms: SaleTerms, productID: String?, _ result: PGResult) throws(StorageError) -> Bool {
        let rows = try result.rows { row throws(StorageError) in (key: try row.text(0), value: try row.text(1)) }
        return ProductTerms.saleAgrees(terms, productID ?? "", rows: rows)
    }

    public func order(_ outTradeNo: String) async throws(StorageError) -> OrderRecord? {
        try await read(Self.selectOrder(outTradeNo)) { result throws(StorageError) in try result.first(OrderRecord.init(row:)) }
    }

    public func orders(transactionID: String) async throws(StorageError) -> [OrderRecord] {
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + OrderRecord.columns
                    + #" FROM orders WHERE transaction_id = $1 ORDER BY created_at, out_trade_no COLLATE "C""#,
                transactionID)).rows(OrderRecord.init(row:))
        }
    }

    public func orders(userID: String, limit: Int, after: OrderPageKey?) async throws(StorageError) -> OrderPage {
        guard limit > 0 else { return OrderPage(orders: [], next: nil) }
        // One row more than asked says whether there is a next page. The keyset comparison runs on
        // the (user_id, created_at) index; out_trade_no (bytewise, as SQLite compares) breaks ties.
        let rows = try await read { db throws(StorageError) in
            if let after {
                try db.run(PGQuery(
                    "SELECT " + OrderRecord.columns + """
                         FROM orders WHERE user_id = $1
                            AND (created_at < $2 OR (created_at = $2 AND out_trade_no COLLATE "C" < $3))
                        ORDER BY created_at DESC, out_trade_no COLLATE "C" DESC LIMIT $4
                        """,
                    userID, after.createdAt, after.outTradeNo, limit + 1)).rows(OrderRecord.init(row:))
            } else {
                try db.run(PGQuery(
                    "SELECT " + OrderRecord.columns + """
                         FROM orders WHERE user_id = $1 ORDER BY created_at DESC, out_trade_no COLLATE "C" DESC LIMIT $2
                        """,
                    userID, limit + 1)).rows(OrderRecord.init(row:))
            }
        }
        return OrderPage(rows: rows, limit: limit)
    }

    public func setPrepay(_ outTradeNo: String, prepay: StoredPrepay, issuedAt: Date, event: NewOrderEvent?)
        async throws(StorageError) -> OrderRecord?
    {
        try StoreText.validate(outTradeNo, prepay.prepayID, prepay.codeURL, prepay.mwebURL)
        try event.validate()
        return try await write(key: Self.orderKey(outTradeNo)) { db throws(StorageError) in
            let updated = try db.run(PGQuery(
                """
                WITH updated AS (
                    UPDATE orders SET prepay_id = $1, prepay_issued_at = $2, updated_at = GREATEST(updated_at, $2),
                        code_url = $7, mweb_url = $8
                    WHERE out_trade_no = $3 RETURNING
                """ + " " + OrderRecord.columns + """
                ), event AS (
                    INSERT INTO order_events (out_trade_no, at, kind, detail)
                    SELECT out_trade_no, $4, $5, $6 FROM updated WHERE $5 IS NOT NULL)
                SELECT
                """ + " " + OrderRecord.columns + " FROM updated",
                prepay.prepayID, issuedAt, outTradeNo, event?.at, event?.kind, event?.detail, prepay.codeURL,
                prepay.mwebURL)).first(OrderRecord.init(row:))
            // Announced: another instance's identical create may be waiting for this prepay_id.
            return (updated, updated == nil ? nil : outTradeNo)
        }
    }

    public func touch(_ outTradeNo: String, _ timestamp: OrderTimestamp, at: Date) async throws(StorageError) -> Bool {
        try await write(key: Self.orderKey(outTradeNo)) { db throws(StorageError) in
            (try db.run(Self.touchQuery(outTradeNo, timestamp, at: at)).rowCount == 1, nil)
        }
    }

    public func addFlags(_ outTradeNo: String, _ flags: Set<OrderFlag>, at: Date) async throws(StorageError)
        -> OrderRecord?
    {
        try await write(key: Self.orderKey(outTradeNo)) { db throws(StorageError) in
            guard let order = try db.run(Self.lockOrder(outTradeNo)).first(OrderRecord.init(row:)) else { return (nil, nil) }
            guard let added = order.flags(adding: flags) else { return (order, nil) }
            return (try Self.setFlags(added, of: outTradeNo, at: at, on: db), nil)
        }
    }

    public func transition(_ transition: OrderTransition) async throws(StorageError) -> TransitionResult {
        try transition.validate()
        let outTradeNo = transition.outTradeNo
        // When the caller read the order and the door would change it as read, the change is
        // tried as one statement that applies only while the order still stands so: most payments
        // settle in one round trip shared by the whole batch, without reading under the lock first.
        let statement = transition.lastRead.flatMap { read -> OneStatement<TransitionResult>? in
            // A second outbox row (`followUp`) is not part of the one statement: such a change
            // takes the locked path below.
            guard read.outTradeNo == outTradeNo, transition.followUp == nil, transition.changes(read) else { return nil }
            var statement = OneStatement<TransitionResult>(query: Self.change(transition, from: read, onlyIfStillSo: true)) {
                result throws(StorageError) in
                guard let changed = try result.first(OrderRecord.init(row:)) else { return nil }
                return (.changed(changed), outTradeNo)
            }
            statement.merge = OneStatement.Merge(
                kind: "transition", row: Self.changeRow(transition, from: read), many: Self.changeMany
            ) { row throws(StorageError) in
                guard let row else { return nil }
                return (.changed(try OrderRecord(row: row)), outTradeNo)
            }
            return statement
        }
        return try await write(key: Self.orderKey(outTradeNo), statement: statement) { db throws(StorageError) in
            let result = try Self.transition(transition, on: db)
            return (result, result.didChange ? outTradeNo : nil)
        }
    }

    /// The door, inside the caller's transaction: `transition(_:)` and `creditAppleTransaction`
    /// both change an order's state only through here.
    static func transition(_ transition: OrderTransition, on db: PGConnection) throws(StorageError) -> TransitionResult {
        // Locked until COMMIT: the decision below is made on the state the UPDATE will see,
        // whichever instance is trying the same door at the same moment.
        guard let current = try db.run(lockOrder(transition.outTradeNo)).first(OrderRecord.init(row:)) else {
            return .notFound
        }
        guard transition.changes(current) else {
            guard transition.writesReceipt(unchangedIn: current.state), let receipt = transition.receiptEvent(changed: false)
            else { return .unchanged(current) }
            var queries = [insertEvent(receipt, of: transition.outTradeNo)]
            if let timestamp = transition.receipt?.touching {
                queries.append(touchQuery(transition.outTradeNo, timestamp, at: transition.at))
            }
            let results = try db.run(queries)
            let touched = try results.count > 1 ? results[1].first(OrderRecord.init(row:)) : nil
            return .unchanged(touched ?? current)
        }
        let changed = try db.run(change(transition, from: current)).first(OrderRecord.init(row:))
        // Under the lock the conditional UPDATE cannot disagree with the decision; if it ever
        // did, failing is right: nothing was written, and the caller may try again.
        guard let changed else { throw .unexpectedRow }
        if let followUp = transition.followUp { _ = try db.run(insertOutbox(followUp)) }
        return .changed(changed)
    }

    public func appendEvent(_ outTradeNo: String, _ event: NewOrderEvent) async throws(StorageError) -> OrderEvent? {
        try StoreText.validate(outTradeNo)
        try event.validate()
        return try await write(key: Self.orderKey(outTradeNo)) { db throws(StorageError) in
            let appended = try db.run(PGQuery(
                """
                INSERT INTO order_events (out_trade_no, at, kind, detail)
                SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM orders WHERE out_trade_no = $1)
                RETURNING
                """ + " " + OrderEvent.columns,
                outTradeNo, event.at, event.kind, event.detail)).first(OrderEvent.init(row:))
            return (appended, nil)
        }
    }

    public func appendEvent(_ outTradeNo: String, _ event: NewOrderEvent, quietSince: Date, matching: QuietLineMatch)
        async throws(StorageError) -> OrderEvent?
    {
        let anyDetail: Int64 = matching == .kind ? 1 : 0
        try StoreText.validate(outTradeNo)
        try event.validate()
        return try await write(key: Self.orderKey(outTradeNo)) { db throws(StorageError) in
            // The order's row lock first: a racing caller waits here, then sees this line.
            guard try db.run(Self.lockOrder(outTradeNo)).first(OrderRecord.init(row:)) != nil else { return (nil, nil) }
            let appended = try db.run(PGQuery(
                """
                INSERT INTO order_events (out_trade_no, at, kind, detail)
                SELECT $1, $2, $3, $4
                WHERE NOT EXISTS (SELECT 1 FROM order_events WHERE out_trade_no = $1 AND kind = $3 AND at > $5
                                  AND ($6::bigint = 1 OR detail = $4))
                RETURNING
                """ + " " + OrderEvent.columns,
                outTradeNo, event.at, event.kind, event.detail, quietSince, anyDetail)).first(OrderEvent.init(row:))
            return (appended, nil)
        }
    }

    public func events(_ outTradeNo: String) async throws(StorageError) -> [OrderEvent] {
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + OrderEvent.columns + " FROM order_events WHERE out_trade_no = $1 ORDER BY id",
                outTradeNo)).rows(OrderEvent.init(row:))
        }
    }

    // MARK: Statements shared by operations (run inside the caller's transaction)

    static func selectOrder(_ outTradeNo: String) -> PGQuery {
        PGQuery("SELECT " + OrderRecord.columns + " FROM orders WHERE out_trade_no = $1", outTradeNo)
    }

    /// The order's row, locked until the transaction ends. NO KEY: the events and outbox rows
    /// that reference the order (KEY SHARE locks of their foreign keys) can still be inserted.
    static func lockOrder(_ outTradeNo: String) -> PGQuery {
        PGQuery("SELECT " + OrderRecord.columns + " FROM orders WHERE out_trade_no = $1 FOR NO KEY UPDATE", outTradeNo)
    }

    /// Sets a bookkeeping time (never backwards) and returns the order, or no row if unknown.
    static func touchQuery(_ outTradeNo: String, _ timestamp: OrderTimestamp, at: Date) -> PGQuery {
        let set: SQL =
            switch timestamp {
            case .lastNotify: "UPDATE orders SET last_notify_at = GREATEST(COALESCE(last_notify_at, $1), $1), "
            case .lastQueried: "UPDATE orders SET last_queried_at = GREATEST(COALESCE(last_queried_at, $1), $1), "
            }
        return PGQuery(
            set + "updated_at = GREATEST(updated_at, $1) WHERE out_trade_no = $2 RETURNING " + OrderRecord.columns,
            at, outTradeNo)
    }

    /// The door itself: the conditional UPDATE, and — only if it changed the row, in the same
    /// statement — the `state_changed` event, the receipt's event after it, and the outbox row.
    ///
    /// `onlyIfStillSo`: `current` was read without the lock, so the UPDATE also requires the
    /// state and flags it was decided on; it changes nothing (and returns no row) otherwise.
    static func change(_ transition: OrderTransition, from current: OrderRecord, onlyIfStillSo: Bool = false) -> PGQuery {
        let stillSo: SQL = onlyIfStillSo ? " AND state = $27 AND flags = $28 " : " "
        return PGQuery(
            """
            WITH changed AS (
                UPDATE orders SET state = $2, transaction_id = COALESCE($3, transaction_id),
                    paid_at = COALESCE($4, paid_at), updated_at = $5, flags = COALESCE($6, flags),
                    last_notify_at = CASE WHEN $7 = 1 THEN GREATEST(COALESCE(last_notify_at, $5), $5)
                        ELSE last_notify_at END,
                    last_queried_at = CASE WHEN $7 = 2 THEN GREATEST(COALESCE(last_queried_at, $5), $5)
                        ELSE last_queried_at END,
                    apple_transaction_id = COALESCE(apple_transaction_id, $23),
                    original_transaction_id = COALESCE(original_transaction_id, $24),
                    environment = COALESCE(environment, $25),
                    apple_quantity = COALESCE(apple_quantity, $26::integer)
                WHERE out_trade_no = $1 AND state = ANY($8) AND ($9::bigint IS NULL OR amount = $9)
            """ + stillSo + "RETURNING " + OrderRecord.columns + """
            ), events AS (
                INSERT INTO order_events (out_trade_no, at, kind, detail)
                SELECT changed.out_trade_no, $5, e.kind, e.detail
                FROM changed, (VALUES (1, $10::text, $11::text), (2, $12::text, $13::text)) AS e (n, kind, detail)
                WHERE e.kind IS NOT NULL ORDER BY e.n
            ), outbox AS (
                INSERT INTO outbox (
            """ + " " + OutboxEvent.columns + """
                ) SELECT $14, out_trade_no, $15, $16, $17, $18, $19, $20, $21, $22 FROM changed WHERE $14 IS NOT NULL
                ON CONFLICT (id) DO NOTHING
            )
            SELECT
            """ + " " + OrderRecord.columns + " FROM changed",
            parameters: changeParameters(transition, from: current, onlyIfStillSo: onlyIfStillSo))
    }

    /// One input row of `changeMany`: `change`'s parameters with `onlyIfStillSo`, the source states
    /// joined by commas (a row holds no array).
    static func changeRow(_ transition: OrderTransition, from current: OrderRecord) -> [PGValue] {
        var row = changeParameters(transition, from: current, onlyIfStillSo: true)
        row[7] = transition.sourceStates.map(\.rawValue).sorted().joined(separator: ",").pgValue
        return row
    }

    /// The types of `changeRow`'s columns, as `changeMany` casts them.
    static let changeColumnTypes: [PGType] = [
        .text, .text, .text, .timestamptz, .timestamptz, .text, .int8, .text, .int8, .text, .text, .text, .text,
        .text, .text, .text, .timestamptz, .int8, .timestamptz, .timestamptz, .timestamptz, .text,
        .text, .text, .text, .int8, .text, .text,
    ]

    /// `change` with `onlyIfStillSo` for several orders in one statement: one array parameter per
    /// column of `changeRow`. Each returned row ends with the position of its input row; an order
    /// named twice is changed by one of its rows (the other then did not apply).
    static func changeMany(_ rows: [[PGValue]]) -> PGQuery {
        let parameters = changeColumnTypes.enumerated().map { column, type in
            PGValue.array(of: type, rows.map { $0[column] })
        }
        return PGQuery(
            """
            WITH input AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[],
                    $6::text[], $7::bigint[], $8::text[], $9::bigint[], $10::text[], $11::text[], $12::text[],
                    $13::text[], $14::text[], $15::text[], $16::text[], $17::timestamptz[], $18::bigint[],
                    $19::timestamptz[], $20::timestamptz[], $21::timestamptz[], $22::text[], $23::text[],
                    $24::text[], $25::text[], $26::bigint[], $27::text[], $28::text[])
                WITH ORDINALITY AS i (in_out_trade_no, in_state, in_transaction_id, in_paid_at, in_at, in_flags,
                    in_touch, in_sources, in_amount, in_kind_1, in_detail_1, in_kind_2, in_detail_2, in_outbox_id,
                    in_outbox_type, in_outbox_payload, in_outbox_created_at, in_outbox_attempts,
                    in_outbox_next_attempt_at, in_outbox_delivered_at, in_outbox_dead_at, in_outbox_last_error,
                    in_apple_transaction_id, in_original_transaction_id, in_environment, in_apple_quantity,
                    in_was_state, in_was_flags, in_n)
            ), changed AS (
                UPDATE orders SET state = in_state, transaction_id = COALESCE(in_transaction_id, transaction_id),
                    paid_at = COALESCE(in_paid_at, paid_at), updated_at = in_at, flags = COALESCE(in_flags, flags),
                    last_notify_at = CASE WHEN in_touch = 1 THEN GREATEST(COALESCE(last_notify_at, in_at), in_at)
                        ELSE last_notify_at END,
                    last_queried_at = CASE WHEN in_touch = 2 THEN GREATEST(COALESCE(last_queried_at, in_at), in_at)
                        ELSE last_queried_at END,
                    apple_transaction_id = COALESCE(apple_transaction_id, in_apple_transaction_id),
                    original_transaction_id = COALESCE(original_transaction_id, in_original_transaction_id),
                    environment = COALESCE(environment, in_environment),
                    apple_quantity = COALESCE(apple_quantity, in_apple_quantity::integer)
                FROM input
                WHERE out_trade_no = in_out_trade_no AND state = ANY(string_to_array(in_sources, ','))
                    AND (in_amount IS NULL OR amount = in_amount) AND state = in_was_state AND flags = in_was_flags
                RETURNING
            """ + " " + OrderRecord.columns + """
                    , in_n, in_at, in_kind_1, in_detail_1, in_kind_2, in_detail_2, in_outbox_id, in_outbox_type,
                    in_outbox_payload, in_outbox_created_at, in_outbox_attempts, in_outbox_next_attempt_at,
                    in_outbox_delivered_at, in_outbox_dead_at, in_outbox_last_error
            ), events AS (
                INSERT INTO order_events (out_trade_no, at, kind, detail)
                SELECT changed.out_trade_no, in_at, e.kind, e.detail
                FROM changed, LATERAL (VALUES (1, in_kind_1, in_detail_1), (2, in_kind_2, in_detail_2)) AS e (m, kind, detail)
                WHERE e.kind IS NOT NULL ORDER BY in_n, e.m
            ), outbox AS (
                INSERT INTO outbox (
            """ + " " + OutboxEvent.columns + """
                ) SELECT in_outbox_id, out_trade_no, in_outbox_type, in_outbox_payload, in_outbox_created_at,
                    in_outbox_attempts, in_outbox_next_attempt_at, in_outbox_delivered_at, in_outbox_dead_at,
                    in_outbox_last_error
                FROM changed WHERE in_outbox_id IS NOT NULL ORDER BY in_n
                ON CONFLICT (id) DO NOTHING
            )
            SELECT
            """ + " " + OrderRecord.columns + ", in_n FROM changed",
            parameters: parameters)
    }

    /// `change`'s parameters, $1 to $26 (and $27, $28 with `onlyIfStillSo`).
    private static func changeParameters(_ transition: OrderTransition, from current: OrderRecord, onlyIfStillSo: Bool)
        -> [PGValue]
    {
        let events = [transition.stateChangedEvent(from: current.state)] + [transition.receiptEvent(changed: true)].compactMap { $0 }
        let touch =
            switch transition.receipt?.touching {
            case .lastNotify: 1
            case .lastQueried: 2
            case nil: 0
            }
        let flags = transition.flags(after: current.flags).map(OrderRecord.encodeFlags)
        let outbox = transition.outbox
        var parameters: [PGValue] = [
            transition.outTradeNo.pgValue, transition.to.rawValue.pgValue, transition.transactionID.pgValue,
            transition.paidAt.pgValue, transition.at.pgValue, flags.pgValue, touch.pgValue,
            transition.sourceStates.pgValue, transition.expectedAmount.pgValue,
            events[0].kind.pgValue, events[0].detail.pgValue,
            (events.count > 1 ? events[1].kind : nil).pgValue, (events.count > 1 ? events[1].detail : nil).pgValue,
            outbox?.id.pgValue ?? .null(.text), outbox?.type.pgValue ?? .null(.text),
            outbox?.payload.pgValue ?? .null(.text), outbox?.createdAt.pgValue ?? .null(.timestamptz),
            (outbox?.attempts ?? 0).pgValue, outbox?.nextAttemptAt.pgValue ?? .null(.timestamptz),
            outbox?.deliveredAt.pgValue ?? .null(.timestamptz), outbox?.deadAt.pgValue ?? .null(.timestamptz),
            outbox?.lastError.pgValue ?? .null(.text),
            transition.apple?.transactionID.pgValue ?? .null(.text),
            transition.apple?.originalTransactionID.pgValue ?? .null(.text),
            transition.apple?.environment.pgValue ?? .null(.text),
            transition.apple?.quantity.pgValue ?? .null(.int8),
        ]
        if onlyIfStillSo {
            parameters += [current.state.rawValue.pgValue, OrderRecord.encodeFlags(current.flags).pgValue]
        }
        return parameters
    }

    /// Appends an event of an order this transaction has locked (no existence check).
    static func insertEvent(_ event: NewOrderEvent, of outTradeNo: String) -> PGQuery {
        PGQuery(
            "INSERT INTO order_events (out_trade_no, at, kind, detail) VALUES ($1, $2, $3, $4)",
            outTradeNo, event.at, event.kind, event.detail)
    }

    /// Inserts an outbox event (its order is locked by the caller's transaction). One whose id is
    /// on record already is the same event written again (`OutboxEvent.id`): kept as it is.
    static func insertOutbox(_ event: OutboxEvent) -> PGQuery {
        PGQuery(
            "INSERT INTO outbox (" + OutboxEvent.columns + ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
                + " ON CONFLICT (id) DO NOTHING",
            event.id, event.outTradeNo, event.type, event.payload, event.createdAt, event.attempts, event.nextAttemptAt,
            event.deliveredAt, event.deadAt, event.lastError)
    }

    /// Replaces the flags and returns the updated order.
    static func setFlags(_ flags: Set<OrderFlag>, of outTradeNo: String, at: Date, on db: PGConnection)
        throws(StorageError) -> OrderRecord
    {
        guard
            let updated = try db.run(PGQuery(
                "UPDATE orders SET flags = $1, updated_at = GREATEST(updated_at, $2) WHERE out_trade_no = $3 RETURNING "
                    + OrderRecord.columns,
                OrderRecord.encodeFlags(flags), at, outTradeNo)).first(OrderRecord.init(row:))
        else { throw .unexpectedRow }
        return updated
    }

    /// The parameters of an INSERT of `OrderRecord.columns`, in that order.
    static func orderParameters(_ order: OrderRecord) -> [PGValue] {
        [
            order.outTradeNo.pgValue, order.amount.pgValue, order.description.pgValue, order.clientIP.pgValue,
            order.attach.pgValue, order.userID.pgValue, order.productID.pgValue, order.signType.pgValue,
            order.timeExpire.pgValue, order.expiresAt.pgValue, order.createdAt.pgValue, order.state.rawValue.pgValue,
            order.transactionID.pgValue, order.paidAt.pgValue, order.prepayID.pgValue, order.prepayIssuedAt.pgValue,
            order.parametersDigest.pgValue, order.lastNotifyAt.pgValue, order.lastQueriedAt.pgValue,
            OrderRecord.encodeFlags(order.flags).pgValue, order.updatedAt.pgValue, order.channel.rawValue.pgValue,
            order.appleProductID.pgValue, order.appAccountToken.pgValue, order.environment.pgValue,
            order.appleTransactionID.pgValue, order.originalTransactionID.pgValue, order.currency.pgValue,
            order.apiVersion.pgValue, order.app.pgValue, order.appID.pgValue, order.tradeType.pgValue,
            order.openID.pgValue, order.codeURL.pgValue, order.mwebURL.pgValue,
        ]
    }
}
