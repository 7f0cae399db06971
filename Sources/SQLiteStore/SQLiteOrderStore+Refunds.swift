// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore: RefundStore {
    /// Migration 3. The triggers hold C7 in the database itself, whatever code runs against it: no
    /// insert may take an order's open refunds past its amount, a finished refund never changes
    /// state again, and what was sent to WeChat (order, amounts, reason, notify_url) never changes.
    static let refundsSchema: SQL = """
        CREATE TABLE refunds (
            out_refund_no TEXT PRIMARY KEY NOT NULL,
            out_trade_no TEXT NOT NULL REFERENCES orders (out_trade_no),
            amount INTEGER NOT NULL CHECK (amount > 0),
            total_fee INTEGER NOT NULL CHECK (total_fee > 0),
            reason TEXT NOT NULL,
            notify_url TEXT,
            parameters_digest TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('PROCESSING', 'SUCCESS', 'CHANGE', 'REFUNDCLOSE')),
            refund_id TEXT,
            failure_reason TEXT,
            created_at INTEGER NOT NULL,
            accepted_at INTEGER,
            succeeded_at INTEGER,
            updated_at INTEGER NOT NULL,
            last_queried_at INTEGER,
            last_notify_at INTEGER,
            claimed_by TEXT,
            claimed_until INTEGER
        ) STRICT;
        CREATE INDEX refunds_by_order ON refunds (out_trade_no, created_at);
        CREATE INDEX refunds_processing ON refunds (created_at) WHERE state = 'PROCESSING';
        CREATE INDEX refunds_by_created_at ON refunds (created_at);

        CREATE TRIGGER refunds_within_paid_amount BEFORE INSERT ON refunds
        WHEN NEW.amount + (SELECT COALESCE(SUM(amount), 0) FROM refunds
                           WHERE out_trade_no = NEW.out_trade_no AND state <> 'REFUNDCLOSE')
             > (SELECT amount FROM orders WHERE out_trade_no = NEW.out_trade_no)
        BEGIN SELECT RAISE(ABORT, 'refunds would exceed the amount paid'); END;

        CREATE TRIGGER refunds_finished_stay_finished BEFORE UPDATE OF state ON refunds
        WHEN OLD.state IN ('SUCCESS', 'REFUNDCLOSE') AND NEW.state <> OLD.state
        BEGIN SELECT RAISE(ABORT, 'a finished refund cannot change state'); END;

        CREATE TRIGGER refunds_parameters_fixed
        BEFORE UPDATE OF out_trade_no, amount, total_fee, reason, notify_url, parameters_digest ON refunds
        BEGIN SELECT RAISE(ABORT, 'a refund''s parameters never change'); END;
        """

    public func createRefund(_ refund: NewRefund, maximumPerOrder: Int, event: NewOrderEvent) async throws(StorageError)
        -> RefundCreateResult
    {
        try refund.validate()
        try event.validate()
        return try await write { db throws(StorageError) in
            // Inside the write transaction nobody else writes: the sum read here is the sum the
            // insert joins, so concurrent requests are decided one after the other.
            guard
                let order = try db.row(
                    "SELECT state, amount FROM orders WHERE out_trade_no = ?", refund.outTradeNo,
                    decode: { row throws(StorageError) in (try row.text(0), try row.int(1)) })
            else { return .orderNotFound }
            guard let state = OrderState(rawValue: order.0) else { throw .unexpectedRow }
            let existing = try Self.refund(refund.outRefundNo, on: db)
            guard
                let taken = try db.row(
                    """
                    SELECT COUNT(*), COALESCE(SUM(CASE WHEN state <> 'REFUNDCLOSE' THEN amount ELSE 0 END), 0)
                    FROM refunds WHERE out_trade_no = ?
                    """, refund.outTradeNo, decode: { row throws(StorageError) in (try row.int(0), try row.int(1)) })
            else { throw .unexpectedRow }
            if let answer = refund.decision(orderState: state, orderAmount: order.1, existing: existing, refundCount: taken.0,
                                            reserved: taken.1, maximumPerOrder: maximumPerOrder) {
                return answer
            }
            guard
                let created = try db.row(
                    "INSERT INTO refunds (" + RefundRecord.insertColumns + """
                        ) VALUES (?, ?, ?, ?, ?, ?, ?, 'PROCESSING', ?, ?) RETURNING
                        """ + " " + RefundRecord.columns,
                    refund.outRefundNo, refund.outTradeNo, refund.amount, order.1, refund.reason, refund.notifyURL,
                    refund.parametersDigest, refund.createdAt, refund.createdAt, decode: RefundRecord.init(row:))
            else { throw .unexpectedRow }
            try Self.insertRefundEvent(refund.outTradeNo, event.kind, event.detail, at: event.at, on: db)
            return .created(created)
        }
    }

    public func refund(_ outRefundNo: String) async throws(StorageError) -> RefundRecord? {
        try await read { db throws(StorageError) in try Self.refund(outRefundNo, on: db) }
    }

    public func refunds(outTradeNo: String) async throws(StorageError) -> [RefundRecord] {
        try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + RefundRecord.columns + " FROM refunds WHERE out_trade_no = ? ORDER BY created_at, out_refund_no",
                outTradeNo, decode: RefundRecord.init(row:))
        }
    }

    public func recordRefundAccepted(_ outRefundNo: String, refundID: String, at: Date, event: NewOrderEvent?)
        async throws(StorageError) -> RefundRecord?
    {
        try StoreText.validate(outRefundNo, refundID)
        try event.validate()
        return try await write { db throws(StorageError) in
            guard let before = try Self.refund(outRefundNo, on: db) else { return nil }
            guard before.refundID == nil || before.acceptedAt == nil else { return before }
            let after = try db.row(
                """
                UPDATE refunds SET refund_id = COALESCE(refund_id, ?1), accepted_at = COALESCE(accepted_at, ?2),
                    updated_at = MAX(updated_at, ?2)
                WHERE out_refund_no = ?3 RETURNING
                """ + " " + RefundRecord.columns, refundID, at, outRefundNo, decode: RefundRecord.init(row:))
            if let event, before.acceptedAt == nil {
                try Self.insertRefundEvent(before.outTradeNo, event.kind, event.detail, at: event.at, on: db)
            }
            return after
        }
    }

    public func touchRefund(_ outRefundNo: String, queriedAt: Date) async throws(StorageError) -> Bool {
        try await write { db throws(StorageError) in
            try db.run(
                """
                UPDATE refunds SET last_queried_at = MAX(COALESCE(last_queried_at, ?1), ?1), updated_at = MAX(updated_at, ?1)
                WHERE out_refund_no = ?2
                """, queriedAt, outRefundNo) == 1
        }
    }

    public func transitionRefund(_ transition: RefundTransition) async throws(StorageError) -> RefundTransitionResult {
        try transition.validate()
        let allowed = transition.sourceStates
        return try await write { db throws(StorageError) in
            guard let before = try Self.refund(transition.outRefundNo, on: db) else { return .notFound }
            if transition.mismatches(before) { return .mismatch(before) }
            // The door itself: one conditional UPDATE, so two callers can never both see a change.
            guard
                let after = try db.row(
                    """
                    UPDATE refunds SET state = ?1, refund_id = COALESCE(refund_id, ?2),
                        succeeded_at = CASE WHEN ?1 = 'SUCCESS' THEN COALESCE(?3, succeeded_at, ?5) ELSE succeeded_at END,
                        failure_reason = COALESCE(?4, failure_reason), updated_at = ?5,
                        last_notify_at = CASE WHEN ?8 = 1 THEN MAX(COALESCE(last_notify_at, ?5), ?5) ELSE last_notify_at END
                    WHERE out_refund_no = ?6 AND state IN (SELECT value FROM json_each(?7))
                    RETURNING
                    """ + " " + RefundRecord.columns,
                    transition.to.rawValue, transition.refundID, transition.succeededAt, transition.failureReason,
                    transition.at, transition.outRefundNo, Self.jsonArray(allowed), transition.touchesNotify ? 1 : 0,
                    decode: RefundRecord.init(row:))
            else { return .unchanged(before) }
            let changed = transition.stateChangedEvent(from: before.state, to: after)
            try Self.insertRefundEvent(after.outTradeNo, changed.kind, changed.detail, at: transition.at, on: db)
            if after.state == .success {
                // WeChat's trade_state word: an order with a successful refund is REFUND.
                let moved = try db.run(
                    "UPDATE orders SET state = 'REFUND', updated_at = MAX(updated_at, ?1) WHERE out_trade_no = ?2 AND state = 'SUCCESS'",
                    transition.at, after.outTradeNo)
                if moved == 1 {
                    let refunded = transition.orderRefundedEvent(after)
                    try Self.insertRefundEvent(after.outTradeNo, refunded.kind, refunded.detail, at: transition.at, on: db)
                }
            }
            if transition.affectsAttention(before: before.state, after: after.state) {
                try Self.updateAttentionFlag(after.outTradeNo, at: transition.at, on: db)
            }
            if let outbox = try transition.outboxEvent(for: after) {
                try Self.insertOutbox(outbox, on: db)
            }
            guard let order = try Self.order(after.outTradeNo, on: db) else { throw .unexpectedRow }
            if let followUp = try transition.followUpEvent(for: after, order: order) {
                try Self.insertOutbox(followUp, on: db)
            }
            return .changed(after, order: order)
        }
    }

    public func claimProcessingRefunds(
        createdAtOrBefore cutoff: Date, now: Date, minimumGap: TimeInterval, limit: Int, claimant: String,
        leaseUntil: Date
    ) async throws(StorageError) -> [RefundRecord] {
        guard limit > 0 else { return [] }
        let gap = RefundRecord.queryGapMilliseconds(minimumGap)
        let claimed = try await write { db throws(StorageError) in
            // Times are integer milliseconds: the back-off is arithmetic on the stored values.
            try db.rows(
                """
                UPDATE refunds SET claimed_by = ?1, claimed_until = ?2
                WHERE out_refund_no IN (
                    SELECT out_refund_no FROM refunds
                    WHERE state = 'PROCESSING' AND created_at <= ?3
                        AND (claimed_until IS NULL OR claimed_until <= ?4)
                        AND (last_queried_at IS NULL
                             OR last_queried_at + MIN(3600000, MAX(?6, (last_queried_at - created_at) / 2)) <= ?4)
                    ORDER BY COALESCE(last_queried_at, created_at), created_at, out_refund_no
                    LIMIT ?5)
                RETURNING
                """ + " " + RefundRecord.columns,
                claimant, leaseUntil, cutoff, now, limit, gap, decode: RefundRecord.init(row:))
        }
        return claimed.inClaimOrder()
    }

    public func releaseRefundClaim(_ outRefundNo: String, claimant: String) async throws(StorageError) -> Bool {
        try await write { db throws(StorageError) in
            try db.run(
                "UPDATE refunds SET claimed_by = NULL, claimed_until = NULL WHERE out_refund_no = ?1 AND claimed_by = ?2",
                outRefundNo, claimant) == 1
        }
    }

    public func refunds(createdFrom from: Date, to: Date) async throws(StorageError) -> [RefundRecord] {
        try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + RefundRecord.columns
                    + " FROM refunds WHERE created_at >= ?1 AND created_at < ?2 ORDER BY created_at, out_refund_no",
                from, to, decode: RefundRecord.init(row:))
        }
    }

    // MARK: Statements shared by the operations above (inside the caller's transaction)

    private static func refund(_ outRefundNo: String, on db: SQLiteConnection) throws(StorageError) -> RefundRecord? {
        try db.row(
            "SELECT " + RefundRecord.columns + " FROM refunds WHERE out_refund_no = ?", outRefundNo,
            decode: RefundRecord.init(row:))
    }

    private static func insertRefundEvent(_ outTradeNo: String, _ kind: String, _ detail: String, at: Date,
                                          on db: SQLiteConnection) throws(StorageError) {
        try db.run("INSERT INTO order_events (out_trade_no, at, kind, detail) VALUES (?, ?, ?, ?)",
                   outTradeNo, at, kind, detail)
    }

    /// `refund_needs_attention` exactly while one of the order's refunds is CHANGE.
    private static func updateAttentionFlag(_ outTradeNo: String, at: Date, on db: SQLiteConnection) throws(StorageError) {
        guard
            let current = try db.row(
                """
                SELECT flags, EXISTS (SELECT 1 FROM refunds WHERE out_trade_no = ?1 AND state = 'CHANGE')
                FROM orders WHERE out_trade_no = ?1
                """, outTradeNo, decode: { row throws(StorageError) in (try row.text(0), try row.int(1) == 1) })
        else { throw .unexpectedRow }
        guard let flags = OrderRecord.flags(try OrderRecord.decodeFlags(current.0), refundAttention: current.1) else { return }
        try db.run("UPDATE orders SET flags = ?1, updated_at = MAX(updated_at, ?2) WHERE out_trade_no = ?3",
                   OrderRecord.encodeFlags(flags), at, outTradeNo)
    }

    private static func jsonArray(_ states: Set<RefundState>) -> String {
        "[" + states.map { "\"\($0.rawValue)\"" }.sorted().joined(separator: ",") + "]"
    }
}
