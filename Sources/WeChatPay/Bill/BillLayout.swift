// SPDX-License-Identifier: Apache-2.0

/// The columns of a bill file, in order: the detail header and the summary header.
///
/// Parsing records the layout it found; rendering writes the layout it is given. The three
/// presets are the current (免充值券) layouts of `bill_type` ALL, SUCCESS and REFUND.
public struct BillLayout: Sendable, Hashable {
    public var columns: [BillColumn]
    public var summaryColumns: [BillSummaryColumn]

    public init(columns: [BillColumn], summaryColumns: [BillSummaryColumn] = BillLayout.all.summaryColumns) {
        self.columns = columns
        self.summaryColumns = summaryColumns
    }

    private static let leading: [BillColumn] = [
        .tradeTime, .appID, .mchID, .subMchID, .deviceInfo, .transactionID, .outTradeNo, .openid,
        .tradeType, .tradeState, .bankType, .feeType, .settlementTotalFee, .couponFee,
    ]

    private static let summary: [BillSummaryColumn] = [
        .tradeCount, .settlementTotalFee, .refundFee, .couponRefundFee, .serviceFee, .totalFee, .requestedRefundFee,
    ]

    /// `bill_type=ALL`: every order of the day, payments and refunds.
    public static let all = BillLayout(
        columns: leading + [
            .refundID, .outRefundNo, .refundFee, .couponRefundFee, .refundType, .refundStatus,
            .body, .attach, .serviceFee, .rate, .totalFee, .requestedRefundFee, .rateNote,
        ],
        summaryColumns: summary)

    /// `bill_type=SUCCESS`: successful payments only, no refund columns.
    public static let success = BillLayout(
        columns: leading + [.body, .attach, .serviceFee, .rate, .totalFee, .rateNote],
        summaryColumns: summary)

    /// `bill_type=REFUND`: refunds, with their application and success times.
    public static let refund = BillLayout(
        columns: leading + [
            .refundApplyTime, .refundSuccessTime, .refundID, .outRefundNo, .refundFee, .couponRefundFee,
            .refundType, .refundStatus, .body, .attach, .serviceFee, .rate, .totalFee, .requestedRefundFee, .rateNote,
        ],
        summaryColumns: summary)
}
