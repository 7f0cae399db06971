// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore: SubscriptionStore {
    public func recordSubscription(_ observation: SubscriptionObservation, heardAt: Date, announcement: OutboxEvent?)
        async throws(StorageError) -> (record: SubscriptionRecord, grantsChanged: Bool)
    {
        let first = SubscriptionRecord(first: observation, heardAt: heardAt)
        try first.validate()
        try StoreText.validate(observation.transaction.productID, observation.renewal?.autoRenewProductID)
        return try await write { db throws(StorageError) in
            let current = try db.row(
                "SELECT " + SubscriptionRecord.columns + " FROM appstore_subscriptions WHERE original_transaction_id = ?",
                observation.originalTransactionID, decode: SubscriptionRecord.init(row:))
            let merged = current?.merging(observation, heardAt: heardAt) ?? first
            try db.run(
                "INSERT OR REPLACE INTO appstore_subscriptions (" + SubscriptionRecord.columns + """
                    , status) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)
                    """,
                merged.originalTransactionID, merged.environment, merged.latestTransactionID, merged.productID,
                merged.periodStartedAt, merged.expiresAt, merged.transactionSignedAt, merged.revokedAt, merged.renewalSignedAt,
                merged.autoRenew ? 1 : 0, merged.autoRenewProductID, merged.inBillingRetry ? 1 : 0, merged.gracePeriodExpiresAt,
                merged.signedAt, merged.stated?.rawValue, merged.source, merged.checkedAt, merged.status.rawValue)
            let changed = current.map { $0.grantFacts != merged.grantFacts } ?? true
            if changed, let announcement { try Self.insertOutbox(announcement, on: db) }
            return (merged, changed)
        }
    }

    public func subscriptions(originalTransactionIDs: [String]) async throws(StorageError) -> [SubscriptionRecord] {
        let ids = Array(Set(originalTransactionIDs))
        guard !ids.isEmpty else { return [] }
        try StoreText.validate(ids.joined())
        return try await read { db throws(StorageError) in
            var records: [SubscriptionRecord] = []
            for id in ids {
                if let record = try db.row(
                    "SELECT " + SubscriptionRecord.columns + " FROM appstore_subscriptions WHERE original_transaction_id = ?",
                    id, decode: SubscriptionRecord.init(row:)) {
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
            try db.rows(
                "SELECT " + SubscriptionRecord.columns + """
                     FROM appstore_subscriptions INDEXED BY appstore_subscriptions_renewing
                    WHERE status IN ('active', 'grace_period', 'billing_retry') AND checked_at <= ?2
                      AND (expires_at <= ?1 OR grace_period_expires_at <= ?1
                           OR checked_at + (expires_at - period_started_at) <= ?3)
                    ORDER BY checked_at, original_transaction_id LIMIT ?4
                    """,
                endingBefore, heardBefore, now, limit, decode: SubscriptionRecord.init(row:))
        }
    }

    public func markSubscriptionChecked(_ originalTransactionID: String, at: Date) async throws(StorageError) {
        try StoreText.validate(originalTransactionID)
        try await write { db throws(StorageError) in
            _ = try db.run(
                "UPDATE appstore_subscriptions SET checked_at = MAX(checked_at, ?2) WHERE original_transaction_id = ?1",
                originalTransactionID, at)
        }
    }
}

extension SQLiteOrderStore {
    /// Migration 12: auto-renewable subscriptions as Apple last told of them (SubscriptionRecord).
    /// `status` is the record's, kept for the reconciler's look for subscriptions to re-read.
    static let subscriptionsSchema: SQL = """
        CREATE TABLE appstore_subscriptions (
            original_transaction_id TEXT PRIMARY KEY NOT NULL,
            environment TEXT NOT NULL CHECK (environment IN ('Production', 'Sandbox')),
            latest_transaction_id TEXT NOT NULL,
            product_id TEXT NOT NULL,
            period_started_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            transaction_signed_at INTEGER NOT NULL,
            revoked_at INTEGER,
            renewal_signed_at INTEGER,
            auto_renew INTEGER NOT NULL CHECK (auto_renew IN (0, 1)),
            auto_renew_product_id TEXT,
            in_billing_retry INTEGER NOT NULL CHECK (in_billing_retry IN (0, 1)),
            grace_period_expires_at INTEGER,
            signed_at INTEGER NOT NULL,
            stated_status TEXT CHECK (stated_status IN ('active', 'expired', 'billing_retry', 'grace_period', 'revoked')),
            source TEXT NOT NULL,
            checked_at INTEGER NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'expired', 'billing_retry', 'grace_period', 'revoked'))
        ) STRICT;
        CREATE INDEX appstore_subscriptions_renewing ON appstore_subscriptions (checked_at)
            WHERE status IN ('active', 'grace_period', 'billing_retry');
        """
}
