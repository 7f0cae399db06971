// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One detail line of a downloadbill file. Amounts are in fen (exact), the service fee in
/// milli-fen; a property is nil when the bill type has no such column (or, for an optional
/// amount, when the cell is empty). Text cells are kept as written, without the backtick.
public struct BillRow: Sendable, Hashable {
    /// 交易时间 as written, `yyyy-MM-dd HH:mm:ss` in Beijing time.
    public var tradeTime: String
    /// 公众账号ID: the AppID used at payment time.
    public var appID: String?
    /// 商户号.
    public var mchID: String?
    /// 特约商户号 (子商户号): `0` or empty for direct merchants.
    public var subMchID: String?
    /// 设备号.
    public var deviceInfo: String?
    /// 微信订单号.
    public var transactionID: String
    /// 商户订单号.
    public var outTradeNo: String
    /// 用户标识: the payer's openid.
    public var openid: String?
    /// 交易类型, e.g. `APP`.
    public var tradeType: String?
    /// 交易状态, e.g. `SUCCESS` or `REFUND`.
    public var tradeState: String
    /// 付款银行.
    public var bankType: String?
    /// 货币种类, `CNY`.
    public var feeType: String?
    /// 应结订单金额 (总金额 in old bills), in fen: the order amount minus non-recharge coupons.
    public var settlementTotalFee: Int
    /// 代金券金额, in fen.
    public var couponFee: Int?
    /// 退款申请时间 (REFUND bills).
    public var refundApplyTime: String?
    /// 退款成功时间 (REFUND bills).
    public var refundSuccessTime: String?
    /// 微信退款单号: `0` on payment lines of an ALL bill.
    public var refundID: String?
    /// 商户退款单号.
    public var outRefundNo: String?
    /// 退款金额, in fen.
    public var refundFee: Int?
    /// 充值券退款金额, in fen.
    public var couponRefundFee: Int?
    /// 退款类型, e.g. `ORIGINAL`.
    public var refundType: String?
    /// 退款状态 as of bill generation (not updated afterwards; ask refundquery).
    public var refundStatus: String?
    /// 商品名称: free text, may contain commas.
    public var body: String?
    /// 商户数据包: free text, may contain commas.
    public var attach: String?
    /// 手续费, exact to 0.00001 yuan.
    public var serviceFee: BillFee?
    /// 费率 as written, e.g. `0.60%`.
    public var rate: String?
    /// 订单金额, in fen (免充值券 accounts).
    public var totalFee: Int?
    /// 申请退款金额, in fen (免充值券 accounts).
    public var requestedRefundFee: Int?
    /// 费率备注.
    public var rateNote: String?
    /// Cells of columns this module does not know, by header name.
    public var extra: [String: String]

    /// A row with the columns every bill carries; set the others as needed.
    public init(
        tradeTime: String, transactionID: String, outTradeNo: String, tradeState: String, settlementTotalFee: Int
    ) {
        self.tradeTime = tradeTime
        self.transactionID = transactionID
        self.outTradeNo = outTradeNo
        self.tradeState = tradeState
        self.settlementTotalFee = settlementTotalFee
        self.extra = [:]
    }

    /// 交易时间 as an instant; nil when it is not `yyyy-MM-dd HH:mm:ss` (WeChat's own documentation
    /// example uses full-width colons, so this is never a parse error).
    public var tradeDate: Date? { BeijingTime.parseWithSeparators( tradeTime) }

    // MARK: - Cells by column

    /// Why a cell was refused; the parser adds the line number.
    enum CellError: Error { case invalid }

    /// Stores one cell. Amount columns must hold an exact yuan amount; an empty cell leaves an
    /// optional amount nil.
    mutating func set(_ column: BillColumn, _ text: String) throws(CellError) {
        func amount() throws(CellError) -> Int? {
            if text.isEmpty { return nil }
            guard let fen = BillAmount.fen(fromYuan: text) else { throw .invalid }
            return fen
        }
        switch column {
        case .tradeTime: tradeTime = text
        case .appID: appID = text
        case .mchID: mchID = text
        case .subMchID: subMchID = text
        case .deviceInfo: deviceInfo = text
        case .transactionID: transactionID = text
        case .outTradeNo: outTradeNo = text
        case .openid: openid = text
        case .tradeType: tradeType = text
        case .tradeState: tradeState = text
        case .bankType: bankType = text
        case .feeType: feeType = text
        case .settlementTotalFee:
            guard let fen = try amount() else { throw .invalid }
            settlementTotalFee = fen
        case .couponFee: couponFee = try amount()
        case .refundApplyTime: refundApplyTime = text
        case .refundSuccessTime: refundSuccessTime = text
        case .refundID: refundID = text
        case .outRefundNo: outRefundNo = text
        case .refundFee: refundFee = try amount()
        case .couponRefundFee: couponRefundFee = try amount()
        case .refundType: refundType = text
        case .refundStatus: refundStatus = text
        case .body: body = text
        case .attach: attach = text
        case .serviceFee:
            if text.isEmpty {
                serviceFee = nil
            } else {
                guard let fee = BillFee(yuan: text) else { throw .invalid }
                serviceFee = fee
            }
        case .rate: rate = text
        case .totalFee: totalFee = try amount()
        case .requestedRefundFee: requestedRefundFee = try amount()
        case .rateNote: rateNote = text
        case .other(let name): extra[name] = text
        }
    }

    /// The cell for `column` as the renderer writes it; empty when the row has no value.
    func cell(_ column: BillColumn) -> String {
        func amount(_ fen: Int?) -> String { fen.map(BillAmount.yuan(fromFen:)) ?? "" }
        return switch column {
        case .tradeTime: tradeTime
        case .appID: appID ?? ""
        case .mchID: mchID ?? ""
        case .subMchID: subMchID ?? ""
        case .deviceInfo: deviceInfo ?? ""
        case .transactionID: transactionID
        case .outTradeNo: outTradeNo
        case .openid: openid ?? ""
        case .tradeType: tradeType ?? ""
        case .tradeState: tradeState
        case .bankType: bankType ?? ""
        case .feeType: feeType ?? ""
        case .settlementTotalFee: BillAmount.yuan(fromFen: settlementTotalFee)
        case .couponFee: amount(couponFee)
        case .refundApplyTime: refundApplyTime ?? ""
        case .refundSuccessTime: refundSuccessTime ?? ""
        case .refundID: refundID ?? ""
        case .outRefundNo: outRefundNo ?? ""
        case .refundFee: amount(refundFee)
        case .couponRefundFee: amount(couponRefundFee)
        case .refundType: refundType ?? ""
        case .refundStatus: refundStatus ?? ""
        case .body: body ?? ""
        case .attach: attach ?? ""
        case .serviceFee: serviceFee?.yuan ?? ""
        case .rate: rate ?? ""
        case .totalFee: amount(totalFee)
        case .requestedRefundFee: amount(requestedRefundFee)
        case .rateNote: rateNote ?? ""
        case .other(let name): extra[name] ?? ""
        }
    }
}
