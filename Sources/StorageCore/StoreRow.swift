// SPDX-License-Identifier: Apache-2.0
import Foundation

/// One result row as both stores read it: typed accessors by column position, each throwing
/// `unexpectedRow` when the value does not have the type the schema promises.
///
/// The two stores name their columns the same way and select them in the same order (`columns`
/// below), so a record is decoded by one initializer whichever database it came from.
@usableFromInline
package protocol StoreRow {
    func isNull(_ column: Int32) -> Bool
    func int64(_ column: Int32) throws(StorageError) -> Int64
    func text(_ column: Int32) throws(StorageError) -> String
    /// Nil for NULL (a requirement, so that a row can ask the column's type once).
    func optionalText(_ column: Int32) throws(StorageError) -> String?
    /// An integer the statement itself guarantees (a NOT NULL column of a STRICT table, one its
    /// WHERE or its index's condition requires, a CASE with an ELSE of integers): read without
    /// asking its type first, which was a third of the calls a hundred-row read made.
    func guaranteedInt64(_ column: Int32) throws(StorageError) -> Int64
    func date(_ column: Int32) throws(StorageError) -> Date
}

extension StoreRow {
    @inlinable
    package func int(_ column: Int32) throws(StorageError) -> Int {
        Int(try int64(column))
    }

    package func optionalInt64(_ column: Int32) throws(StorageError) -> Int64? {
        isNull(column) ? nil : try int64(column)
    }

    package func optionalDate(_ column: Int32) throws(StorageError) -> Date? {
        isNull(column) ? nil : try date(column)
    }
}

// Column lists and their decoders side by side: a query selects `columns` and decodes by position.

extension OrderRecord {
    /// What an INSERT of a new order names: every column but what only a payment sets later
    /// through the door (`apple_quantity`).
    package static let insertColumns: SQL = """
        out_trade_no, amount, description, client_ip, attach, user_id, product_id, sign_type, time_expire, \
        expires_at, created_at, state, transaction_id, paid_at, prepay_id, prepay_issued_at, parameters_digest, \
        last_notify_at, last_queried_at, flags, updated_at, channel, apple_product_id, app_account_token, \
        environment, apple_transaction_id, original_transaction_id, currency, api_version, \
        app, app_id, trade_type, openid, code_url, mweb_url
        """
    /// What a read selects and `init(row:)` decodes.
    package static let columns: SQL = insertColumns + ", apple_quantity"

    package init(row: some StoreRow) throws(StorageError) {
        guard let state = OrderState(rawValue: try row.text(11)), let channel = OrderChannel(rawValue: try row.text(21))
        else { throw .unexpectedRow }
        self.init(
            outTradeNo: try row.text(0),
            amount: try row.int(1),
            description: try row.text(2),
            clientIP: try row.text(3),
            attach: try row.optionalText(4),
            userID: try row.optionalText(5),
            productID: try row.optionalText(6),
            signType: try row.text(7),
            timeExpire: try row.text(8),
            expiresAt: try row.date(9),
            createdAt: try row.date(10),
            state: state,
            transactionID: try row.optionalText(12),
            paidAt: try row.optionalDate(13),
            prepayID: try row.optionalText(14),
            prepayIssuedAt: try row.optionalDate(15),
            parametersDigest: try row.text(16),
            lastNotifyAt: try row.optionalDate(17),
            lastQueriedAt: try row.optionalDate(18),
            flags: try Self.decodeFlags(row.text(19)),
            updatedAt: try row.date(20),
            channel: channel,
            appleProductID: try row.optionalText(22),
            appAccountToken: try row.optionalText(23),
            environment: try row.optionalText(24),
            appleTransactionID: try row.optionalText(25),
            originalTransactionID: try row.optionalText(26),
            currency: try row.optionalText(27),
            apiVersion: try row.text(28),
            app: try row.optionalText(29),
            appID: try row.optionalText(30),
            tradeType: try row.optionalText(31),
            openID: try row.optionalText(32),
            codeURL: try row.optionalText(33),
            mwebURL: try row.optionalText(34),
            appleQuantity: try row.optionalInt64(35).map { Int($0) }
        )
    }

    /// Flags are stored sorted and comma-separated; a flag name cannot contain a comma.
    package static func encodeFlags(_ flags: Set<OrderFlag>) -> String {
        flags.sorted().map(\.rawValue).joined(separator: ",")
    }

    package static func decodeFlags(_ text: String) throws(StorageError) -> Set<OrderFlag> {
        var flags: Set<OrderFlag> = []
        for name in text.split(separator: ",") {
            guard let flag = OrderFlag(rawValue: String(name)) else { throw .unexpectedRow }
            flags.insert(flag)
        }
        return flags
    }
}

extension OrderEvent {
    package static let columns: SQL = "id, out_trade_no, at, kind, detail"

    package init(row: some StoreRow) throws(StorageError) {
        self.init(
            id: try row.int64(0), outTradeNo: try row.text(1), at: try row.date(2), kind: try row.text(3),
            detail: try row.text(4))
    }
}

extension OutboxEvent {
    package static let columns: SQL = """
        id, out_trade_no, type, payload, created_at, attempts, next_attempt_at, delivered_at, dead_at, last_error
        """

    package init(row: some StoreRow) throws(StorageError) {
        self.init(
            id: try row.text(0),
            outTradeNo: try row.text(1),
            type: try row.text(2),
            payload: try row.text(3),
            createdAt: try row.date(4),
            attempts: try row.int(5),
            nextAttemptAt: try row.date(6),
            deliveredAt: try row.optionalDate(7),
            deadAt: try row.optionalDate(8),
            lastError: try row.optionalText(9)
        )
    }
}

extension RefundRecord {
    package static let columns: SQL = """
        out_refund_no, out_trade_no, amount, total_fee, reason, notify_url, parameters_digest, state, refund_id, \
        failure_reason, created_at, accepted_at, succeeded_at, updated_at, last_queried_at, last_notify_at
        """

    /// The columns a new refund is inserted with (state is written as a literal).
    package static let insertColumns: SQL = """
        out_refund_no, out_trade_no, amount, total_fee, reason, notify_url, parameters_digest, state, created_at, updated_at
        """

    package init(row: some StoreRow) throws(StorageError) {
        guard let state = RefundState(rawValue: try row.text(7)) else { throw .unexpectedRow }
        self.init(
            outRefundNo: try row.text(0), outTradeNo: try row.text(1), amount: try row.int(2), totalFee: try row.int(3),
            reason: try row.text(4), notifyURL: try row.optionalText(5), parametersDigest: try row.text(6), state: state,
            refundID: try row.optionalText(8), failureReason: try row.optionalText(9), createdAt: try row.date(10),
            acceptedAt: try row.optionalDate(11), succeededAt: try row.optionalDate(12), updatedAt: try row.date(13),
            lastQueriedAt: try row.optionalDate(14), lastNotifyAt: try row.optionalDate(15))
    }
}

/// Times are kept as whole milliseconds since 1970 in both stores.
package enum StoreTime {
    /// Rounds to the nearest millisecond, so that a stored value read back and stored again is
    /// unchanged (truncating would drift down by one whenever the Double lands just below).
    package static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    package static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
