// SPDX-License-Identifier: Apache-2.0

/// `POST /secapi/pay/refund` (client certificate): asks WeChat to refund part or all of a paid
/// order. Success means *accepted*; the result comes from refundquery or the refund notify.
///
/// Retry rule: after `SYSTEMERROR`, `BIZERR_NEED_RETRY` or a timeout, resend with the same
/// `out_refund_no` and the same amounts; the same `out_refund_no` never refunds twice.
public struct RefundRequest: WeChatPayRequest {
    public typealias Response = RefundResponse
    public static var api: WeChatPayAPI { .refund }

    public var order: OrderReference
    /// The merchant's refund number: at most 64 of `[0-9A-Za-z_-|*@]`.
    public var outRefundNo: String
    /// The order's total amount in fen.
    public var totalFee: Int
    /// The amount to refund in fen: positive, at most ``totalFee``.
    public var refundFee: Int
    public var refundFeeType: String?
    /// Shown to the payer, at most 80 characters.
    public var refundDescription: String?
    public var refundAccount: RefundAccount?
    /// Overrides the refund-notify URL configured in the merchant platform.
    public var notifyURL: String?
    public var additionalFields: Fields

    public init(
        order: OrderReference, outRefundNo: String, totalFee: Int, refundFee: Int, refundFeeType: String? = nil,
        refundDescription: String? = nil, refundAccount: RefundAccount? = nil, notifyURL: String? = nil,
        additionalFields: Fields = Fields()
    ) {
        self.order = order
        self.outRefundNo = outRefundNo
        self.totalFee = totalFee
        self.refundFee = refundFee
        self.refundFeeType = refundFeeType
        self.refundDescription = refundDescription
        self.refundAccount = refundAccount
        self.notifyURL = notifyURL
        self.additionalFields = additionalFields
    }

    private static let knownFields: Set<String> = OrderReference.fieldNames.union([
        "out_refund_no", "total_fee", "refund_fee", "refund_fee_type", "refund_desc", "refund_account", "notify_url",
    ])

    public init(fields: Fields) throws(WeChatPayMessageError) {
        let reader = FieldReader(fields)
        order = try OrderReference.read(from: reader)
        outRefundNo = try reader.required("out_refund_no", .merchantNumber(maxLength: 64))
        totalFee = try reader.requiredAmount("total_fee", positive: true)
        refundFee = try reader.requiredAmount("refund_fee", positive: true)
        guard refundFee <= totalFee else { throw .invalidField("refund_fee") }
        refundFeeType = try reader.optional("refund_fee_type", .currency)
        refundDescription = try reader.optional("refund_desc", .text(maxLength: 80))
        refundAccount = try reader.optionalEnum("refund_account", as: RefundAccount.self)
        notifyURL = try reader.optional("notify_url", .notifyURL)
        additionalFields = reader.additionalFields(excluding: Self.knownFields)
    }

    /// The answer must name this refund of this order.
    public func mismatchedField(in response: RefundResponse) -> String? {
        if response.outRefundNo != outRefundNo { return "out_refund_no" }
        switch order {
        case .outTradeNo(let number): return response.outTradeNo == number ? nil : "out_trade_no"
        case .transactionID(let id): return response.transactionID == id ? nil : "transaction_id"
        }
    }

    public func businessFields() -> Fields {
        var writer = FieldWriter()
        writer.add(order.field.name, order.field.value)
        writer.add("out_refund_no", outRefundNo)
        writer.add("total_fee", totalFee)
        writer.add("refund_fee", refundFee)
        writer.add("refund_fee_type", refundFeeType)
        writer.add("refund_desc", refundDescription)
        writer.add("refund_account", refundAccount?.rawValue)
        writer.add("notify_url", notifyURL)
        writer.addAdditional(additionalFields)
        return writer.fields
    }
}
