// SPDX-License-Identifier: Apache-2.0
import Foundation

// The App Store tables' column lists and decoders, one for both stores (see StoreRow.swift).

extension AppleTransactionRecord {
    package static let columns: SQL = """
        transaction_id, original_transaction_id, product_id, environment, app_account_token, purchase_date, \
        revocation_date, out_trade_no, matched_by, source, first_seen_at, credited_at, updated_at, price, currency, \
        storefront, refund_reversed_at, quantity, transaction_reason
        """

    package init(row: some StoreRow) throws(StorageError) {
        let matchedBy = try row.optionalText(8)
        let match = try matchedBy.map { text throws(StorageError) in
            guard let match = AppleMatch(rawValue: text) else { throw StorageError.unexpectedRow }
            return match
        }
        self.init(
            facts: AppleTransactionFacts(
                transactionID: try row.text(0), originalTransactionID: try row.text(1), productID: try row.text(2),
                environment: try row.text(3), appAccountToken: try row.optionalText(4), purchaseDate: try row.date(5),
                revocationDate: try row.optionalDate(6), price: try row.optionalInt64(13), currency: try row.optionalText(14),
                storefront: try row.optionalText(15), quantity: try row.optionalInt64(17).map { Int($0) },
                renewal: try AppleTransactionFacts.renewal(transactionReason: try row.optionalText(18))),
            outTradeNo: try row.optionalText(7), matchedBy: match, source: try row.text(9), firstSeenAt: try row.date(10),
            creditedAt: try row.optionalDate(11), updatedAt: try row.date(12), refundReversedAt: try row.optionalDate(16))
    }

    /// The `DO UPDATE SET` of the ledger's insert, in both stores: what a later piece of evidence
    /// fills in a row that did not have it — the count, what Apple charged (price and currency
    /// together), the storefront, Apple's reason for a subscription's transaction. Nothing known is replaced; only evidence that gives a count
    /// agreeing with the row's and names the same product, environment and token fills anything
    /// (a charge without a count, or with another, could be another count's:
    /// `AppleTransactionFacts.fillsIn`); a row with nothing to fill is not written.
    package static let ledgerFill: SQL = """
            quantity = COALESCE(apple_transactions.quantity, excluded.quantity),
            currency = CASE WHEN apple_transactions.price IS NULL AND excluded.price IS NOT NULL THEN excluded.currency
                ELSE apple_transactions.currency END,
            price = COALESCE(apple_transactions.price, excluded.price),
            storefront = COALESCE(apple_transactions.storefront, excluded.storefront),
            transaction_reason = COALESCE(apple_transactions.transaction_reason, excluded.transaction_reason)
        WHERE excluded.quantity IS NOT NULL
            AND (apple_transactions.quantity IS NULL OR apple_transactions.quantity = excluded.quantity)
            AND excluded.product_id = apple_transactions.product_id AND excluded.environment = apple_transactions.environment
            AND (excluded.app_account_token IS NULL OR apple_transactions.app_account_token IS NULL
                OR excluded.app_account_token = apple_transactions.app_account_token)
            AND (apple_transactions.quantity IS NULL OR (apple_transactions.price IS NULL AND excluded.price IS NOT NULL)
                OR (apple_transactions.storefront IS NULL AND excluded.storefront IS NOT NULL)
                OR (apple_transactions.transaction_reason IS NULL AND excluded.transaction_reason IS NOT NULL))
        """
}

extension AppleAnchor {
    package init(row: some StoreRow) throws(StorageError) {
        self.init(userID: try row.text(0), transactionID: try row.text(1), environment: try row.text(2))
    }
}

extension AppStoreNotificationRecord {
    package static let columns: SQL = """
        notification_uuid, notification_type, subtype, environment, transaction_id, signed_date, received_at, outcome
        """

    package init(row: some StoreRow) throws(StorageError) {
        self.init(
            notificationUUID: try row.text(0), notificationType: try row.text(1), subtype: try row.optionalText(2),
            environment: try row.text(3), transactionID: try row.optionalText(4), signedDate: try row.date(5),
            receivedAt: try row.date(6), outcome: try row.text(7))
    }
}

extension AppStoreNotificationRecord {
    package func validate() throws(StorageError) {
        try StoreText.validate(notificationUUID, notificationType, subtype, environment, transactionID, outcome)
    }
}
