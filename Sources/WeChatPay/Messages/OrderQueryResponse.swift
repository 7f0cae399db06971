// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What orderquery reports about an order.
///
/// WeChat returns the payment details only when `trade_state` is SUCCESS (otherwise just
/// `out_trade_no` and maybe `attach`). So for ``TradeState/success`` the decoder requires
/// `transaction_id` and `total_fee`: a "paid" answer without an amount to compare is refused rather
/// than settled.
public struct OrderQueryResponse: WeChatPayResponse, Sendable, Hashable {
    public var tradeState: TradeState
    public var outTradeNo: String
    public var transactionID: String?
    /// The order amount in fen; always present when ``tradeState`` is ``TradeState/success``.
    public var totalFee: Int?
    public var settlementTotalFee: Int?
    public var feeType: String?
    /// What the payer actually paid in fen (total minus coupons).
    public var cashFee: Int?
    public var cashFeeType: String?
    public var couponFee: Int?
    public var coupons: [Coupon]
    public var tradeType: TradeType?
    public var openID: String?
    public var isSubscribe: String?
    public var bankType: String?
    public var attach: String?
    /// When the payment completed.
    public var timeEnd: Date?
    public var tradeStateDesc: String?
    public var deviceInfo: String?
    /// Every field received, known or not, in document order.
    public var fields: Fields

    public init(
        tradeState: TradeState, outTradeNo: String, transactionID: String? = nil, totalFee: Int? = nil,
        settlementTotalFee: Int? = nil, feeType: String? = nil, cashFee: Int? = nil, cashFeeType: String? = nil,
        couponFee: Int? = nil, coupons: [Coupon] = [], tradeType: TradeType? = nil, openID: String? = nil,
        isSubscribe: String? = nil, bankType: String? = nil, attach: String? = nil, timeEnd: Date? = nil,
        tradeStateDesc: String? = nil, deviceInfo: String? = nil
    ) {
        self.tradeState = tradeState
        self.outTradeNo = outTradeNo
        self.transactionID = transactionID
        self.totalFee = totalFee
        self.settlementTotalFee = settlementTotalFee
        self.feeType = feeType
        self.cashFee = cashFee
        self.cashFeeType = cashFeeType
        self.couponFee = couponFee
        self.coupons = coupons
        self.tradeType = tradeType
        self.openID = openID
        self.isSubscribe = isSubscribe
        self.bankType = bankType
        self.attach = attach
        self.timeEnd = timeEnd
        self.tradeStateDesc = tradeStateDesc
        self.deviceInfo = deviceInfo
        fields = Fields()
        fields = businessFields()
    }

    public init(verifiedFields: Fields) throws(WeChatPayMessageError) {
        let reader = FieldReader(verifiedFields)
        tradeState = TradeState(rawValue: try reader.required("trade_state"))
        outTradeNo = try reader.required("out_trade_no")
        let paid = tradeState == .success
        transactionID = paid ? try reader.required("transaction_id") : try reader.optional("transaction_id")
        totalFee = paid ? try reader.requiredAmount("total_fee") : try reader.optionalAmount("total_fee")
        settlementTotalFee = try reader.optionalAmount("settlement_total_fee")
        feeType = try reader.optional("fee_type")
        cashFee = try reader.optionalAmount("cash_fee")
        cashFeeType = try reader.optional("cash_fee_type")
        couponFee = try reader.optionalAmount("coupon_fee")
        coupons = try Coupon.readAll(from: reader)
        tradeType = try reader.optional("trade_type").map(TradeType.init(rawValue:))
        openID = try reader.optional("openid")
        isSubscribe = try reader.optional("is_subscribe")
        bankType = try reader.optional("bank_type")
        attach = try reader.optional("attach")
        timeEnd = try reader.optionalTime("time_end")
        tradeStateDesc = try reader.optional("trade_state_desc")
        deviceInfo = try reader.optional("device_info")
        fields = verifiedFields
    }

    /// The response's own fields for a server to send (wrap them with ``ResponseEnvelope``).
    public func businessFields() -> Fields {
        var writer = FieldWriter()
        writer.add("device_info", deviceInfo)
        writer.add("openid", openID)
        writer.add("is_subscribe", isSubscribe)
        writer.add("trade_type", tradeType?.rawValue)
        writer.add("trade_state", tradeState.rawValue)
        writer.add("bank_type", bankType)
        writer.add("total_fee", totalFee)
        writer.add("settlement_total_fee", settlementTotalFee)
        writer.add("fee_type", feeType)
        writer.add("cash_fee", cashFee)
        writer.add("cash_fee_type", cashFeeType)
        writer.add("coupon_fee", couponFee)
        Coupon.write(coupons, to: &writer)
        writer.add("transaction_id", transactionID)
        writer.add("out_trade_no", outTradeNo)
        writer.add("attach", attach)
        writer.add("time_end", time: timeEnd)
        writer.add("trade_state_desc", tradeStateDesc)
        return writer.fields
    }
}
