// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore {
    public func dueOutboxEvents(now: Date, limit: Int, claimant: String, leaseUntil: Date) async throws(StorageError)
        -> [OutboxEvent]
    {
        guard limit > 0 else { return [] }
        let claimed = try await write { db throws(StorageError) in
            try db.rows(
                """
                UPDATE outbox SET claimed_by = ?1, claimed_until = ?2
                WHERE id IN (
                    SELECT id FROM outbox
                    WHERE delivered_at IS NULL AND dead_at IS NULL AND next_attempt_at <= ?3
                        AND (claimed_until IS NULL OR claimed_until <= ?3)
                        AND NOT (type = ?5 AND IFNULL(json_extract(payload, '$.user_id'), '') IN (
                            SELECT json_extract(payload, '$.user_id') FROM outbox
                            WHERE type = ?5 AND delivered_at IS NULL AND dead_at IS NULL AND claimed_until > ?3
                                AND json_extract(payload, '$.user_id') IS NOT NULL))
                    ORDER BY next_attempt_at, created_at, id
                    LIMIT ?4)
                RETURNING
                """ + " " + OutboxEvent.columns,
                claimant, leaseUntil, now, limit, OutboxEvent.oneAtATimePerUser, decode: OutboxEvent.init(row:))
        }
        return claimed.inClaimOrder()
    }

    public func markDelivered(_ id: String, at: Date) async throws(StorageError) -> Bool {
        try await write { db throws(StorageError) in
            // An acknowledgement is the truth even for an event given up on meanwhile.
            try db.run(
                """
                UPDATE outbox SET delivered_at = ?1, dead_at = NULL, claimed_by = NULL, claimed_until = NULL
                WHERE id = ?2 AND delivered_at IS NULL
                """, at, id) == 1
        }
    }

    public func reschedule(_ id: String, nextAttemptAt: Date, attempts: Int, lastError: String)
        async throws(StorageError) -> Bool
    {
        try StoreText.validate(id, lastError)
        return try await write { db throws(StorageError) in
            try db.run(
                """
                UPDATE outbox SET next_attempt_at = ?1, attempts = ?2, last_error = ?3,
                    claimed_by = NULL, claimed_until = NULL
                WHERE id = ?4 AND delivered_at IS NULL AND dead_at IS NULL
                """, nextAttemptAt, attempts, lastError, id) == 1
        }
    }

    public func deadLetter(_ id: String, at: Date, lastError: String) async throws(StorageError) -> Bool {
        try StoreText.validate(id, lastError)
        return try await write { db throws(StorageError) in
            try db.run(
                """
                UPDATE outbox SET dead_at = ?1, last_error = ?2, attempts = attempts + 1, claimed_by = NULL, claimed_until = NULL
                WHERE id = ?3 AND delivered_at IS NULL AND dead_at IS NULL
                """, at, lastError, id) == 1
        }
    }

    public func redrive(_ id: String, at: Date) async throws(StorageError) -> Bool {
        try await write { db throws(StorageError) in
            try db.run(
                """
                UPDATE outbox SET dead_at = NULL, attempts = 0, next_attempt_at = ?1,
                    claimed_by = NULL, claimed_until = NULL
                WHERE id = ?2 AND dead_at IS NOT NULL AND delivered_at IS NULL
                """, at, id) == 1
        }
    }

    public func outboxEvent(id: String) async throws(StorageError) -> OutboxEvent? {
        try await read { db throws(StorageError) in
            try db.row(
                "SELECT " + OutboxEvent.columns + " FROM outbox WHERE id = ?", id, decode: OutboxEvent.init(row:))
        }
    }

    public func outboxEvents(_ outTradeNo: String) async throws(StorageError) -> [OutboxEvent] {
        try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + OutboxEvent.columns + " FROM outbox WHERE out_trade_no = ? ORDER BY created_at, id",
                outTradeNo, decode: OutboxEvent.init(row:))
        }
    }
}
