// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The outcome of comparing one day's bill with the local orders.
public struct BillReport: Sendable, Hashable {
    /// The Beijing day, `yyyy-MM-dd`.
    public var day: String
    /// Payment (SUCCESS) and refund lines in the bill.
    public var billPayments = 0
    public var billRefunds = 0
    /// Orders paid locally with `paid_at` on that Beijing day.
    public var localPayments = 0
    /// Payments that agree in both.
    public var matched = 0
    /// Refunds created locally that Beijing day, and refund lines that agree with the local refund.
    public var localRefunds = 0
    public var refundsMatched = 0
    public var differences: [BillDifference] = []

    public init(day: String) {
        self.day = day
    }

    /// Whether nothing needs a person (repaired orders do not).
    public var isClean: Bool { !differences.contains { $0.kind.needsAttention } }

    /// The report as printed by `wxpay-gateway reconcile`.
    public func render() -> String {
        var lines = [
            "Bill reconciliation for \(day) (Beijing time, 00:00-24:00 +08:00)",
            "  bill: \(billPayments) payments, \(billRefunds) refunds; local payments that day: \(localPayments)",
            "  matched: \(matched)",
            "  local refunds that day: \(localRefunds); refund lines matched: \(refundsMatched)",
        ]
        let repaired = differences.filter { !$0.kind.needsAttention }
        let attention = differences.filter { $0.kind.needsAttention }
        lines.append("  settled from the bill (confirmed by orderquery or refundquery): \(repaired.count)")
        for difference in repaired { lines.append("    " + Self.line(difference)) }
        lines.append("  differences needing a person: \(attention.count)")
        for difference in attention { lines.append("    " + Self.line(difference)) }
        lines.append(isClean ? "result: clean" : "result: DIFFERENCES FOUND")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func line(_ difference: BillDifference) -> String {
        let kind = difference.kind.rawValue.padding(toLength: 30, withPad: " ", startingAt: 0)
        let transaction = difference.transactionID.map { " transaction \($0)" } ?? ""
        return "\(kind) \(difference.outTradeNo)\(transaction): \(difference.detail)"
    }
}
