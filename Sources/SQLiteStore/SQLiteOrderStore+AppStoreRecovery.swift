// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore: AppStoreBackfillStore, AppStoreConsumptionStore {
    /// Migration 6: what Apple's recovery and refund-defence APIs need. An order's currency (an
    /// unknown product is recorded at Apple's price, in Apple's currency); what Apple charged and
    /// the reversal of a refund, on the ledger; the flagged orders' index (the attention list); the
    /// notification history's progress per environment; consumption requests.
    static let appStoreRecoverySchema: SQL = """
        ALTER TABLE orders ADD COLUMN currency TEXT CHECK (currency IS NULL OR length(currency) = 3);
        CREATE INDEX orders_flagged_by_created_at ON orders (created_at DESC, out_trade_no DESC) WHERE flags <> '';
        ALTER TABLE apple_transactions ADD COLUMN price INTEGER;
        ALTER TABLE apple_transactions ADD COLUMN currency TEXT;
        ALTER TABLE apple_transactions ADD COLUMN storefront TEXT;
        ALTER TABLE apple_transactions ADD COLUMN refund_reversed_at INTEGER;

        CREATE TABLE appstore_backfill (
            environment TEXT PRIMARY KEY NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
            through INTEGER,
            window_start INTEGER,
            window_end INTEGER,
            pagination_token TEXT,
            last_run_at INTEGER,
            last_success_at INTEGER,
            last_error TEXT,
            claimed_by TEXT,
            claimed_until INTEGER,
            updated_at INTEGER NOT NULL,
            CHECK ((window_start IS NULL) = (window_end IS NULL))
        ) STRICT;

        CREATE TABLE appstore_consumption (
            id TEXT PRIMARY KEY NOT NULL,
            transaction_id TEXT NOT NULL,
            out_trade_no TEXT REFERENCES orders (out_trade_no),
            environment TEXT NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
            reason TEXT,
            requested_at INTEGER NOT NULL,
            deadline INTEGER NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('requested', 'answered', 'sent', 'not_sent', 'refused', 'expired')),
            answer TEXT,
            answered_by TEXT CHECK (answered_by IN ('business', 'defaults')),
            answered_at INTEGER,
            sent_at INTEGER,
            attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            next_attempt_at INTEGER,
            last_error TEXT,
            claimed_by TEXT,
            claimed_until INTEGER,
            updated_at INTEGER NOT NULL,
            CHECK ((answer IS NULL) = (answered_by IS NULL))
        ) STRICT;
        CREATE INDEX appstore_consumption_by_transaction ON appstore_consumption (transaction_id, requested_at);
        CREATE INDEX appstore_consumption_by_order ON appstore_consumption (out_trade_no) WHERE out_trade_no IS NOT NULL;
        CREATE INDEX appstore_consumption_open ON appstore_consumption (requested_at) WHERE state IN ('requested', 'answered');
        -- An answer is given once, and a request sent, refused or expired never changes again.
        CREATE TRIGGER appstore_consumption_final BEFORE UPDATE ON appstore_consumption
        WHEN OLD.state IN ('sent', 'not_sent', 'refused', 'expired')
            OR (OLD.answer IS NOT NULL AND NEW.answer IS NOT OLD.answer)
        BEGIN SELECT RAISE(ABORT, 'a consumption answer is given once, and a finished request never changes'); END;
        """

    /// The finality rule of `appstore_consumption` with one exception: an answer Apple refused
    /// (a consumption percentage for an auto-renewable subscription, a family-shared purchase) may
    /// be replaced by another, which is then sent; nothing else about a finished request changes.
    static let correctableConsumptionTrigger: SQL = """
        DROP TRIGGER IF EXISTS appstore_consumption_final;
        CREATE TRIGGER appstore_consumption_final BEFORE UPDATE ON appstore_consumption
        WHEN OLD.state IN ('sent', 'not_sent', 'expired')
            OR (OLD.state = 'refused' AND NOT (NEW.state IN ('answered', 'not_sent') AND NEW.answer IS NOT OLD.answer))
            OR (OLD.state <> 'refused' AND OLD.answer IS NOT NULL AND NEW.answer IS NOT OLD.answer)
        BEGIN SELECT RAISE(ABORT, 'a consumption answer is given once, and a finished request never changes'); END;
        """

    // MARK: - The notification history's progress

    public func claimBackfill(environment: String, claimant: String, now: Date, leaseUntil: Date, lastRunBefore: Date?)
        async throws(StorageError) -> AppStoreBackfillProgress?
    {
        try StoreText.validate(environment, claimant)
        return try await write { db throws(StorageError) in
            try db.run(
                "INSERT INTO appstore_backfill (environment, updated_at) VALUES (?1, ?2) ON CONFLICT (environment) DO NOTHING",
                environment, now)
            return try db.row(
                """
                UPDATE appstore_backfill SET claimed_by = ?2, claimed_until = ?3, last_run_at = ?4, updated_at = MAX(updated_at, ?4)
                WHERE environment = ?1 AND (claimed_until IS NULL OR claimed_until <= ?4)
                    AND (?5 IS NULL OR last_run_at IS NULL OR last_run_at <= ?5)
                RETURNING
                """ + " " + AppStoreBackfillProgress.columns,
                environment, claimant, leaseUntil, now, lastRunBefore, decode: AppStoreBackfillProgress.init(row:))
        }
    }

    public func saveBackfillPage(environment: String, claimant: String, window: ClosedRange<Date>, paginationToken: String?,
                                 leaseUntil: Date, at: Date) async throws(StorageError) -> Bool
    {
        try StoreText.validate(paginationToken)
        return try await write { db throws(StorageError) in
            try db.run(
                """
                UPDATE appstore_backfill SET window_start = ?3, window_end = ?4, pagination_token = ?5, claimed_until = ?6,
                    updated_at = MAX(updated_at, ?7)
                WHERE environment = ?1 AND claimed_by = ?2 AND claimed_until > ?7
                """, environment, claimant, window.lowerBound, window.upperBound, paginationToken, leaseUntil, at) == 1
        }
    }

    public func finishBackfill(environment: String, claimant: String, through: Date?, error: String?, at: Date)
        async throws(StorageError) -> Bool
    {
        let error = error.map { String($0.prefix(500)) }
        try StoreText.validate(error)
        return try await write { db throws(StorageError) in
            if let through {
                return try db.run(
                    """
                    UPDATE appstore_backfill SET through = MAX(COALESCE(through, ?3), ?3), window_start = NULL,
                        window_end = NULL, pagination_token = NULL, last_success_at = ?4, last_error = NULL,
                        claimed_by = NULL, claimed_until = NULL, updated_at = MAX(updated_at, ?4)
                    WHERE environment = ?1 AND claimed_by = ?2
                    """, environment, claimant, through, at) == 1
            }
            return try db.run(
                """
                UPDATE appstore_backfill SET last_error = ?3, claimed_by = NULL, claimed_until = NULL,
                    updated_at = MAX(updated_at, ?4)
                WHERE environment = ?1 AND claimed_by = ?2
                """, environment, claimant, error, at) == 1
        }
    }

    public func backfillProgress(environment: String) async throws(StorageError) -> AppStoreBackfillProgress? {
        try await read { db throws(StorageError) in
            try db.row("SELECT " + AppStoreBackfillProgress.columns + " FROM appstore_backfill WHERE environment = ?",
                       environment, decode: AppStoreBackfillProgress.init(row:))
        }
    }

    // MARK: - Consumption requests

    public func recordConsumptionRequest(_ request: ConsumptionRequestRecord, events: [NewOrderEvent], outbox: OutboxEvent?)
        async throws(StorageError) -> Bool
    {
        try request.validate(events: events, outbox: outbox)
        return try await write { db throws(StorageError) in
            let inserted = try db.run(
                "INSERT INTO appstore_consumption (" + ConsumptionRequestRecord.columns + """
                    , updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?6)
                    ON CONFLICT (id) DO NOTHING
                    """,
                request.id, request.transactionID, request.outTradeNo, request.environment, request.reason,
                request.requestedAt, request.deadline, request.state.rawValue, request.answer,
                request.answeredBy?.rawValue, request.answeredAt, request.sentAt, request.attempts, request.nextAttemptAt,
                request.lastError) == 1
            guard inserted, let outTradeNo = request.outTradeNo else { return inserted }
            for event in events { try Self.appendEvent(event, to: outTradeNo, on: db) }
            if let outbox { try Self.insertOutbox(outbox, on: db) }
            return true
        }
    }

    public func consumptionRequests(transactionID: String) async throws(StorageError) -> [ConsumptionRequestRecord] {
        try await consumptionRequests(where: "transaction_id", transactionID)
    }

    public func consumptionRequests(outTradeNo: String) async throws(StorageError) -> [ConsumptionRequestRecord] {
        try await consumptionRequests(where: "out_trade_no", outTradeNo)
    }

    /// The requests whose `column` (one of this file's, never input) is `value`, newest first.
    private func consumptionRequests(where column: SQL, _ value: String) async throws(StorageError)
        -> [ConsumptionRequestRecord]
    {
        try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + ConsumptionRequestRecord.columns
                    + " FROM appstore_consumption WHERE " + column + " = ? ORDER BY requested_at DESC, id DESC",
                value, decode: ConsumptionRequestRecord.init(row:))
        }
    }

    public func answerConsumption(_ id: String, answer: String, consented: Bool, by: ConsumptionAnswerSource, at: Date,
                                  event: NewOrderEvent?) async throws(StorageError) -> ConsumptionRequestRecord?
    {
        try StoreText.validate(id, answer)
        try event.validate()
        return try await write { db throws(StorageError) in
            guard let answered = try db.row(
                """
                UPDATE appstore_consumption SET state = ?2, answer = ?3, answered_by = ?4, answered_at = ?5,
                    next_attempt_at = CASE WHEN ?2 = 'answered' THEN ?5 END, updated_at = MAX(updated_at, ?5), last_error = NULL
                WHERE id = ?1 AND (state = 'requested' OR (state = 'refused' AND answer IS NOT ?3)) AND deadline > ?5
                RETURNING
                """ + " " + ConsumptionRequestRecord.columns,
                id, ConsumptionState.answered(consented: consented).rawValue, answer, by.rawValue, at,
                decode: ConsumptionRequestRecord.init(row:))
            else { return nil }
            if let event, let outTradeNo = answered.outTradeNo { try Self.appendEvent(event, to: outTradeNo, on: db) }
            return answered
        }
    }

    public func claimDueConsumption(now: Date, defaultsDueBefore: Date?, limit: Int, claimant: String, leaseUntil: Date,
                                    id: String?) async throws(StorageError) -> [ConsumptionRequestRecord]
    {
        guard limit > 0 else { return [] }
        try StoreText.validate(claimant, id)
        return try await write { db throws(StorageError) in
            try db.rows(
                """
                UPDATE appstore_consumption SET claimed_by = ?1, claimed_until = ?2
                WHERE id IN (
                    SELECT id FROM appstore_consumption
                    WHERE state IN ('requested', 'answered') AND (claimed_until IS NULL OR claimed_until <= ?3)
                        AND (?6 IS NULL OR id = ?6)
                        AND (deadline <= ?3 OR (state = 'answered' AND next_attempt_at <= ?3)
                             OR (state = 'requested' AND ?4 IS NOT NULL AND requested_at <= ?4))
                    ORDER BY requested_at, id LIMIT ?5)
                RETURNING
                """ + " " + ConsumptionRequestRecord.columns,
                claimant, leaseUntil, now, defaultsDueBefore, limit, id, decode: ConsumptionRequestRecord.init(row:))
                .inClaimOrder()
        }
    }

    public func finishConsumptionAttempt(_ id: String, claimant: String, outcome: ConsumptionAttemptOutcome, at: Date,
                                         event: NewOrderEvent?) async throws(StorageError) -> ConsumptionRequestRecord?
    {
        try StoreText.validate(id, claimant, outcome.error)
        try event.validate()
        return try await write { db throws(StorageError) in
            guard let current = try db.row(
                "SELECT " + ConsumptionRequestRecord.columns + " FROM appstore_consumption WHERE id = ?1 AND claimed_by = ?2",
                id, claimant, decode: ConsumptionRequestRecord.init(row:)), !current.state.isFinal
            else { return nil }
            guard let after = try db.row(
                """
                UPDATE appstore_consumption SET state = ?2, attempts = attempts + ?3,
                    next_attempt_at = CASE WHEN ?4 IS NOT NULL THEN ?4 ELSE next_attempt_at END,
                    last_error = CASE WHEN ?2 = 'sent' THEN NULL WHEN ?5 IS NOT NULL THEN ?5 ELSE last_error END,
                    sent_at = CASE WHEN ?2 = 'sent' THEN ?6 ELSE sent_at END,
                    claimed_by = NULL, claimed_until = NULL, updated_at = MAX(updated_at, ?6)
                WHERE id = ?1
                RETURNING
                """ + " " + ConsumptionRequestRecord.columns,
                id, outcome.state(from: current.state).rawValue, outcome.counts ? 1 : 0, outcome.nextAttempt, outcome.error, at,
                decode: ConsumptionRequestRecord.init(row:))
            else { throw .unexpectedRow }
            if let event, let outTradeNo = after.outTradeNo { try Self.appendEvent(event, to: outTradeNo, on: db) }
            return after
        }
    }
}
