// SPDX-License-Identifier: Apache-2.0

/// `POST /pay/closeorder`: stops an unpaid order from being paid. WeChat asks for at least five
/// minutes between creating and closing an order; the caller's schedule owns that rule.
public struct CloseOrderRequest: WeChatPayRequest {
    public typealias Response = CloseOrderResponse
    public static var api: WeChatPayAPI { .closeOrder }

    public var outTradeNo: String
    public var additionalFields: Fields

    public init(outTradeNo: String, additionalFields: Fields = Fields()) {
        self.outTradeNo = outTradeNo
        self.additionalFields = additionalFields
    }

    public init(fields: Fields) throws(WeChatPayMessageError) {
        let reader = FieldReader(fields)
        outTradeNo = try reader.required("out_trade_no", .merchantNumber(maxLength: 32))
        additionalFields = reader.additionalFields(excluding: ["out_trade_no"])
    }

    public func businessFields() -> Fields {
        var writer = FieldWriter()
        writer.add("out_trade_no", outTradeNo)
        writer.addAdditional(additionalFields)
        return writer.fields
    }
}
