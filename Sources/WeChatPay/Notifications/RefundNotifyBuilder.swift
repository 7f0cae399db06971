// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Builds a refund notify the way WeChat sends one (outer fields plus encrypted `req_info`), for the
/// simulator and for tests. Nonce and times are inputs.
///
/// ```swift
/// var builder = RefundNotifyBuilder(merchant: merchant, transactionID: "4200…", outTradeNo: "o1",
///                                   refundID: "5030…", outRefundNo: "r1", totalFee: 100,
///                                   refundFee: 100, nonce: nonce)
/// builder.successTime = refundedAt
/// let body = try FlatXML.encode(try builder.fields(encryptedWith: apiKey))
/// ```
public struct RefundNotifyBuilder: Sendable, Hashable {
    public var merchant: MerchantIdentity
    public var nonce: String
    public var transactionID: String
    public var outTradeNo: String
    public var refundID: String
    public var outRefundNo: String
    /// In fen.
    public var totalFee: Int
    /// In fen; defaults to `totalFee`.
    public var settlementTotalFee: Int
    /// In fen.
    public var refundFee: Int
    /// In fen; defaults to `refundFee`.
    public var settlementRefundFee: Int
    public var refundStatus: RefundNotification.Status = .success
    /// Written as `success_time`; left out when nil (WeChat sends it for successful refunds).
    public var successTime: Date?
    public var refundRecvAccount: String = "支付用户零钱"
    public var refundAccount: String = "REFUND_SOURCE_RECHARGE_FUNDS"
    public var refundRequestSource: String = "API"

    public init(
        merchant: MerchantIdentity, transactionID: String, outTradeNo: String, refundID: String,
        outRefundNo: String, totalFee: Int, refundFee: Int, nonce: String
    ) {
        self.merchant = merchant
        self.transactionID = transactionID
        self.outTradeNo = outTradeNo
        self.refundID = refundID
        self.outRefundNo = outRefundNo
        self.totalFee = totalFee
        self.settlementTotalFee = totalFee
        self.refundFee = refundFee
        self.settlementRefundFee = refundFee
        self.nonce = nonce
    }

    /// The plaintext `<root>` fields, in the order WeChat's example shows them.
    public var innerFields: Fields {
        var fields: Fields = [
            "out_refund_no": outRefundNo,
            "out_trade_no": outTradeNo,
            "refund_account": refundAccount,
            "refund_fee": String(refundFee),
            "refund_id": refundID,
            "refund_recv_accout": refundRecvAccount,
            "refund_request_source": refundRequestSource,
            "refund_status": refundStatus.rawValue,
            "settlement_refund_fee": String(settlementRefundFee),
            "settlement_total_fee": String(settlementTotalFee),
        ]
        if let successTime { fields["success_time"] = BeijingTime.formatWithSeparators(successTime) }
        fields["total_fee"] = String(totalFee)
        fields["transaction_id"] = transactionID
        return fields
    }

    /// The outer notify: `return_code`, `appid`, `mch_id`, `nonce_str` and the encrypted `req_info`.
    /// - Throws: when an inner value cannot be written as XML.
    public func fields(encryptedWith key: APIKey) throws(FlatXMLError) -> Fields {
        [
            "return_code": "SUCCESS",
            "appid": merchant.appID,
            "mch_id": merchant.mchID,
            "nonce_str": nonce,
            "req_info": try RefundReqInfo.encrypt(innerFields, key: key),
        ]
    }
}
