// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

extension WeChatPaySimulator {
    /// downloadbill: the day's payments (by payment time) and refunds (by request time), Beijing
    /// days, in WeChat's text format; gzip when asked. The file is neither XML nor signed.
    func downloadBill(_ request: DownloadBillRequest, now: Date, book: inout OrderBook) throws(BusinessFailure)
        -> SimulatorResponse
    {
        func failure(_ message: String) -> SimulatorResponse {
            SimulatorResponse(body: encode(ResponseEnvelope.protocolFailure(message: message)))
        }
        guard let dayStart = BeijingTime.parseDay(request.billDate) else { return failure("invalid bill_date") }
        let dayEnd = dayStart + 86400
        // Bills are generated from 09:00 the next day and kept three months.
        guard now >= dayEnd + 9 * 3600 else {
            return dayStart > now ? failure("invalid bill_date") : failure("Bill Creating")
        }
        guard now.timeIntervalSince(dayStart) <= 92 * 86400 else { return failure("invalid bill_date") }

        var rows: [BillRow] = []
        let wantsPayments = request.billType == .all || request.billType == .success
        let wantsRefunds = request.billType != .success
        for order in book.orders.values.sorted(by: { $0.outTradeNo < $1.outTradeNo }) {
            guard let transactionID = order.transactionID, let paidAt = order.paidAt else { continue }
            if wantsPayments, paidAt >= dayStart, paidAt < dayEnd {
                rows.append(billRow(order, transactionID: transactionID, at: paidAt, state: "SUCCESS"))
            }
            if wantsRefunds {
                for refund in order.refunds where refund.requestedAt >= dayStart && refund.requestedAt < dayEnd {
                    var row = billRow(order, transactionID: transactionID, at: refund.requestedAt, state: "REFUND")
                    row.settlementTotalFee = 0
                    row.refundApplyTime = BeijingTime.formatWithSeparators(refund.requestedAt)
                    row.refundSuccessTime = refund.completedAt.map(BeijingTime.formatWithSeparators)
                    row.refundID = refund.refundID
                    row.outRefundNo = refund.outRefundNo
                    row.refundFee = refund.refundFee
                    row.couponRefundFee = 0
                    row.refundType = "ORIGINAL"
                    row.refundStatus = refund.status == .success ? "SUCCESS" : refund.status.rawValue
                    row.requestedRefundFee = refund.refundFee
                    row.serviceFee = BillFee(milliFen: -refund.refundFee * 6)  // 0.6% returned
                    rows.append(row)
                }
            }
        }
        guard !rows.isEmpty else { return failure("No Bill Exist") }
        let paid = rows.filter { $0.tradeState == "SUCCESS" }
        let refunded = rows.filter { $0.tradeState == "REFUND" }
        let summary = BillSummary(
            tradeCount: rows.count, settlementTotalFee: paid.reduce(0) { $0 + $1.settlementTotalFee },
            refundFee: refunded.reduce(0) { $0 + ($1.refundFee ?? 0) }, couponRefundFee: 0,
            serviceFee: BillFee(milliFen: rows.reduce(0) { $0 + ($1.serviceFee?.milliFen ?? 0) }),
            totalFee: paid.reduce(0) { $0 + ($1.totalFee ?? 0) },
            requestedRefundFee: refunded.reduce(0) { $0 + ($1.requestedRefundFee ?? 0) })
        let layout: BillLayout = switch request.billType {
        case .all: .all
        case .success: .success
        default: .refund
        }
        let text: [UInt8]
        do {
            text = try Bill.render(rows: rows, summary: summary, layout: layout)
        } catch {
            preconditionFailure("simulator wrote an unrenderable bill: \(error)")
        }
        if request.gzip {
            return SimulatorResponse(body: Gzip.compress(text), contentType: "application/x-gzip")
        }
        return SimulatorResponse(body: text, contentType: "text/plain; charset=utf-8")
    }

    private func billRow(_ order: SimulatedOrder, transactionID: String, at date: Date, state: String) -> BillRow {
        var row = BillRow(tradeTime: BeijingTime.formatWithSeparators(date), transactionID: transactionID,
                          outTradeNo: order.outTradeNo, tradeState: state, settlementTotalFee: order.totalFee)
        row.appID = order.appID.isEmpty ? configuration.appID : order.appID
        row.mchID = configuration.mchID
        row.subMchID = ""
        row.deviceInfo = ""
        row.openid = order.openid
        row.tradeType = order.parameters["trade_type"] ?? "APP"
        row.bankType = "OTHERS"
        row.feeType = "CNY"
        row.couponFee = 0
        row.body = order.parameters["body"]
        row.attach = order.attach ?? ""
        // WeChat's usual 0.6% fee, in units of 0.00001 yuan (1 fen = 1,000).
        row.serviceFee = BillFee(milliFen: order.totalFee * 6)
        row.rate = "0.60%"
        row.totalFee = order.totalFee
        row.rateNote = ""
        return row
    }
}
