// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension PostgresOrderStore: AppStoreBackfillStore, AppStoreConsumptionStore {
    /// Migration 7: what SQLite's migration 6 adds, with the same promises held by the database.
    static let appStoreRecoverySchema: [SQL] = [
        "ALTER TABLE orders ADD COLUMN currency text CHECK (currency IS NULL OR length(currency) = 3)",
        """
        CREATE INDEX orders_flagged_by_created_at ON orders (created_at DESC, out_trade_no COLLATE "C" DESC)
            WHERE flags <> ''
        """,
        "ALTER TABLE apple_transactions ADD COLUMN price bigint",
        "ALTER TABLE apple_transactions ADD COLUMN currency text",
        "ALTER TABLE apple_transactions ADD COLUMN storefront text",
        "ALTER TABLE apple_transactions ADD COLUMN refund_reversed_at timestamptz",
        """
        CREATE TABLE appstore_backfill (
            environment text PRIMARY KEY CHECK (environment IN ('Production', 'Sandbox')),
            through timestamptz,
            window_start timestamptz,
            window_end timestamptz,
            pagination_token text,
            last_run_at timestamptz,
            last_success_at timestamptz,
            last_error text,
            claimed_by text,
            claimed_until timestamptz,
            updated_at timestamptz NOT NULL,
            CHECK ((window_start IS NULL) = (window_end IS NULL))
        )
        """,
        """
        CREATE TABLE appstore_consumption (
            id text PRIMARY KEY,
            transaction_id text NOT NULL,
            out_trade_no text REFERENCES orders (out_trade_no),
            environment text NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
            reason text,
            requested_at timestamptz NOT NULL,
            deadline timestamptz NOT NULL,
            state text NOT NULL CHECK (state IN ('requested', 'answered', 'sent', 'not_sent', 'refused', 'expired')),
            answer text,
            answered_by text CHECK (answered_by IN ('business', 'defaults')),
            answered_at timestamptz,
            sent_at timestamptz,
            attempts bigint NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            next_attempt_at timestamptz,
            last_error text,
            claimed_by text,
            claimed_until timestamptz,
            updated_at timestamptz NOT NULL,
            CHECK ((answer IS NULL) = (answered_by IS NULL))
        )
        """,
        "CREATE INDEX appstore_consumption_by_transaction ON appstore_consumption (transaction_id, requested_at)",
        "CREATE INDEX appstore_consumption_by_order ON appstore_consumption (out_trade_no) WHERE out_trade_no IS NOT NULL",
        "CREATE INDEX appstore_consumption_open ON appstore_consumption (requested_at) WHERE state IN ('requested', 'answered')",
        // An answer is given once, and a request sent, refused or expired never changes again.
        """
        CREATE FUNCTION wxpay_consumption_final() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'a consumption answer is given once, and a finished request never changes'
                USING ERRCODE = 'check_violation';
        END $$
        """,
        """
        CREATE TRIGGER appstore_consumption_final BEFORE UPDATE ON appstore_consumption FOR EACH ROW
            WHEN (OLD.state IN ('sent', 'not_sent', 'refused', 'expired')
                  OR (OLD.answer IS NOT NULL AND NEW.answer IS DISTINCT FROM OLD.answer))
            EXECUTE FUNCTION wxpay_consumption_final()
        """,
        PostgresMigrations.amcheckFunction(relations: [
            "orders", "order_events", "outbox", "refunds", "apple_transactions", "appstore_notifications", "console_sessions",
            "console_login_failures", "console_login_locks", "console_login_addresses", "audit_log", "appstore_backfill",
            "appstore_consumption",
        ]),
    ]

    /// The finality rule of `appstore_consumption` with one exception: an answer Apple refused
    /// (a consumption percentage for an auto-renewable subscription, a family-shared purchase) may
    /// be replaced by another, which is then sent; nothing else about a finished request changes.
    static let correctableConsumptionTrigger: [SQL] = [
        "DROP TRIGGER IF EXISTS appstore_consumption_final ON appstore_consumption",
        """
        CREATE TRIGGER appstore_consumption_final BEFORE UPDATE ON appstore_consumption FOR EACH ROW
            WHEN (OLD.state IN ('sent', 'not_sent', 'expired')
                  OR (OLD.state = 'refused' AND NOT (NEW.state IN ('answered', 'not_sent') AND NEW.answer IS DISTINCT FROM OLD.answer))
                  OR (OLD.state <> 'refused' AND OLD.answer IS NOT NULL AND NEW.answer IS DISTINCT FROM OLD.answer))
            EXECUTE FUNCTION wxpay_consumption_final()
        """,
    ]

    // MARK: - The notification history's progress

    static func backfillKey(_ environment: String) -> String { "b:" + environment }

    public func claimBackfill(environment: String, claimant: String, now: Date, leaseUntil: Date, lastRunBefore: Date?)
        async throws(StorageError) -> AppStoreBackfillProgress?
    {
        try StoreText.validate(environment, claimant)
        return try await write(key: Self.backfillKey(environment)) { db throws(StorageError) in
            // The insert makes the row once; the conditional update then decides between claimants
            // (the second waits for the first's COMMIT and re-checks the lease on the new row).
            let results = try db.run([
                PGQuery("INSERT INTO appstore_backfill (environment, updated_at) VALUES ($1, $2) ON CONFLICT (environment) DO NOTHING",
                        environment, now),
                PGQuery(
                    """
                    UPDATE appstore_backfill SET claimed_by = $2, claimed_until = $3, last_run_at = $4,
                        updated_at = GREATEST(updated_at, $4)
                    WHERE environment = $1 AND (claimed_until IS NULL OR claimed_until <= $4)
                        AND ($5::timestamptz IS NULL OR last_run_at IS NULL OR last_run_at <= $5)
                    RETURNING
                    """ + " " + AppStoreBackfillProgress.columns,
                    environment, claimant, leaseUntil, now, lastRunBefore),
            ])
            return (try results[1].first(AppStoreBackfillProgress.init(row:)), nil)
        }
    }

    public func saveBackfillPage(environment: String, claimant: String, window: ClosedRange<Date>, paginationToken: String?,
                                 leaseUntil: Date, at: Date) async throws(StorageError) -> Bool
    {
        try StoreText.validate(paginationToken)
        return try await write(key: Self.backfillKey(environment)) { db throws(StorageError) in
            (try db.run(PGQuery(
                """
                UPDATE appstore_backfill SET window_start = $3, window_end = $4, pagination_token = $5, claimed_until = $6,
                    updated_at = GREATEST(updated_at, $7)
                WHERE environment = $1 AND claimed_by = $2 AND claimed_until > $7
                """, environment, claimant, window.lowerBound, window.upperBound, paginationToken, leaseUntil, at))
                .affectedRows == 1, nil)
        }
    }

    public func finishBackfill(environment: String, claimant: String, through: Date?, error: String?, at: Date)
        async throws(StorageError) -> Bool
    {
        let error = error.map { String($0.prefix(500)) }
        try StoreText.validate(error)
        return try await write(key: Self.backfillKey(environment)) { db throws(StorageError) in
            let query: PGQuery =
                if let through {
                    PGQuery(
                        """
                        UPDATE appstore_backfill SET through = GREATEST(COALESCE(through, $3), $3), window_start = NULL,
                            window_end = NULL, pagination_token = NULL, last_success_at = $4, last_error = NULL,
                            claimed_by = NULL, claimed_until = NULL, updated_at = GREATEST(updated_at, $4)
                        WHERE environment = $1 AND claimed_by = $2
                        """, environment, claimant, through, at)
                } else {
                    PGQuery(
                        """
                        UPDATE appstore_backfill SET last_error = $3, claimed_by = NULL, claimed_until = NULL,
                            updated_at = GREATEST(updated_at, $4)
                        WHERE environment = $1 AND claimed_by = $2
                        """, environment, claimant, error, at)
                }
            return (try db.run(query).affectedRows == 1, nil)
        }
    }

    public func backfillProgress(environment: String) async throws(StorageError) -> AppStoreBackfillProgress? {
        try await read { db throws(StorageError) in
            try db.run(PGQuery("SELECT " + AppStoreBackfillProgress.columns + " FROM appstore_backfill WHERE environment = $1",
                               environment)).first(AppStoreBackfillProgress.init(row:))
        }
    }

    // MARK: - Consumption requests

    static func consumptionKey(_ id: String) -> String { "c:" + id }

    public func recordConsumptionRequest(_ request: ConsumptionRequestRecord, events: [NewOrderEvent], outbox: OutboxEvent?)
        async throws(StorageError) -> Bool
    {
        try request.validate(events: events, outbox: outbox)
        return try await write(key: Self.consumptionKey(request.id)) { db throws(StorageError) in
            let inserted = try db.run(PGQuery(
                "INSERT INTO appstore_consumption (" + ConsumptionRequestRecord.columns + """
                    , updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $6)
                    ON CONFLICT (id) DO NOTHING
                    """,
                request.id, request.transactionID, request.outTradeNo, request.environment, request.reason,
                request.requestedAt, request.deadline, request.state.rawValue, request.answer, request.answeredBy?.rawValue,
                request.answeredAt, request.sentAt, request.attempts, request.nextAttemptAt, request.lastError)).affectedRows == 1
            guard inserted, let outTradeNo = request.outTradeNo else { return (inserted, nil) }
            var statements = events.map { Self.insertEvent($0, of: outTradeNo) }
            if let outbox { statements.append(Self.insertOutbox(outbox)) }
            if !statements.isEmpty { _ = try db.run(statements) }
            return (true, nil)
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
            try db.run(PGQuery(
                "SELECT " + ConsumptionRequestRecord.columns
                    + " FROM appstore_consumption WHERE " + column + " = $1 ORDER BY requested_at DESC, id COLLATE \"C\" DESC",
                value)).rows(ConsumptionRequestRecord.init(row:))
        }
    }

    public func answerConsumption(_ id: String, answer: String, consented: Bool, by: ConsumptionAnswerSource, at: Date,
                                  event: NewOrderEvent?) async throws(StorageError) -> ConsumptionRequestRecord?
    {
        try StoreText.validate(id, answer)
        try event.validate()
        return try await write(key: Self.consumptionKey(id)) { db throws(StorageError) in
            guard let answered = try db.run(PGQuery(
                """
                UPDATE appstore_consumption SET state = $2, answer = $3, answered_by = $4, answered_at = $5,
                    next_attempt_at = CASE WHEN $2 = 'answered' THEN $5::timestamptz END, updated_at = GREATEST(updated_at, $5),
                    last_error = NULL
                WHERE id = $1 AND (state = 'requested' OR (state = 'refused' AND answer IS DISTINCT FROM $3)) AND deadline > $5
                RETURNING
                """ + " " + ConsumptionRequestRecord.columns,
                id, ConsumptionState.answered(consented: consented).rawValue, answer, by.rawValue, at))
                .first(ConsumptionRequestRecord.init(row:))
            else { return (nil, nil) }
            if let event, let outTradeNo = answered.outTradeNo { _ = try db.run(Self.insertEvent(event, of: outTradeNo)) }
            return (answered, nil)
        }
    }

    public func claimDueConsumption(now: Date, defaultsDueBefore: Date?, limit: Int, claimant: String, leaseUntil: Date,
                                    id: String?) async throws(StorageError) -> [ConsumptionRequestRecord]
    {
        guard limit > 0 else { return [] }
        try StoreText.validate(claimant, id)
        let claimed = try await exclusive { db throws(StorageError) in
            try db.run(PGQuery(
                """
                WITH due AS MATERIALIZED (
                    SELECT id AS due_id FROM appstore_consumption
                    WHERE state IN ('requested', 'answered') AND (claimed_until IS NULL OR claimed_until <= $3)
                        AND ($6::text IS NULL OR id = $6)
                        AND (deadline <= $3 OR (state = 'answered' AND next_attempt_at <= $3)
                             OR (state = 'requested' AND $4::timestamptz IS NOT NULL AND requested_at <= $4))
                    ORDER BY requested_at, id COLLATE "C" LIMIT $5
                    FOR NO KEY UPDATE SKIP LOCKED)
                UPDATE appstore_consumption SET claimed_by = $1, claimed_until = $2 FROM due WHERE id = due.due_id
                RETURNING
                """ + " " + ConsumptionRequestRecord.columns,
                claimant, leaseUntil, now, defaultsDueBefore, limit, id)).rows(ConsumptionRequestRecord.init(row:))
        }
        return claimed.inClaimOrder()
    }

    public func finishConsumptionAttempt(_ id: String, claimant: String, outcome: ConsumptionAttemptOutcome, at: Date,
                                         event: NewOrderEvent?) async throws(StorageError) -> ConsumptionRequestRecord?
    {
        try StoreText.validate(id, claimant, outcome.error)
        try event.validate()
        return try await write(key: Self.consumptionKey(id)) { db throws(StorageError) in
            guard let current = try db.run(PGQuery(
                "SELECT " + ConsumptionRequestRecord.columns
                    + " FROM appstore_consumption WHERE id = $1 AND claimed_by = $2 FOR UPDATE", id, claimant))
                .first(ConsumptionRequestRecord.init(row:)), !current.state.isFinal
            else { return (nil, nil) }
            guard let after = try db.run(PGQuery(
                """
                UPDATE appstore_consumption SET state = $2, attempts = attempts + $3,
                    next_attempt_at = COALESCE($4, next_attempt_at),
                    last_error = CASE WHEN $2 = 'sent' THEN NULL ELSE COALESCE($5, last_error) END,
                    sent_at = CASE WHEN $2 = 'sent' THEN $6 ELSE sent_at END,
                    claimed_by = NULL, claimed_until = NULL, updated_at = GREATEST(updated_at, $6)
                WHERE id = $1
                RETURNING
                """ + " " + ConsumptionRequestRecord.columns,
                id, outcome.state(from: current.state).rawValue, outcome.counts ? 1 : 0, outcome.nextAttempt, outcome.error,
                at)).first(ConsumptionRequestRecord.init(row:))
            else { throw .unexpectedRow }
            if let event, let outTradeNo = after.outTradeNo { _ = try db.run(Self.insertEvent(event, of: outTradeNo)) }
            return (after, nil)
        }
    }
}
