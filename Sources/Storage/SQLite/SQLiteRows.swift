// SPDX-License-Identifier: Apache-2.0
import Foundation

// Column lists and their decoders side by side: a query selects `columns` and decodes by position.

extension OrderRecord {
    static let columns: SQL = """
        out_trade_no, amount, description, client_ip, attach, user_id, product_id, sign_type, time_expire, \
        expires_at, created_at, state, transaction_id, paid_at, prepay_id, prepay_issued_at, parameters_digest, \
        last_notify_at, last_queried_at, flags, updated_at, channel, apple_product_id, app_account_token, \
        environment, apple_transaction_id, original_transaction_id
        """

    init(row: SQLiteRow) throws(StorageError) {
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
            originalTransactionID: try row.optionalText(26)
        )
    }

    /// Flags are stored sorted and comma-separated; a flag name cannot contain a comma.
    static func encodeFlags(_ flags: Set<OrderFlag>) -> String {
        flags.sorted().map(\.rawValue).joined(separator: ",")
    }

    static func decodeFlags(_ text: String) throws(StorageError) -> Set<OrderFlag> {
        var flags: Set<OrderFlag> = []
        for name in text.split(separator: ",") {
            guard let flag = OrderFlag(rawValue: String(name)) else { throw .unexpectedRow }
            flags.insert(flag)
        }
        return flags
    }
}

extension OrderEvent {
    static let columns: SQL = "id, out_trade_no, at, kind, detail"

    init(row: SQLiteRow) throws(StorageError) {
        self.init(
            id: try row.int64(0), outTradeNo: try row.text(1), at: try row.date(2), kind: try row.text(3),
            detail: try row.text(4))
    }
}

extension OutboxEvent {
    static let columns: SQL = """
        id, out_trade_no, type, payload, created_at, attempts, next_attempt_at, delivered_at, dead_at, last_error
        """

    init(row: SQLiteRow) throws(StorageError) {
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

extension Set<OrderState> {
    /// The set as a JSON array for `state IN (SELECT value FROM json_each(?))`: one bound
    /// parameter instead of SQL text that varies with the set. Raw values are fixed identifiers.
    var jsonArray: String {
        "[" + map { "\"\($0.rawValue)\"" }.sorted().joined(separator: ",") + "]"
    }
}
