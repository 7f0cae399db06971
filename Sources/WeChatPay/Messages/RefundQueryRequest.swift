// SPDX-License-Identifier: Apache-2.0

/// `POST /pay/refundquery`: the state of one refund, or of every refund of an order.
///
/// Only one identifier is sent, chosen by WeChat's precedence (see ``RefundQueryIdentifier``).
/// By order, WeChat returns ten refunds per page; ``offset`` pages further.
public struct RefundQueryRequest: WeChatPayRequest {
    public typealias Response = RefundQueryResponse
    public static var api: WeChatPayAPI { .refundQuery }

    public var identifier: RefundQueryIdentifier
    /// Index of the first refund returned when querying an order's refunds.
    public var offset: Int?
    public var additionalFields: Fields

    public init(_ identifier: RefundQueryIdentifier, offset: Int? = nil, additionalFields: Fields = Fields()) {
        self.identifier = identifier
        self.offset = offset
        self.additionalFields = additionalFields
    }

    /// Reads the identifier by precedence; the losing identifiers are ignored, not kept.
    public init(fields: Fields) throws(WeChatPayMessageError) {
        let reader = FieldReader(fields)
        identifier = try RefundQueryIdentifier.read(from: reader)
        offset = try reader.optionalAmount("offset")
        additionalFields = reader.additionalFields(excluding: RefundQueryIdentifier.fieldNames.union(["offset"]))
    }

    public func businessFields() -> Fields {
        var writer = FieldWriter()
        writer.add(identifier.field.name, identifier.field.value)
        writer.add("offset", offset)
        writer.addAdditional(additionalFields)
        return writer.fields
    }
}
