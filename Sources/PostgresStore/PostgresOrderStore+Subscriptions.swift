// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension PostgresOrderStore: SubscriptionStore {
    static func subscriptionKey(_ originalTransactionID: String) -> String { "s:" + originalTransactionID }

    public func recordSubscription(_ observation: SubscriptionObservation, heardAt: Date, announcement: OutboxEvent?)
        async throws(StorageError) -> (record: SubscriptionRecord, grantsChanged: Bool)
    {
        let first = SubscriptionRecord(first: observation, heardAt: heardAt)
        try first.validate()
        try StoreText.validate(observation.transaction.productID, observation.renewal?.autoRenewProductID)
        return try await write(key: Self.subscriptionKey(observation.originalTransactionID)) { db throws(StorageError) in
            // The first sight inserts; every later one merges under the row's lock, so two
            // instances merging at once both count.
            let inserted = try db.run(Self.storeSubscription(first, insert: true)).affectedRows == 1
            if inserted {
                if let announcement { _ = try db.run(Self.insertOutbox(announcement)) }
                return ((first, true), nil)
            }
            guard let current = try db.run(PGQuery(
                "SELECT " + SubscriptionRecord.columns
                    + " FROM appstore_subscriptions WHERE original_transaction_id = $1 FOR UPDATE",
                observation.originalTransactionID)).first(SubscriptionRecord.init(row:))
            else { throw .unexpectedRow }
            let merged = current.merging(observation, heardAt: heardAt)
            _ = try db.run(Self.storeSubscription(merged, insert: false))
            let changed = current.grantFacts != merged.grantFacts
            if changed, let announcement { _ = try db.run(Self.insertOutbox(announcement)) }
            return ((merged, changed), nil)
        }
    }

    /// The row's INSERT (nothing when it exists) or UPDATE, with its status.
    private static func storeSubscription(_ record: SubscriptionRecord, insert: Bool) -> PGQuery {
        let sql: SQL = insert
            ? "INSERT INTO appstore_subscriptions (" + SubscriptionRecord.columns + """
                  , status) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
                  ON CONFLICT (original_transaction_id) DO NOTHING
                  """
            : """
              UPDATE appstore_subscriptions SET environment = $2, latest_transaction_id = $3, product_id = $4,
                  period_started_at = $5, expires_at = $6, transaction_signed_at = $7, revoked_at = $8, renewal_signed_at = $9,
                  auto_renew = $10, auto_renew_product_id = $11, in_billing_retry = $12, grace_period_expires_at = $13,
                  signed_at = $14, stated_status = $15, source = $16, checked_at = $17, status = $18
              WHERE original_transaction_id = $1
              """
        return PGQuery(
            sql, record.originalTransactionID, record.environment, record.latestTransactionID, record.productID,
            record.periodStartedAt, record.expiresAt, record.transactionSignedAt, record.revokedAt, record.renewalSignedAt,
            record.autoRenew ? 1 : 0, record.autoRenewProductID, record.inBillingRetry ? 1 : 0, record.gracePeriodExpiresAt,
            record.signedAt, record.stated?.rawValue, record.source, record.checkedAt, record.status.rawValue)
    }

    public func subscriptions(originalTransactionIDs: [String]) async throws(StorageError) -> [SubscriptionRecord] {
        let ids = Array(Set(originalTransactionIDs))
        guard !ids.isEmpty else { return [] }
        try StoreText.validate(ids.joined())
        return try await read { db throws(StorageError) in
            var records: [SubscriptionRecord] = []
            for id in ids {
                if let record = try db.run(PGQuery(
                    "SELECT " + SubscriptionRecord.columns + " FROM appstore_subscriptions WHERE original_transaction_id = $1",
                    id)).first(SubscriptionRecord.init(row:)) {
                    records.append(record)
                }
            }
            return records
        }
    }

    public func subscriptionsToRecheck(now: Date, endingBefore: Date, heardBefore: Date, limit: Int)
        async throws(StorageError) -> [SubscriptionRecord]
    {
        guard limit > 0 else { return [] }
        return try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + SubscriptionRecord.columns + """
                     FROM appstore_subscriptions
                    WHERE status IN ('active', 'grace_period', 'billing_retry') AND checked_at <= $2
                      AND (expires_at <= $1 OR grace_period_expires_at <= $1
                           OR checked_at + (expires_at - period_started_at) <= $3)
                    ORDER BY checked_at, original_transaction_id COLLATE "C" LIMIT $4
                    """,
                endingBefore, heardBefore, now, limit)).rows(SubscriptionRecord.init(row:))
        }
    }

    public func markSubscriptionChecked(_ originalTransactionID: String, at: Date) async throws(StorageError) {
        try StoreText.validate(originalTransactionID)
        try await write(key: Self.subscriptionKey(originalTransactionID)) { db throws(StorageError) in
            _ = try db.run(PGQuery(
                "UPDATE appstore_subscriptions SET checked_at = GREATEST(checked_at, $2) WHERE original_transaction_id = $1",
                originalTransactionID, at))
            return ((), nil)
        }
    }
}

extension PostgresOrderStore {
    /// Migration 13: auto-renewable subscriptions as Apple last told of them (SubscriptionRecord).
    /// `status` is the record's, kept for the reconciler's look for subscriptions to re-read.
    static let subscriptionsSchema: [SQL] = [
        """
        CREATE TABLE appstore_subscriptions (
            original_transaction_id text PRIMARY KEY,
            environment text NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
            latest_transaction_id text NOT NULL,
            product_id text NOT NULL,
            period_started_at timestamptz NOT NULL,
            expires_at timestamptz NOT NULL,
            transaction_signed_at timestamptz NOT NULL,
            revoked_at timestamptz,
            renewal_signed_at timestamptz,
            auto_renew bigint NOT NULL CHECK (auto_renew IN (0, 1)),
            auto_renew_product_id text,
            in_billing_retry bigint NOT NULL CHECK (in_billing_retry IN (0, 1)),
            grace_period_expires_at timestamptz,
            signed_at timestamptz NOT NULL,
            stated_status text CHECK (stated_status IN ('active', 'expired', 'billing_retry', 'grace_period', 'revoked')),
            source text NOT NULL,
            checked_at timestamptz NOT NULL,
            status text NOT NULL CHECK (status IN ('active', 'expired', 'billing_retry', 'grace_period', 'revoked'))
        )
        """,
        """
        CREATE INDEX appstore_subscriptions_renewing ON appstore_subscriptions (checked_at)
            WHERE status IN ('active', 'grace_period', 'billing_retry')
        """,
        PostgresMigrations.amcheckFunction(relations: [
            "orders", "order_events", "outbox", "refunds", "apple_transactions", "appstore_notifications", "console_sessions",
            "console_login_failures", "console_login_locks", "console_login_addresses", "audit_log", "appstore_backfill",
            "appstore_consumption", "appstore_subscriptions",
        ]),
    ]
}
