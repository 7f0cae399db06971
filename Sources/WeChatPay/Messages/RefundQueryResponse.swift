// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What refundquery reports: the order's amounts and its refunds, decoded from the indexed
/// `…_$n` fields (`$n` from 0 to `refund_count - 1`).
public struct RefundQueryResponse: WeChatPayResponse, Sendable, Hashable {
    /// One refund of the order.
    public struct Refund: Sendable, Hashable {
        public var outRefundNo: String
        public var refundID: String
        /// `ORIGINAL` (back to the payment method) or `BALANCE`, when reported.
        public var refundChannel: String?
        /// The amount applied for, in fen.
        public var refundFee: Int
        public var settlementRefundFee: Int?
        public var status: RefundStatus
        public var refundAccount: String?
        /// Where the money went (`refund_recv_accout_$n`, sic), e.g. "支付用户的零钱".
        public var refundRecvAccount: String?
        /// When the refund succeeded (`yyyy-MM-dd HH:mm:ss` Beijing time on the wire).
        public var successTime: Date?
        public var couponRefundFee: Int?

        public init(
            outRefundNo: String, refundID: String, refundChannel: String? = nil, refundFee: Int,
            settlementRefundFee: Int? = nil, status: RefundStatus, refundAccount: String? = nil,
            refundRecvAccount: String? = nil, successTime: Date? = nil, couponRefundFee: Int? = nil
        ) {
            self.outRefundNo = outRefundNo
            self.refundID = refundID
            self.refundChannel = refundChannel
            self.refundFee = refundFee
            self.settlementRefundFee = settlementRefundFee
            self.status = status
            self.refundAccount = refundAccount
            self.refundRecvAccount = refundRecvAccount
            self.successTime = successTime
            self.couponRefundFee = couponRefundFee
        }
    }

    public var transactionID: String
    public var outTradeNo: String
    /// The order's amount in fen.
    public var totalFee: Int
    public var settlementTotalFee: Int?
    public var feeType: String?
    public var cashFee: Int?
    /// Every refund of the order ever made, when WeChat says (paging with `offset`).
    public var totalRefundCount: Int?
    /// The refunds on this page, in index order.
    public var refunds: [Refund]
    /// Every field received, known or not (coupon details per refund included), in document order.
    public var fields: Fields

    public init(
        transactionID: String, outTradeNo: String, totalFee: Int, settlementTotalFee: Int? = nil,
        feeType: String? = nil, cashFee: Int? = nil, totalRefundCount: Int? = nil, refunds: [Refund]
    ) {
        self.transactionID = transactionID
        self.outTradeNo = outTradeNo
        self.totalFee = totalFee
        self.settlementTotalFee = settlementTotalFee
        self.feeType = feeType
        self.cashFee = cashFee
        self.totalRefundCount = totalRefundCount
        self.refunds = refunds
        fields = Fields()
        fields = businessFields()
    }

    public init(verifiedFields: Fields) throws(WeChatPayMessageError) {
        let reader = FieldReader(verifiedFields)
        transactionID = try reader.required("transaction_id")
        outTradeNo = try reader.required("out_trade_no")
        totalFee = try reader.requiredAmount("total_fee")
        settlementTotalFee = try reader.optionalAmount("settlement_total_fee")
        feeType = try reader.optional("fee_type")
        cashFee = try reader.optionalAmount("cash_fee")
        totalRefundCount = try reader.optionalAmount("total_refund_count")
        guard let count = try reader.optionalCount("refund_count") else { throw .missingField("refund_count") }
        var refunds: [Refund] = []
        for n in 0..<count {
            refunds.append(Refund(
                outRefundNo: try reader.required("out_refund_no_\(n)"),
                refundID: try reader.required("refund_id_\(n)"),
                refundChannel: try reader.optional("refund_channel_\(n)"),
                refundFee: try reader.requiredAmount("refund_fee_\(n)"),
                settlementRefundFee: try reader.optionalAmount("settlement_refund_fee_\(n)"),
                status: RefundStatus(rawValue: try reader.required("refund_status_\(n)")),
                refundAccount: try reader.optional("refund_account_\(n)"),
                refundRecvAccount: try reader.optional("refund_recv_accout_\(n)"),
                successTime: try reader.optionalTimeWithSeparators("refund_success_time_\(n)"),
                couponRefundFee: try reader.optionalAmount("coupon_refund_fee_\(n)")))
        }
        self.refunds = refunds
        fields = verifiedFields
    }

    /// The response's own fields for a server to send (wrap them with ``ResponseEnvelope``).
    public func businessFields() -> Fields {
        var writer = FieldWriter()
        writer.add("transaction_id", transactionID)
        writer.add("out_trade_no", outTradeNo)
        writer.add("total_fee", totalFee)
        writer.add("settlement_total_fee", settlementTotalFee)
        writer.add("fee_type", feeType)
        writer.add("cash_fee", cashFee)
        writer.add("total_refund_count", totalRefundCount)
        writer.add("refund_count", refunds.count)
        for (n, refund) in refunds.enumerated() {
            writer.add("out_refund_no_\(n)", refund.outRefundNo)
            writer.add("refund_id_\(n)", refund.refundID)
            writer.add("refund_channel_\(n)", refund.refundChannel)
            writer.add("refund_fee_\(n)", refund.refundFee)
            writer.add("settlement_refund_fee_\(n)", refund.settlementRefundFee)
            writer.add("coupon_refund_fee_\(n)", refund.couponRefundFee)
            writer.add("refund_status_\(n)", refund.status.rawValue)
            writer.add("refund_account_\(n)", refund.refundAccount)
            writer.add("refund_recv_accout_\(n)", refund.refundRecvAccount)
            writer.add("refund_success_time_\(n)", timeWithSeparators: refund.successTime)
        }
        return writer.fields
    }
}
