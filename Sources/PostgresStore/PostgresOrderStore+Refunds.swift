// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

/// Refunds on PostgreSQL. The writes that touch a refund and its order (create, the door) run in a
/// transaction of their own, not in a group-commit batch, and lock the order's row first: every
/// such write of every instance takes the order, then the refund, so they queue per order and
/// never deadlock, and the sum a create checks is the sum its insert joins.
extension PostgresOrderStore: RefundStore {
    /// Migration 2. The triggers hold C7 in the database itself, as SQLite's do: no insert may take
    /// an order's open refunds past its amount (the trigger takes the order's lock itself, so even
    /// concurrent inserts from elsewhere are decided one after the other), a finished refund never
    /// changes state again, and what was sent to WeChat never changes.
    static let refundsSchema: [SQL] = [
        """
        CREATE TABLE refunds (
            out_refund_no text PRIMARY KEY,
            out_trade_no text NOT NULL REFERENCES orders (out_trade_no),
            amount bigint NOT NULL CHECK (amount > 0),
            total_fee bigint NOT NULL CHECK (total_fee > 0),
            reason text NOT NULL,
            notify_url text,
            parameters_digest text NOT NULL,
            state text NOT NULL CHECK (state IN ('PROCESSING', 'SUCCESS', 'CHANGE', 'REFUNDCLOSE')),
            refund_id text,
            failure_reason text,
            created_at timestamptz NOT NULL,
            accepted_at timestamptz,
            succeeded_at timestamptz,
            updated_at timestamptz NOT NULL,
            last_queried_at timestamptz,
            last_notify_at timestamptz,
            claimed_by text,
            claimed_until timestamptz
        )
        """,
        "CREATE INDEX refunds_by_order ON refunds (out_trade_no, created_at)",
        "CREATE INDEX refunds_processing ON refunds (created_at) WHERE state = 'PROCESSING'",
        "CREATE INDEX refunds_by_created_at ON refunds (created_at)",
        """
        CREATE FUNCTION wxpay_refunds_within_paid_amount() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            paid bigint;
            reserved bigint;
        BEGIN
            SELECT amount INTO paid FROM orders WHERE out_trade_no = NEW.out_trade_no FOR NO KEY UPDATE;
            SELECT COALESCE(SUM(amount), 0) INTO reserved FROM refunds
                WHERE out_trade_no = NEW.out_trade_no AND state <> 'REFUNDCLOSE';
            IF NEW.amount + reserved > paid THEN
                RAISE EXCEPTION 'refunds would exceed the amount paid' USING ERRCODE = 'check_violation';
            END IF;
            RETURN NEW;
        END $$
        """,
        """
        CREATE TRIGGER refunds_within_paid_amount BEFORE INSERT ON refunds
            FOR EACH ROW EXECUTE FUNCTION wxpay_refunds_within_paid_amount()
        """,
        """
        CREATE FUNCTION wxpay_refunds_stay_as_sent() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF OLD.state IN ('SUCCESS', 'REFUNDCLOSE') AND NEW.state <> OLD.state THEN
                RAISE EXCEPTION 'a finished refund cannot change state' USING ERRCODE = 'check_violation';
            END IF;
            IF (NEW.out_trade_no, NEW.amount, NEW.total_fee, NEW.reason, NEW.notify_url, NEW.parameters_digest)
                IS DISTINCT FROM
               (OLD.out_trade_no, OLD.amount, OLD.total_fee, OLD.reason, OLD.notify_url, OLD.parameters_digest) THEN
                RAISE EXCEPTION 'a refund''s parameters never change' USING ERRCODE = 'check_violation';
            END IF;
            RETURN NEW;
        END $$
        """,
        """
        CREATE TRIGGER refunds_stay_as_sent BEFORE UPDATE ON refunds
            FOR EACH ROW EXECUTE FUNCTION wxpay_refunds_stay_as_sent()
        """,
        // The integrity check covers the new table.
        PostgresMigrations.amcheckFunction(relations: ["orders", "order_events", "outbox", "refunds"]),
    ]

    public func createRefund(_ refund: NewRefund, maximumPerOrder: Int, event: NewOrderEvent) async throws(StorageError)
        -> RefundCreateResult
    {
        try refund.validate()
        try event.validate()
        return try await transaction { db throws(StorageError) in
            // The order's lock first: concurrent requests for one order are decided one after the
            // other, on every instance, and each sees the refunds the previous one committed.
            let read = try db.run([
                PGQuery("SELECT state, amount FROM orders WHERE out_trade_no = $1 FOR NO KEY UPDATE", refund.outTradeNo),
                Self.selectRefund(refund.outRefundNo),
                PGQuery("""
                    SELECT COUNT(*), COALESCE(SUM(CASE WHEN state <> 'REFUNDCLOSE' THEN amount ELSE 0 END), 0)::bigint
                    FROM refunds WHERE out_trade_no = $1
                    """, refund.outTradeNo),
            ])
            guard let order = try read[0].first({ row throws(StorageError) in (try row.text(0), try row.int(1)) }) else {
                return (.orderNotFound, nil)
            }
            guard let state = OrderState(rawValue: order.0),
                let taken = try read[2].first({ row throws(StorageError) in (try row.int(0), try row.int(1)) })
            else { throw .unexpectedRow }
            if let answer = refund.decision(
                orderState: state, orderAmount: order.1, existing: try read[1].first(RefundRecord.init(row:)),
                refundCount: taken.0, reserved: taken.1, maximumPerOrder: maximumPerOrder)
            {
                return (answer, nil)
            }
            let created = try db.run([
                PGQuery(
                    "INSERT INTO refunds (" + RefundRecord.insertColumns + """
                        ) VALUES ($1, $2, $3, $4, $5, $6, $7, 'PROCESSING', $8, $8) RETURNING
                        """ + " " + RefundRecord.columns,
                    refund.outRefundNo, refund.outTradeNo, refund.amount, order.1, refund.reason, refund.notifyURL,
                    refund.parametersDigest, refund.createdAt),
                Self.insertEvent(event, of: refund.outTradeNo),
            ])[0].first(RefundRecord.init(row:))
            guard let created else { throw .unexpectedRow }
            return (.created(created), nil)
        }
    }

    public func refund(_ outRefundNo: String) async throws(StorageError) -> RefundRecord? {
        try await read { db throws(StorageError) in try db.run(Self.selectRefund(outRefundNo)).first(RefundRecord.init(row:)) }
    }

    public func refunds(outTradeNo: String) async throws(StorageError) -> [RefundRecord] {
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + RefundRecord.columns
                    + #" FROM refunds WHERE out_trade_no = $1 ORDER BY created_at, out_refund_no COLLATE "C""#,
                outTradeNo)).rows(RefundRecord.init(row:))
        }
    }

    public func recordRefundAccepted(_ outRefundNo: String, refundID: String, at: Date, event: NewOrderEvent?)
        async throws(StorageError) -> RefundRecord?
    {
        try StoreText.validate(outRefundNo, refundID)
        try event.validate()
        return try await write(key: Self.refundKey(outRefundNo)) { db throws(StorageError) in
            guard let before = try db.run(Self.selectRefund(outRefundNo, locking: true)).first(RefundRecord.init(row:)) else {
                return (nil, nil)
            }
            guard before.refundID == nil || before.acceptedAt == nil else { return (before, nil) }
            var queries = [PGQuery(
                """
                UPDATE refunds SET refund_id = COALESCE(refund_id, $1), accepted_at = COALESCE(accepted_at, $2),
                    updated_at = GREATEST(updated_at, $2)
                WHERE out_refund_no = $3 RETURNING
                """ + " " + RefundRecord.columns, refundID, at, outRefundNo)]
            if let event, before.acceptedAt == nil { queries.append(Self.insertEvent(event, of: before.outTradeNo)) }
            return (try db.run(queries)[0].first(RefundRecord.init(row:)), nil)
        }
    }

    public func touchRefund(_ outRefundNo: String, queriedAt: Date) async throws(StorageError) -> Bool {
        try await write(key: Self.refundKey(outRefundNo)) { db throws(StorageError) in
            (try db.run(PGQuery(
                """
                UPDATE refunds SET last_queried_at = GREATEST(COALESCE(last_queried_at, $1), $1),
                    updated_at = GREATEST(updated_at, $1)
                WHERE out_refund_no = $2
                """, queriedAt, outRefundNo)).affectedRows == 1, nil)
        }
    }

    public func transitionRefund(_ transition: RefundTransition) async throws(StorageError) -> RefundTransitionResult {
        try transition.validate()
        return try await transaction { db throws(StorageError) in
            // Which order, then its lock, then the refund's: the order every refund write takes.
            guard let outTradeNo = try db.run(PGQuery("SELECT out_trade_no FROM refunds WHERE out_refund_no = $1",
                                                      transition.outRefundNo)).first({ row throws(StorageError) in try row.text(0) })
            else { return (.notFound, nil) }
            let locked = try db.run([Self.lockOrder(outTradeNo), Self.selectRefund(transition.outRefundNo, locking: true)])
            guard let order = try locked[0].first(OrderRecord.init(row:)),
                let before = try locked[1].first(RefundRecord.init(row:))
            else { throw .unexpectedRow }
            if transition.mismatches(before) { return (.mismatch(before), nil) }
            // The door itself: a conditional UPDATE, as in every store.
            guard
                let after = try db.run(PGQuery(
                    """
                    UPDATE refunds SET state = $1, refund_id = COALESCE(refund_id, $2),
                        succeeded_at = CASE WHEN $1 = 'SUCCESS' THEN COALESCE($3, succeeded_at, $5) ELSE succeeded_at END,
                        failure_reason = COALESCE($4, failure_reason), updated_at = $5,
                        last_notify_at = CASE WHEN $8 THEN GREATEST(COALESCE(last_notify_at, $5), $5) ELSE last_notify_at END
                    WHERE out_refund_no = $6 AND state = ANY($7)
                    RETURNING
                    """ + " " + RefundRecord.columns,
                    transition.to.rawValue, transition.refundID, transition.succeededAt, transition.failureReason,
                    transition.at, transition.outRefundNo, transition.sourceStates.map(\.rawValue).sorted(),
                    transition.touchesNotify)).first(RefundRecord.init(row:))
            else { return (.unchanged(before), nil) }
            var queries = [Self.insertEvent(transition.stateChangedEvent(from: before.state, to: after), of: outTradeNo)]
            var orderChanged = false
            if after.state == .success && order.state == .success {
                // WeChat's trade_state word: an order with a successful refund is REFUND.
                queries.append(PGQuery(
                    "UPDATE orders SET state = 'REFUND', updated_at = GREATEST(updated_at, $1) WHERE out_trade_no = $2",
                    transition.at, outTradeNo))
                queries.append(Self.insertEvent(transition.orderRefundedEvent(after), of: outTradeNo))
                orderChanged = true
            }
            if let outbox = try transition.outboxEvent(for: after) { queries.append(Self.insertOutbox(outbox)) }
            _ = try db.run(queries)
            if transition.affectsAttention(before: before.state, after: after.state) {
                try Self.updateAttentionFlag(outTradeNo, at: transition.at, on: db)
            }
            guard let current = try db.run(Self.selectOrder(outTradeNo)).first(OrderRecord.init(row:)) else {
                throw .unexpectedRow
            }
            if let followUp = try transition.followUpEvent(for: after, order: current) {
                _ = try db.run(Self.insertOutbox(followUp))
            }
            return (.changed(after, order: current), orderChanged ? outTradeNo : nil)
        }
    }

    public func claimProcessingRefunds(
        createdAtOrBefore cutoff: Date, now: Date, minimumGap: TimeInterval, limit: Int, claimant: String,
        leaseUntil: Date
    ) async throws(StorageError) -> [RefundRecord] {
        guard limit > 0 else { return [] }
        let gap = RefundRecord.queryGapMilliseconds(minimumGap)
        let claimed = try await exclusive { db throws(StorageError) in
            try db.run(PGQuery(
                """
                WITH due AS MATERIALIZED (
                    SELECT out_refund_no AS due_key FROM refunds
                    WHERE state = 'PROCESSING' AND created_at <= $3
                        AND (claimed_until IS NULL OR claimed_until <= $4)
                        AND (last_queried_at IS NULL OR last_queried_at
                             + LEAST(interval '1 hour', GREATEST($6 * interval '1 millisecond',
                                                                 (last_queried_at - created_at) / 2)) <= $4)
                    ORDER BY COALESCE(last_queried_at, created_at), created_at, out_refund_no COLLATE "C"
                    LIMIT $5
                    FOR UPDATE SKIP LOCKED)
                UPDATE refunds SET claimed_by = $1, claimed_until = $2 FROM due WHERE out_refund_no = due.due_key
                RETURNING
                """ + " " + RefundRecord.columns,
                claimant, leaseUntil, cutoff, now, limit, gap)).rows(RefundRecord.init(row:))
        }
        return claimed.inClaimOrder()
    }

    public func releaseRefundClaim(_ outRefundNo: String, claimant: String) async throws(StorageError) -> Bool {
        try await write(key: Self.refundKey(outRefundNo)) { db throws(StorageError) in
            (try db.run(PGQuery(
                "UPDATE refunds SET claimed_by = NULL, claimed_until = NULL WHERE out_refund_no = $1 AND claimed_by = $2",
                outRefundNo, claimant)).affectedRows == 1, nil)
        }
    }

    public func refunds(createdFrom from: Date, to: Date) async throws(StorageError) -> [RefundRecord] {
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + RefundRecord.columns + """
                     FROM refunds WHERE created_at >= $1 AND created_at < $2 ORDER BY created_at, out_refund_no COLLATE "C"
                    """,
                from, to)).rows(RefundRecord.init(row:))
        }
    }

    // MARK: Statements shared by the operations above

    static func refundKey(_ outRefundNo: String) -> String { "r:" + outRefundNo }

    static func selectRefund(_ outRefundNo: String, locking: Bool = false) -> PGQuery {
        locking
            ? PGQuery("SELECT " + RefundRecord.columns + " FROM refunds WHERE out_refund_no = $1 FOR UPDATE", outRefundNo)
            : PGQuery("SELECT " + RefundRecord.columns + " FROM refunds WHERE out_refund_no = $1", outRefundNo)
    }

    /// `refund_needs_attention` exactly while one of the order's refunds is CHANGE.
    private static func updateAttentionFlag(_ outTradeNo: String, at: Date, on db: PGConnection) throws(StorageError) {
        guard
            let current = try db.run(PGQuery(
                """
                SELECT flags, EXISTS (SELECT 1 FROM refunds WHERE out_trade_no = $1 AND state = 'CHANGE')
                FROM orders WHERE out_trade_no = $1
                """, outTradeNo)).first({ row throws(StorageError) in (try row.text(0), try row.bool(1)) })
        else { throw .unexpectedRow }
        guard let flags = OrderRecord.flags(try OrderRecord.decodeFlags(current.0), refundAttention: current.1) else { return }
        _ = try setFlags(flags, of: outTradeNo, at: at, on: db)
    }
}
