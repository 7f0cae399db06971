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

        /// Whether a person must look at it (everything but a repaired order).
        public var needsAttention: Bool { self != .settledFromBill }
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
