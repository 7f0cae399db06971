// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import WeChatPay

/// The bill's refund lines against the local refunds. A bill lists refunds by the day they were
/// requested, and their status as it was when the bill was made (never updated afterwards), so a
/// refund the bill shows SUCCESS while it is PROCESSING here is confirmed with refundquery and
/// settled through the one door for refunds; the bill alone never settles anything. Every other
/// difference is reported, never applied.
extension BillReconciler {
    /// One refund line (its order exists locally); nil when it agrees with the local refund.
    func compareRefund(_ row: BillRow, billed: inout Set<String>, report: inout BillReport)
        async throws(BillReconciliationError) -> BillDifference?
    {
        guard let number = row.outRefundNo, !number.isEmpty else { return nil }
        billed.insert(number)
        let local: RefundRecord?
        do {
            local = try await refunds.store.refund(number)
        } catch {
            throw .storage(error.shortDescription)
        }
        func difference(_ kind: BillDifference.Kind, _ detail: String) -> BillDifference {
            BillDifference(kind: kind, outTradeNo: row.outTradeNo, transactionID: row.transactionID, detail: "\(number): " + detail)
        }
        guard let local else {
            return difference(.unknownRefund, "a refund of \(BillAmount.yuan(fromFen: row.refundFee ?? 0)) yuan this gateway "
                + "never requested (refunded by hand in the merchant platform?)")
        }
        let billAmount = row.requestedRefundFee ?? row.refundFee ?? 0
        guard local.outTradeNo == row.outTradeNo, local.amount == billAmount else {
            return difference(.refundMismatch, "bill \(BillAmount.yuan(fromFen: billAmount)) yuan for \(row.outTradeNo), local "
                + "\(BillAmount.yuan(fromFen: local.amount)) yuan for \(local.outTradeNo); not applied")
        }
        if let billID = row.refundID, let localID = local.refundID, billID != localID {
            return difference(.refundMismatch, "bill refund_id \(billID), local \(localID)")
        }
        let billStatus = row.refundStatus ?? ""
        if billStatus == "SUCCESS", local.state == .processing {
            let outcome = await refunds.check(local, source: "bill")
            let after = (try? await refunds.store.refund(number)) ?? local
            if outcome == .settled, after.state == .success {
                return difference(.refundSettledFromBill, "was PROCESSING locally; refundquery confirmed it; settled")
            }
            return difference(.refundNotConfirmed, "bill says SUCCESS; refundquery left it \(after.state.rawValue)")
        }
        if (billStatus == "SUCCESS" && local.state == .refundClose) || (billStatus == "REFUNDCLOSE" && local.state == .success) {
            return difference(.refundMismatch, "bill \(billStatus), local \(local.state.rawValue); not applied")
        }
        report.refundsMatched += 1
        return nil
    }

    /// Refunds created locally that Beijing day that WeChat accepted but the bill does not list.
    /// Refunds of the day's last five minutes are left out: WeChat's request time may fall on the
    /// next day, whose bill lists them.
    func refundsAbsent(from billed: Set<String>, dayStart: Date, report: inout BillReport)
        async throws(BillReconciliationError) -> [BillDifference]
    {
        let local: [RefundRecord]
        do {
            local = try await refunds.store.refunds(createdFrom: dayStart, to: dayStart.addingTimeInterval(86400))
        } catch {
            throw .storage(error.shortDescription)
        }
        report.localRefunds = local.count
        let cutoff = dayStart.addingTimeInterval(86400 - 300)
        return local.filter { $0.refundID != nil && $0.createdAt < cutoff && !billed.contains($0.outRefundNo) }.map { refund in
            BillDifference(
                kind: .refundAbsentFromBill, outTradeNo: refund.outTradeNo, transactionID: nil,
                detail: "\(refund.outRefundNo): \(refund.state.rawValue) locally, \(BillAmount.yuan(fromFen: refund.amount)) yuan, "
                    + "requested \(BeijingTime.formatWithSeparators(refund.createdAt)) Beijing; not in the bill")
        }
    }
}
