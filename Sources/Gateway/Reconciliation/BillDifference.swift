// SPDX-License-Identifier: Apache-2.0

/// One way WeChat's bill and the local orders disagreed, or one order the comparison repaired.
public struct BillDifference: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Paid in the bill, not paid locally; orderquery confirmed it and it was settled (repaired).
        case settledFromBill = "settled_from_bill"
        /// Paid in the bill, not paid locally, and orderquery did not confirm it (or failed).
        case notConfirmed = "bill_paid_not_confirmed"
        /// The bill's amount is not the order's: never settled automatically.
        case amountMismatch = "amount_mismatch"
        /// Paid in both, under different transaction ids.
        case transactionMismatch = "transaction_id_mismatch"
        /// Paid locally on that Beijing day, but absent from the bill.
        case paidLocallyNotInBill = "paid_locally_absent_from_bill"
        /// An out_trade_no in the bill that this gateway never created.
        case unknownOrder = "unknown_out_trade_no"
        /// A refund line the bill shows SUCCESS, PROCESSING locally; refundquery confirmed it and it
        /// was settled (repaired).
        case refundSettledFromBill = "refund_settled_from_bill"
        /// A refund line the bill shows SUCCESS that refundquery did not confirm (or could not be asked).
        case refundNotConfirmed = "refund_bill_success_not_confirmed"
        /// A refund line for another order, amount or refund_id than the local refund, or a final
        /// state that contradicts it: never applied.
        case refundMismatch = "refund_mismatch"
        /// An out_refund_no in the bill that this gateway never requested (e.g. refunded by hand in
        /// the merchant platform).
        case unknownRefund = "unknown_out_refund_no"
        /// A refund WeChat accepted that day (it has a refund_id) that the bill does not list.
        case refundAbsentFromBill = "refund_absent_from_bill"

        /// Whether a person must look at it (everything but a repaired order).
        public var needsAttention: Bool { self != .settledFromBill && self != .refundSettledFromBill }
    }

    public var kind: Kind
    public var outTradeNo: String
    public var transactionID: String?
    /// Human-readable: amounts in yuan, states, what was done.
    public var detail: String

    public init(kind: Kind, outTradeNo: String, transactionID: String?, detail: String) {
        self.kind = kind
        self.outTradeNo = outTradeNo
        self.transactionID = transactionID
        self.detail = detail
    }
}
