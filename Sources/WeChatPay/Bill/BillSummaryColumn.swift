// SPDX-License-Identifier: Apache-2.0

/// A column of the summary line at the end of a downloadbill file, recognised by its header name
/// like `BillColumn` (with the pre-2018 names 总交易额, 总退款金额, … as aliases).
public enum BillSummaryColumn: Sendable, Hashable {
    case tradeCount, settlementTotalFee, refundFee, couponRefundFee, serviceFee, totalFee, requestedRefundFee
    case other(String)

    /// The header name written by the renderer.
    public var header: String {
        switch self {
        case .tradeCount: "总交易单数"
        case .settlementTotalFee: "应结订单总金额"
        case .refundFee: "退款总金额"
        case .couponRefundFee: "充值券退款总金额"
        case .serviceFee: "手续费总金额"
        case .totalFee: "订单总金额"
        case .requestedRefundFee: "申请退款总金额"
        case .other(let name): name
        }
    }

    /// Recognises a summary header name, current or legacy.
    public init(header: String) {
        self = Self.byHeader[header] ?? .other(header)
    }

    static let required: [BillSummaryColumn] = [.tradeCount, .settlementTotalFee, .refundFee, .serviceFee]

    private static let known: [BillSummaryColumn] = [
        .tradeCount, .settlementTotalFee, .refundFee, .couponRefundFee, .serviceFee, .totalFee, .requestedRefundFee,
    ]

    private static let legacyNames: [String: BillSummaryColumn] = [
        "总交易额": .settlementTotalFee,
        "总退款金额": .refundFee,
        "总代金券或立减优惠退款金额": .couponRefundFee,
        "总企业红包退款金额": .couponRefundFee,
    ]

    private static let byHeader: [String: BillSummaryColumn] = {
        var map = legacyNames
        for column in known { map[column.header] = column }
        return map
    }()
}
