// SPDX-License-Identifier: Apache-2.0

/// A detail column of a downloadbill file, recognised by its Chinese header name.
///
/// Columns are mapped by name, never by position: ALL, SUCCESS and REFUND bills carry different
/// sets, merchants onboarded since 2018 get three more columns, and older accounts still get older
/// names (`总金额` for `应结订单金额`, `子商户号` for `特约商户号`, …), which are accepted as aliases.
/// A header this module does not know becomes `.other(name)` and its values are kept in
/// `BillRow.extra`.
public enum BillColumn: Sendable, Hashable {
    case tradeTime, appID, mchID, subMchID, deviceInfo, transactionID, outTradeNo, openid
    case tradeType, tradeState, bankType, feeType, settlementTotalFee, couponFee
    case refundApplyTime, refundSuccessTime, refundID, outRefundNo, refundFee, couponRefundFee
    case refundType, refundStatus, body, attach, serviceFee, rate, totalFee, requestedRefundFee, rateNote
    case other(String)

    /// The header name written by the renderer: the current name for known columns.
    public var header: String {
        switch self {
        case .tradeTime: "交易时间"
        case .appID: "公众账号ID"
        case .mchID: "商户号"
        case .subMchID: "特约商户号"
        case .deviceInfo: "设备号"
        case .transactionID: "微信订单号"
        case .outTradeNo: "商户订单号"
        case .openid: "用户标识"
        case .tradeType: "交易类型"
        case .tradeState: "交易状态"
        case .bankType: "付款银行"
        case .feeType: "货币种类"
        case .settlementTotalFee: "应结订单金额"
        case .couponFee: "代金券金额"
        case .refundApplyTime: "退款申请时间"
        case .refundSuccessTime: "退款成功时间"
        case .refundID: "微信退款单号"
        case .outRefundNo: "商户退款单号"
        case .refundFee: "退款金额"
        case .couponRefundFee: "充值券退款金额"
        case .refundType: "退款类型"
        case .refundStatus: "退款状态"
        case .body: "商品名称"
        case .attach: "商户数据包"
        case .serviceFee: "手续费"
        case .rate: "费率"
        case .totalFee: "订单金额"
        case .requestedRefundFee: "申请退款金额"
        case .rateNote: "费率备注"
        case .other(let name): name
        }
    }

    /// Recognises a header name, current or legacy.
    public init(header: String) {
        self = Self.byHeader[header] ?? .other(header)
    }

    /// Columns every bill type carries and without which a row cannot be reconciled.
    static let required: [BillColumn] = [.tradeTime, .transactionID, .outTradeNo, .tradeState, .settlementTotalFee]

    private static let known: [BillColumn] = [
        .tradeTime, .appID, .mchID, .subMchID, .deviceInfo, .transactionID, .outTradeNo, .openid,
        .tradeType, .tradeState, .bankType, .feeType, .settlementTotalFee, .couponFee,
        .refundApplyTime, .refundSuccessTime, .refundID, .outRefundNo, .refundFee, .couponRefundFee,
        .refundType, .refundStatus, .body, .attach, .serviceFee, .rate, .totalFee, .requestedRefundFee, .rateNote,
    ]

    /// Names used by bills generated before the 2018 免充值券 format, still served to old accounts.
    private static let legacyNames: [String: BillColumn] = [
        "子商户号": .subMchID,
        "总金额": .settlementTotalFee,
        "代金券或立减优惠金额": .couponFee,
        "企业红包金额": .couponFee,
        "代金券或立减优惠退款金额": .couponRefundFee,
        "企业红包退款金额": .couponRefundFee,
    ]

    private static let byHeader: [String: BillColumn] = {
        var map = legacyNames
        for column in known { map[column.header] = column }
        return map
    }()
}
