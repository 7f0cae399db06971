// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore

/// The reconciler's refund half: refunds PROCESSING for `GATEWAY_REFUND_QUERY_AFTER` seconds with
/// no notify are leased like orders and asked about with refundquery (`RefundService.check`), in
/// the same sweep, under the same lease, concurrency and rate limit as the orders.
extension Reconciler {
    /// Leases the due refunds, at most a quarter of the sweep's batch (at least one).
    func claimRefunds(now: Date, leaseUntil: Date, into report: inout SweepReport) async -> [RefundRecord] {
        guard refunds.isConfigured else { return [] }
        do {
            let claimed = try await refunds.store.claimProcessingRefunds(
                createdAtOrBefore: now.addingTimeInterval(-refunds.configuration.queryAfter), now: now,
                minimumGap: configuration.lease, limit: max(1, configuration.batchLimit / 4), claimant: claimant,
                leaseUntil: leaseUntil)
            report.refundsClaimed = claimed.count
            return claimed
        } catch {
            context.logger.error("reconciler could not claim refunds", ["error": error.shortDescription])
            instruments.storeErrors.increment()
            report.refundErrors += 1
            return []
        }
    }

    /// refundquery (or a resend) for one leased refund.
    func check(_ refund: RefundRecord) async -> Outcome {
        switch await refunds.check(refund) {
        case .open: return .open
        case .settled: return .settled
        case .failed: return .failed
        }
    }

    func skip(_ refund: RefundRecord) async -> Outcome {
        _ = try? await refunds.store.releaseRefundClaim(refund.outRefundNo, claimant: claimant)
        return .skipped
    }
}

extension SweepReport {
    mutating func count(refundOutcome outcome: Reconciler.Outcome) {
        switch outcome {
        case .open, .closed: refundsChecked += 1
        case .settled: refundsChecked += 1; refundsSettled += 1
        case .failed: refundsChecked += 1; refundErrors += 1
        case .skipped: refundsSkipped += 1
        }
    }
}
