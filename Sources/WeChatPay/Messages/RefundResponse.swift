// SPDX-License-Identifier: Apache-2.0

/// The answer to an accepted refund: WeChat's `refund_id` and the amounts. Acceptance is not
/// completion; follow up with refundquery or the refund notify.
public struct RefundResponse: WeChatPayResponse, Sendable, Hashable {
    public var transactionID: String
    public var outTradeNo: String
    public var outRefundNo: String
    public var refundID: String
    /// The refunded amount in fen.
    public var refundFee: Int
    public var settlementRefundFee: Int?
    /// The order's amount in fen.
    public var totalFee: Int
    public var settlementTotalFee: Int?
    public var feeType: String?
    public var cashFee: Int
    public var cashFeeType: String?
    public var cashRefundFee: Int?
    public var couponRefundFee: Int?
    public var couponRefundCount: Int?
    /// Every field received, known or not (including the `coupon_*_$n` details), in document order.
    public var fields: Fields

    public init(
        transactionID: String, outTradeNo: String, outRefundNo: String, refundID: String, refundFee: Int,
        settlementRefundFee: Int? = nil, totalFee: Int, settlementTotalFee: Int? = nil, feeType: String? = nil,
        cashFee: Int, cashFeeType: String? = nil, cashRefundFee: Int? = nil, couponRefundFee: Int? = nil,
        couponRefundCount: Int? = nil
    ) {
        self.transactionID = transactionID
        self.outTradeNo = outTradeNo
        self.outRefundNo = outRefundNo
        self.refundID = refundID
        self.refundFee = refundFee
        self.settlementRefundFee = settlementRefundFee
        self.totalFee = totalFee
        self.settlementTotalFee = settlementTotalFee
        self.feeType = feeType
        self.cashFee = cashFee
        self.cashFeeType = cashFeeType
        self.cashRefundFee = cashRefundFee
        self.couponRefundFee = couponRefundFee
        self.couponRefundCount = couponRefundCount
        fields = Fields()
        fields = businessFields()
    }

    public init(verifiedFields: Fields) throws(WeChatPayMessageError) {
        let reader = FieldReader(verifiedFields)
        transactionID = try reader.required("transaction_id")
        outTradeNo = try reader.required("out_trade_no")
        outRefundNo = try reader.required("out_refund_no")
        refundID = try reader.required("refund_id")
        refundFee = try reader.requiredAmount("refund_fee")
        settlementRefundFee = try reader.optionalAmount("settlement_refund_fee")
        totalFee = try reader.requiredAmount("total_fee")
        settlementTotalFee = try reader.optionalAmount("settlement_total_fee")
        feeType = try reader.optional("fee_type")
        cashFee = try reader.requiredAmount("cash_fee")
        cashFeeType = try reader.optional("cash_fee_type")
        cashRefundFee = try reader.optionalAmount("cash_refund_fee")
        couponRefundFee = try reader.optionalAmount("coupon_refund_fee")
        couponRefundCount = try reader.optionalCount("coupon_refund_count")
        fields = verifiedFields
    }

    /// The response's own fields for a server to send (wrap them with ``ResponseEnvelope``).
    public func businessFields() -> Fields {
        var writer = FieldWriter()
        writer.add("transaction_id", transactionID)
        writer.add("out_trade_no", outTradeNo)
        writer.add("out_refund_no", outRefundNo)
        writer.add("refund_id", refundID)
        writer.add("refund_fee", refundFee)
        writer.add("settlement_refund_fee", settlementRefundFee)
        writer.add("total_fee", totalFee)
        writer.add("settlement_total_fee", settlementTotalFee)
        writer.add("fee_type", feeType)
        writer.add("cash_fee", cashFee)
        writer.add("cash_fee_type", cashFeeType)
        writer.add("cash_refund_fee", cashRefundFee)
        writer.add("coupon_refund_fee", couponRefundFee)
        writer.add("coupon_refund_count", couponRefundCount)
        return writer.fields
    }
}
