// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import WeChatPay

/// Compares one Beijing day's WeChat bill (downloadbill ALL, gzip) with the local orders.
///
/// Every order the bill shows paid but that is not paid locally is confirmed with orderquery and
/// settled through the one door (the bill alone never settles anything). Every other difference
/// — amount mismatch, a different transaction id, paid locally but absent from the bill, an
/// out_trade_no we never created — is reported, never applied, and written to the order's
/// timeline. Bills are cut by payment time in Beijing time: local `paid_at` is compared on the
/// same Beijing day (an order paid at 23:59:59 +08:00 is in that day's bill).
///
/// ```swift
/// let report = try await BillReconciler(services: services).reconcile(day: "2026-11-29")
/// print(report.render())
/// ```
public struct BillReconciler: Sendable {
    let context: GatewayContext
    /// The orderquery flow that confirms what the bill says before anything is settled.
    let queries: OrderQueries
    /// The refund flow's refundquery, for the bill's refund lines.
    let refunds: RefundService
    let instruments: BillInstruments

    public init(services: GatewayServices) {
        context = services.context
        queries = services.queries
        refunds = services.refunds
        instruments = BillInstruments(services.metrics)
    }

    /// Downloads and compares the bill of `day` (`yyyy-MM-dd`, a Beijing day).
    public func reconcile(day: String) async throws(BillReconciliationError) -> BillReport {
        guard let dayStart = Self.dayStart(day) else { throw .invalidDay }
        // A day that has not begun has no bill to ask for (today's is "not ready" in WeChat's words).
        guard dayStart <= context.now() else { throw .noBillForDay }
        let rows = try await download(day)
        return try await compare(rows, day: day, dayStart: dayStart)
    }

    /// Midnight Beijing time of `day` (`yyyy-MM-dd`), or nil when it is not a real date so written.
    public static func dayStart(_ day: String) -> Date? {
        let parts = day.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.map(\.utf8.count) == [4, 2, 2], parts.allSatisfy({ $0.allSatisfy(\.isASCII) })
        else { return nil }
        return BeijingTime.parseDay(parts.joined())
    }

    /// The bill's detail rows; an empty list when WeChat says the day has no bill.
    private func download(_ day: String) async throws(BillReconciliationError) -> [BillRow] {
        do {
            return try await context.upstream.bill(day: day)
        } catch {
            // No bill: no transaction that day. Local payments that day are still compared.
            if error.notFound { return [] }
            if error.kind == .unreadableBill { throw .unreadableBill(error.shortDescription) }
            // WeChat makes a day's bill by about 10:00 Beijing the next day: until then, not ready.
            if error.message?.lowercased().contains("bill creating") == true || error.codeLabel == "STATEMENT_CREATING" {
                throw .notReady
            }
            // WeChat keeps bills for three months and refuses older (and future) days by name.
            if error.message?.contains("bill_date") == true { throw .noBillForDay }
            throw .download(error.shortDescription + (error.message.map { ": " + String($0.prefix(60)) } ?? ""))
        }
    }

    private func compare(_ rows: [BillRow], day: String, dayStart: Date) async throws(BillReconciliationError) -> BillReport {
        var report = BillReport(day: day)
        let store = context.store
        var billed = Set<String>()
        var billedRefunds = Set<String>()
        for row in rows {
            guard row.tradeState == "SUCCESS" else {
                report.billRefunds += 1
                if (try? await store.order(row.outTradeNo)) == .some(nil) {
                    report.differences.append(BillDifference(
                        kind: .unknownOrder, outTradeNo: row.outTradeNo, transactionID: row.transactionID,
                        detail: "a \(row.tradeState) line for an order this gateway never created"))
                } else if let difference = try await compareRefund(row, billed: &billedRefunds, report: &report) {
                    // Refund lines against the local refunds: BillReconciler+Refunds.swift.
                    report.differences.append(difference)
                    await note(difference, day: day)
                }
                continue
            }
            report.billPayments += 1
            billed.insert(row.outTradeNo)
            if let difference = try await compare(row) {
                report.differences.append(difference)
                if difference.kind != .unknownOrder {
                    _ = try? await store.appendEvent(difference.outTradeNo, kind: "bill",
                                                     detail: "bill \(day): \(difference.kind.rawValue): \(difference.detail)",
                                                     at: context.now())
                }
            } else {
                report.matched += 1
            }
        }

        let local: [OrderRecord]
        do {
            // WeChat's bill lists WeChat's payments; the App Store's are never on it.
            local = try await store.paidOrders(from: dayStart, to: dayStart.addingTimeInterval(86400))
                .filter { $0.channel == .wechat }
        } catch {
            throw .storage(error.shortDescription)
        }
        report.localPayments = local.count
        for difference in try await refundsAbsent(from: billedRefunds, dayStart: dayStart, report: &report) {
            report.differences.append(difference)
            await note(difference, day: day)
        }
        for order in local where !billed.contains(order.outTradeNo) {
            let difference = BillDifference(
                kind: .paidLocallyNotInBill, outTradeNo: order.outTradeNo, transactionID: order.transactionID,
                detail: "\(order.state.rawValue) locally, \(BillAmount.yuan(fromFen: order.amount)) yuan, paid at "
                    + (order.paidAt.map(BeijingTime.formatWithSeparators) ?? "?") + " Beijing; not in the bill")
            report.differences.append(difference)
            _ = try? await store.appendEvent(order.outTradeNo, kind: "bill",
                                             detail: "bill \(day): \(difference.kind.rawValue): \(difference.detail)",
                                             at: context.now())
        }
        record(report)
        return report
    }

    /// One payment line against the local order; nil when they agree.
    private func compare(_ row: BillRow) async throws(BillReconciliationError) -> BillDifference? {
        let order: OrderRecord?
        do {
            order = try await context.store.order(row.outTradeNo)
        } catch {
            throw .storage(error.shortDescription)
        }
        guard let order else {
            return BillDifference(kind: .unknownOrder, outTradeNo: row.outTradeNo, transactionID: row.transactionID,
                                  detail: "paid \(BillAmount.yuan(fromFen: row.totalFee ?? row.settlementTotalFee)) yuan "
                                      + "at \(row.tradeTime), an order this gateway never created")
        }
        // 订单金额 when the bill has it (coupons make 应结订单金额 smaller than the order).
        let billAmount = row.totalFee ?? row.settlementTotalFee
        guard billAmount == order.amount else {
            return BillDifference(
                kind: .amountMismatch, outTradeNo: row.outTradeNo, transactionID: row.transactionID,
                detail: "bill \(BillAmount.yuan(fromFen: billAmount)) yuan, order \(BillAmount.yuan(fromFen: order.amount)) yuan "
                    + "(\(order.state.rawValue) locally); not settled")
        }
        if order.state == .success || order.state == .refund {
            guard order.transactionID == row.transactionID else {
                return BillDifference(kind: .transactionMismatch, outTradeNo: row.outTradeNo, transactionID: row.transactionID,
                                      detail: "local transaction \(order.transactionID ?? "none")")
            }
            return nil
        }
        // Paid at WeChat, not here: only a verified orderquery answer may settle it.
        let failure = LockedBox<String?>(nil)
        let queries = self.queries
        let outTradeNo = row.outTradeNo
        let after = await context.upstream.queries.run(outTradeNo) {
            await queries.queryAndSettle(outTradeNo, reason: "bill comparison", source: "bill", failure: failure)
        }
        if let after, after.state == .success || after.state == .refund {
            return BillDifference(kind: .settledFromBill, outTradeNo: outTradeNo, transactionID: after.transactionID,
                                  detail: "was \(order.state.rawValue) locally; orderquery confirmed the payment; settled"
                                      + (after.flags.contains(.paidAfterClose) ? " (flagged paid_after_close)" : ""))
        }
        return BillDifference(
            kind: .notConfirmed, outTradeNo: outTradeNo, transactionID: row.transactionID,
            detail: "bill says paid; orderquery " + (failure.value.map { "failed (\($0))" }
                ?? "answered \(after?.state.rawValue ?? "nothing")") + "; left \(order.state.rawValue)")
    }

    /// A finding goes to its order's timeline too.
    func note(_ difference: BillDifference, day: String) async {
        _ = try? await context.store.appendEvent(difference.outTradeNo, kind: "bill",
                                                 detail: "bill \(day): \(difference.kind.rawValue): \(difference.detail)",
                                                 at: context.now())
    }

    private func record(_ report: BillReport) {
        instruments.record(report)
        context.logger.notice("bill compared", [
            "day": report.day, "bill_payments": String(report.billPayments), "matched": String(report.matched),
            "differences": String(report.differences.count),
        ])
    }
}
