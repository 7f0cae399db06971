// SPDX-License-Identifier: Apache-2.0

/// What a refundquery looks up. WeChat's precedence is `refund_id` > `out_refund_no` >
/// `transaction_id` > `out_trade_no`, and only the winning identifier is sent.
public enum RefundQueryIdentifier: Sendable, Hashable {
    /// One refund, by WeChat's refund number.
    case refundID(String)
    /// One refund, by the merchant's refund number.
    case outRefundNo(String)
    /// Every refund of an order, by WeChat's order number.
    case transactionID(String)
    /// Every refund of an order, by the merchant's order number.
    case outTradeNo(String)

    /// Picks the identifier WeChat would use among those given (empty strings count as absent).
    /// - Returns: nil when none is given.
    public static func byPrecedence(
        refundID: String? = nil, outRefundNo: String? = nil, transactionID: String? = nil, outTradeNo: String? = nil
    ) -> RefundQueryIdentifier? {
        if let refundID, !refundID.isEmpty { return .refundID(refundID) }
        if let outRefundNo, !outRefundNo.isEmpty { return .outRefundNo(outRefundNo) }
        if let transactionID, !transactionID.isEmpty { return .transactionID(transactionID) }
        if let outTradeNo, !outTradeNo.isEmpty { return .outTradeNo(outTradeNo) }
        return nil
    }

    /// The field name and value that go on the wire.
    public var field: Fields.Field {
        switch self {
        case .refundID(let value): Fields.Field(name: "refund_id", value: value)
        case .outRefundNo(let value): Fields.Field(name: "out_refund_no", value: value)
        case .transactionID(let value): Fields.Field(name: "transaction_id", value: value)
        case .outTradeNo(let value): Fields.Field(name: "out_trade_no", value: value)
        }
    }

    static let fieldNames: Set<String> = ["refund_id", "out_refund_no", "transaction_id", "out_trade_no"]

    /// Reads a received request's identifier by precedence, validating only the winner (the others
    /// are ignored, as WeChat ignores them).
    static func read(from reader: FieldReader) throws(WeChatPayMessageError) -> RefundQueryIdentifier {
        if let value = try reader.optional("refund_id", .alphanumeric(maxLength: 32)) { return .refundID(value) }
        if let value = try reader.optional("out_refund_no", .merchantNumber(maxLength: 64)) { return .outRefundNo(value) }
        if let value = try reader.optional("transaction_id", .alphanumeric(maxLength: 32)) { return .transactionID(value) }
        if let value = try reader.optional("out_trade_no", .merchantNumber(maxLength: 32)) { return .outTradeNo(value) }
        throw .missingField("out_trade_no")
    }
}
