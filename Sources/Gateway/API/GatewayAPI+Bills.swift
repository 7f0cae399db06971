// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import JSON
import Synchronization

/// One Beijing day's bill compared now, on a support token's request: what `wxpay-gateway
/// reconcile --date` and GATEWAY_BILL_RECONCILE's daily run do (`BillReconciler`), for an operator
/// who will not wait for tomorrow's run, and in demo mode, whose WeChat Pay simulator lives inside
/// `serve` where the command cannot reach it. Audited like every support call.
///
/// | route | who |
/// |---|---|
/// | POST /v1/support/bills/{day}/reconcile | support |
extension GatewayAPI {
    func registerBills(in router: inout HTTPRouter) {
        router.add(.post, "/v1/support/bills/{day}/reconcile", options: Self.jsonRoute(maxBodyBytes: Self.supportActionBodyLimit)) {
            request in
            let note = AuditNote()
            return try await self.handle(request, scopes: [.support], note: note) { _ in
                // An optional reason, which the audit entry keeps: the same rule as every support reason.
                if !request.body.isEmpty {
                    let body = try Self.supportAction(request.body, allowed: ["reason"])
                    if body["reason"] != nil { _ = try SupportReason.parse(member: body) }
                }
                let day = request.pathParameters["day"] ?? ""
                guard BillReconciler.dayStart(day) != nil else {
                    throw APIError.invalid("day", "day must be a real Beijing day written yyyy-MM-dd")
                }
                // One at a time in a process: a second would download the same bill and settle the
                // same orders (harmless through the door, but twice WeChat's rate-limited download).
                guard self.services.billReconciliations.start() else {
                    throw APIError(status: 409, code: "reconcile_running",
                                   message: "a bill reconciliation is running in this gateway; try again when it ends")
                }
                defer { self.services.billReconciliations.end() }
                let report: BillReport
                do throws(BillReconciliationError) {
                    report = try await BillReconciler(services: self.services).reconcile(day: day)
                } catch {
                    throw Self.billError(error, day: day, now: self.services.context.now())
                }
                note.set("day \(day): \(report.isClean ? "clean" : "differences") (\(report.differences.count) lines)")
                return Self.json(Self.billReportJSON(report))
            }
        }
    }

    /// The report as JSON: the counts and every difference, repaired ones with `needs_person` false.
    static func billReportJSON(_ report: BillReport) -> [UInt8] {
        var answer = JSONObjectWriter(capacity: 512 + 256 * report.differences.count)
        answer.number("bill_payments", report.billPayments)
        answer.number("bill_refunds", report.billRefunds)
        answer.bool("clean", report.isClean)
        answer.string("day", report.day)
        answer.array("differences", report.differences.map { difference in
            var line = JSONObjectWriter(capacity: 256)
            line.string("detail", difference.detail)
            line.string("kind", difference.kind.rawValue)
            line.bool("needs_person", difference.kind.needsAttention)
            line.string("out_trade_no", difference.outTradeNo)
            line.stringOrNull("transaction_id", difference.transactionID)
            return line.finish()
        })
        answer.number("local_payments", report.localPayments)
        answer.number("local_refunds", report.localRefunds)
        answer.number("matched", report.matched)
        answer.number("refunds_matched", report.refundsMatched)
        return answer.finish()
    }

    /// A comparison that could not run, in the API's words: the bill not made yet is 409, to be
    /// asked again at 10:00 Beijing time the next day (or in 30 minutes once that has passed),
    /// WeChat or its bill failing 503 `upstream_unavailable`, the store 503.
    static func billError(_ error: BillReconciliationError, day: String, now: Date) -> APIError {
        switch error.shortDescription {
        case "invalid_day", "no_bill_for_day": return .invalid("day", error.description)
        case "bill_not_ready":
            let ready = BillReconciler.dayStart(day).map { $0.addingTimeInterval(86400 + 10 * 3600) }
            let seconds = ready.map { Int($0.timeIntervalSince(now).rounded(.up)) } ?? 0
            return APIError(status: 409, code: "bill_not_ready", message: error.description,
                            retryAfter: seconds >= 60 ? seconds : 1800)
        case "storage_failed": return .databaseUnavailable
        default: return APIError(status: 503, code: "upstream_unavailable", message: error.description, retryAfter: 60)
        }
    }
}

/// Whether a support-requested bill reconciliation is running in this process.
final class BillReconciliationGate: Sendable {
    private let running = Mutex(false)

    /// Marks one as running; false when one already is.
    func start() -> Bool {
        running.withLock { running in
            guard !running else { return false }
            running = true
            return true
        }
    }

    func end() { running.withLock { $0 = false } }
}
