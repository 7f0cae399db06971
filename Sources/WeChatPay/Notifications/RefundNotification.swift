// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A decrypted refund result notify.
///
/// A refund notify carries no `sign`: the only authentication is that `req_info` decrypts under our
/// key. Every typed field therefore comes from the decrypted document; the unsigned outer fields
/// are only checked (`return_code`, `appid`, `mch_id`), never used (yansongda/pay merged them over
/// the decrypted ones). ECB carries no integrity check either, so cross-check with refundquery
/// before anything irreversible.
///
/// ```swift
/// let outer = try RefundNotification.decode(body)
/// let refund = try RefundNotification.decrypt(outer, merchant: merchant, key: apiKey)
/// if refund.refundStatus == .success { … }
/// ```
public struct RefundNotification: Sendable, Hashable {
    /// `refund_status`: the refund's final result.
    public enum Status: String, Sendable, Hashable, CaseIterable {
        /// The money went back.
        case success = "SUCCESS"
        /// Abnormal (e.g. the user's card is frozen): needs manual handling in the merchant platform.
        case change = "CHANGE"
        /// Closed without refunding.
        case refundClose = "REFUNDCLOSE"
    }

    /// `transaction_id`: WeChat's order number.
    public let transactionID: String
    /// `out_trade_no`: our order number.
    public let outTradeNo: String
    /// `refund_id`: WeChat's refund number.
    public let refundID: String
    /// `out_refund_no`: our refund number.
    public let outRefundNo: String
    /// `total_fee`: the order amount in fen.
    public let totalFee: Int
    /// `settlement_total_fee`, in fen, when the order had recharge coupons.
    public let settlementTotalFee: Int?
    /// `refund_fee`: the amount refunded in fen.
    public let refundFee: Int
    /// `settlement_refund_fee`: the refund minus non-recharge coupons, in fen.
    public let settlementRefundFee: Int?
    /// `refund_status`.
    public let refundStatus: Status
    /// `success_time` as received (`yyyy-MM-dd HH:mm:ss`, Beijing time), for successful refunds.
    public let successTime: String?
    /// `success_time` as an instant.
    public let successDate: Date?
    /// `refund_recv_accout` (WeChat's spelling): where the money went, e.g. "支付用户零钱".
    public let refundRecvAccount: String?
    /// `refund_account`: `REFUND_SOURCE_RECHARGE_FUNDS` or `REFUND_SOURCE_UNSETTLED_FUNDS`.
    public let refundAccount: String?
    /// `refund_request_source`: `API` or `VENDOR_PLATFORM` (refunded by hand in the merchant platform).
    public let refundRequestSource: String?
    /// Every decrypted field.
    public let fields: Fields

    /// Parses a refund notify body with the strict XML codec.
    /// - Throws: `NotifyError.malformedXML`.
    public static func decode(_ body: some Collection<UInt8>) throws(NotifyError) -> Fields {
        try PaymentNotification.decode(body)
    }

    /// Checks the outer document and decrypts `req_info`.
    ///
    /// In order: `return_code` must be SUCCESS; `appid` and `mch_id` must be `merchant`'s;
    /// `req_info` must decrypt under `key` to a `<root>` document carrying the refund's numbers,
    /// whole fen amounts (`0 < refund_fee <= total_fee`), a known `refund_status` and, when present,
    /// a valid `success_time`.
    public static func decrypt(
        _ fields: Fields, merchant: MerchantIdentity, key: APIKey
    ) throws(NotifyError) -> RefundNotification {
        guard fields["return_code"] == "SUCCESS" else { throw .returnFail }
        guard fields["appid"] == merchant.appID else { throw .wrongAppID }
        guard fields["mch_id"] == merchant.mchID else { throw .wrongMchID }
        guard let reqInfo = fields.nonEmpty("req_info") else { throw .missingField("req_info") }
        return try RefundNotification(decrypted: RefundReqInfo.decrypt(reqInfo, key: key))
    }

    private init(decrypted fields: Fields) throws(NotifyError) {
        func required(_ name: StaticString) throws(NotifyError) -> String {
            guard let value = fields.nonEmpty(name.description) else { throw .missingField(name) }
            return value
        }
        func amount(_ name: StaticString) throws(NotifyError) -> Int? {
            guard let text = fields.nonEmpty(name.description) else { return nil }
            guard let value = NotifyAmount.fen(text) else { throw .invalidField(name) }
            return value
        }
        transactionID = try required("transaction_id")
        outTradeNo = try required("out_trade_no")
        refundID = try required("refund_id")
        outRefundNo = try required("out_refund_no")
        guard let totalFee = try amount("total_fee") else { throw .missingField("total_fee") }
        guard let refundFee = try amount("refund_fee") else { throw .missingField("refund_fee") }
        guard totalFee > 0 else { throw .invalidField("total_fee") }
        guard refundFee > 0, refundFee <= totalFee else { throw .invalidField("refund_fee") }
        self.totalFee = totalFee
        self.refundFee = refundFee
        settlementTotalFee = try amount("settlement_total_fee")
        settlementRefundFee = try amount("settlement_refund_fee")
        guard let status = Status(rawValue: try required("refund_status")) else { throw .invalidField("refund_status") }
        refundStatus = status
        successTime = fields.nonEmpty("success_time")
        if let successTime {
            guard let date = BeijingTime.parseWithSeparators( successTime) else { throw .invalidField("success_time") }
            successDate = date
        } else {
            successDate = nil
        }
        refundRecvAccount = fields.nonEmpty("refund_recv_accout")
        refundAccount = fields.nonEmpty("refund_account")
        refundRequestSource = fields.nonEmpty("refund_request_source")
        self.fields = fields
    }
}
