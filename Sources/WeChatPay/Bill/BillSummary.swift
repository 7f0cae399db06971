// SPDX-License-Identifier: Apache-2.0

/// The summary line at the end of a downloadbill file, e.g.
/// `` `48,`5.76,`1.42,`0.00,`0.01000,`5.76,`1.42 ``. Amounts in fen, the fee in milli-fen.
public struct BillSummary: Sendable, Hashable {
    /// 总交易单数.
    public var tradeCount: Int
    /// 应结订单总金额 (总交易额 in old bills), in fen.
    public var settlementTotalFee: Int
    /// 退款总金额 (总退款金额), in fen.
    public var refundFee: Int
    /// 充值券退款总金额, in fen.
    public var couponRefundFee: Int?
    /// 手续费总金额, exact to 0.00001 yuan.
    public var serviceFee: BillFee
    /// 订单总金额, in fen (免充值券 accounts).
    public var totalFee: Int?
    /// 申请退款总金额, in fen (免充值券 accounts).
    public var requestedRefundFee: Int?
    /// Cells of summary columns this module does not know, by header name.
    public var extra: [String: String]

    public init(
        tradeCount: Int, settlementTotalFee: Int, refundFee: Int, couponRefundFee: Int? = nil,
        serviceFee: BillFee, totalFee: Int? = nil, requestedRefundFee: Int? = nil
    ) {
        self.tradeCount = tradeCount
        self.settlementTotalFee = settlementTotalFee
        self.refundFee = refundFee
        self.couponRefundFee = couponRefundFee
        self.serviceFee = serviceFee
        self.totalFee = totalFee
        self.requestedRefundFee = requestedRefundFee
        self.extra = [:]
    }

    mutating func set(_ column: BillSummaryColumn, _ text: String) throws(BillRow.CellError) {
        func amount() throws(BillRow.CellError) -> Int? {
            if text.isEmpty { return nil }
            guard let fen = BillAmount.fen(fromYuan: text) else { throw .invalid }
            return fen
        }
        switch column {
        case .tradeCount:
            guard let count = NotifyAmount.fen(text) else { throw .invalid }
            tradeCount = count
        case .settlementTotalFee:
            guard let fen = try amount() else { throw .invalid }
            settlementTotalFee = fen
        case .refundFee:
            guard let fen = try amount() else { throw .invalid }
            refundFee = fen
        case .couponRefundFee: couponRefundFee = try amount()
        case .serviceFee:
            guard let fee = BillFee(yuan: text) else { throw .invalid }
            serviceFee = fee
        case .totalFee: totalFee = try amount()
        case .requestedRefundFee: requestedRefundFee = try amount()
        case .other(let name): extra[name] = text
        }
    }

    func cell(_ column: BillSummaryColumn) -> String {
        func amount(_ fen: Int?) -> String { fen.map(BillAmount.yuan(fromFen:)) ?? "" }
        return switch column {
        case .tradeCount: String(tradeCount)
        case .settlementTotalFee: BillAmount.yuan(fromFen: settlementTotalFee)
        case .refundFee: BillAmount.yuan(fromFen: refundFee)
        case .couponRefundFee: amount(couponRefundFee)
        case .serviceFee: serviceFee.yuan
        case .totalFee: amount(totalFee)
        case .requestedRefundFee: amount(requestedRefundFee)
        case .other(let name): extra[name] ?? ""
        }
    }
}
