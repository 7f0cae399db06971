// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension PostgresOrderStore {
    public func dueOutboxEvents(now: Date, limit: Int, claimant: String, leaseUntil: Date) async throws(StorageError)
        -> [OutboxEvent]
    {
        guard limit > 0 else { return [] }
        let claimed = try await transaction { db throws(StorageError) in
            // Claims of all instances one at a time: the rule that one user's entitlement events
            // are never leased to two dispatchers at once reads the other claims' leases, which a
            // claim running beside it would not see yet.
            _ = try db.run(PGQuery("SELECT pg_advisory_xact_lock(hashtext('wxpay-gateway outbox claims'), hashtext(current_schema()))"))
            // SKIP LOCKED: a row a delivery's bookkeeping is writing right now is left for later,
            // not waited for.
            let rows = try db.run(PGQuery(
                """
                WITH due AS MATERIALIZED (
                    SELECT id AS due_id FROM outbox
                    WHERE delivered_at IS NULL AND dead_at IS NULL AND next_attempt_at <= $3
                        AND (claimed_until IS NULL OR claimed_until <= $3)
                        AND NOT (type = $5 AND COALESCE(payload::jsonb ->> 'user_id', '') IN (
                            SELECT payload::jsonb ->> 'user_id' FROM outbox
                            WHERE type = $5 AND delivered_at IS NULL AND dead_at IS NULL AND claimed_until > $3
                                AND payload::jsonb ->> 'user_id' IS NOT NULL))
                    ORDER BY next_attempt_at, created_at, id COLLATE "C"
                    LIMIT $4
                    FOR UPDATE SKIP LOCKED)
                UPDATE outbox SET claimed_by = $1, claimed_until = $2 FROM due WHERE id = due.due_id
                RETURNING
                """ + " " + OutboxEvent.columns,
                claimant, leaseUntil, now, limit, OutboxEvent.oneAtATimePerUser)).rows(OutboxEvent.init(row:))
            return (rows, nil)
        }
        return claimed.inClaimOrder()
    }

    public func markDelivered(_ id: String, at: Date) async throws(StorageError) -> Bool {
        try await outboxUpdate(id, PGQuery(
            // An acknowledgement is the truth even for an event given up on meanwhile.
            """
            UPDATE outbox SET delivered_at = $1, dead_at = NULL, claimed_by = NULL, claimed_until = NULL
            WHERE id = $2 AND delivered_at IS NULL
            """, at, id))
    }

    public func reschedule(_ id: String, nextAttemptAt: Date, attempts: Int, lastError: String)
        async throws(StorageError) -> Bool
    {
        try StoreText.validate(id, lastError)
        return try await outboxUpdate(id, PGQuery(
            """
            UPDATE outbox SET next_attempt_at = $1, attempts = $2, last_error = $3, claimed_by = NULL, claimed_until = NULL
            WHERE id = $4 AND delivered_at IS NULL AND dead_at IS NULL
            """, nextAttemptAt, attempts, lastError, id))
    }

    public func deadLetter(_ id: String, at: Date, lastError: String) async throws(StorageError) -> Bool {
        try StoreText.validate(id, lastError)
        return try await outboxUpdate(id, PGQuery(
            """
            UPDATE outbox SET dead_at = $1, last_error = $2, attempts = attempts + 1, claimed_by = NULL, claimed_until = NULL
            WHERE id = $3 AND delivered_at IS NULL AND dead_at IS NULL
            """, at, lastError, id))
    }

    public func redrive(_ id: String, at: Date) async throws(StorageError) -> Bool {
        try await outboxUpdate(id, PGQuery(
            """
            UPDATE outbox SET dead_at = NULL, attempts = 0, next_attempt_at = $1, claimed_by = NULL, claimed_until = NULL
            WHERE id = $2 AND dead_at IS NOT NULL AND delivered_at IS NULL
            """, at, id))
    }

    public func outboxEvent(id: String) async throws(StorageError) -> OutboxEvent? {
        try await read { db throws(StorageError) in
            try db.run(PGQuery("SELECT " + OutboxEvent.columns + " FROM outbox WHERE id = $1", id))
                .first(OutboxEvent.init(row:))
        }
    }

    public func outboxEvents(_ outTradeNo: String) async throws(StorageError) -> [OutboxEvent] {
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + OutboxEvent.columns
                    + #" FROM outbox WHERE out_trade_no = $1 ORDER BY created_at, id COLLATE "C""#,
                outTradeNo)).rows(OutboxEvent.init(row:))
        }
    }

    /// One conditional UPDATE of one event; whether it changed the row.
    private func outboxUpdate(_ id: String, _ query: PGQuery) async throws(StorageError) -> Bool {
        try await write(key: Self.outboxKey(id)) { db throws(StorageError) in (try db.run(query).affectedRows == 1, nil) }
    }
}
