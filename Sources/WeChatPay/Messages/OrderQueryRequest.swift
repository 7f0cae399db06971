// SPDX-License-Identifier: Apache-2.0

/// `POST /pay/orderquery`: what WeChat knows about an order. The only trustworthy answer to "is it
/// paid?" besides a verified notify.
public struct OrderQueryRequest: WeChatPayRequest {
    public typealias Response = OrderQueryResponse
    public static var api: WeChatPayAPI { .orderQuery }

    public var order: OrderReference
    public var additionalFields: Fields

    public init(order: OrderReference, additionalFields: Fields = Fields()) {
        self.order = order
        self.additionalFields = additionalFields
    }

    /// Queries by the merchant's order number.
    public init(outTradeNo: String) {
        self.init(order: .outTradeNo(outTradeNo))
    }

    /// `transaction_id` wins when both identifiers are present, as WeChat documents.
    public init(fields: Fields) throws(WeChatPayMessageError) {
        let reader = FieldReader(fields)
        order = try OrderReference.read(from: reader)
        additionalFields = reader.additionalFields(excluding: OrderReference.fieldNames)
    }

    /// The answer must name the order asked about: the same out_trade_no, or the same
    /// transaction_id (which every answer about a paid order carries).
    public func mismatchedField(in response: OrderQueryResponse) -> String? {
        switch order {
        case .outTradeNo(let number): response.outTradeNo == number ? nil : "out_trade_no"
        case .transactionID(let id): response.transactionID == id ? nil : "transaction_id"
        }
    }

    public func businessFields() -> Fields {
        var writer = FieldWriter()
        writer.add(order.field.name, order.field.value)
        writer.addAdditional(additionalFields)
        return writer.fields
    }
}
