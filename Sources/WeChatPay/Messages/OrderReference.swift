// SPDX-License-Identifier: Apache-2.0

/// Which order a query, a close or a refund is about: WeChat's `transaction_id` or the merchant's
/// `out_trade_no`. Exactly one is sent.
public enum OrderReference: Sendable, Hashable {
    case transactionID(String)
    case outTradeNo(String)

    /// The field name and value that go on the wire.
    public var field: Fields.Field {
        switch self {
        case .transactionID(let id): Fields.Field(name: "transaction_id", value: id)
        case .outTradeNo(let number): Fields.Field(name: "out_trade_no", value: number)
        }
    }

    static let fieldNames: Set<String> = ["transaction_id", "out_trade_no"]

    /// Reads the reference of a received request: `transaction_id` wins when both are present, as
    /// WeChat documents; neither is `LACK_PARAMS` (reported as `out_trade_no`).
    static func read(from reader: FieldReader) throws(WeChatPayMessageError) -> OrderReference {
        if let id = try reader.optional("transaction_id", .alphanumeric(maxLength: 32)) { return .transactionID(id) }
        if let number = try reader.optional("out_trade_no", .merchantNumber(maxLength: 32)) { return .outTradeNo(number) }
        throw .missingField("out_trade_no")
    }
}
