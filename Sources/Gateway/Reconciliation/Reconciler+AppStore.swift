// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

/// The reconciler's App Store half: leased iOS orders are checked with the App Store instead of
/// WeChat (`IAPService.reconcile`: Get Transaction History of the user's account, and a local close
/// at expiry), a few purchases no notification could match are tried again each sweep, the
/// notification history is read when due (IAPService+Backfill.swift), consumption requests are
/// answered and sent (IAPService+Consumption.swift), and subscriptions near their end or not
/// heard of for a period are read again (IAPService+Subscriptions.swift).
extension Reconciler {
    /// Unmatched purchases tried per sweep, and how long each waits between tries.
    static let unmatchedPerSweep = 10
    static let unmatchedRetryAge: TimeInterval = 300

    func checkApple(_ order: OrderRecord, now: Date) async -> Outcome {
        guard let iap = iap else {
            // App Store purchases were turned off: nothing can pay it, but it is closed at its expiry.
            guard order.expiresAt <= now else { return .open }
            let closed = try? await context.settlement.close(order, detail: "reconcile: expired, closed locally")
            return closed?.state == .closed ? .closed : .open
        }
        return await iap.reconcile(order, now: now)
    }

    /// The backfill (when due) and the consumption requests that need work; what they did goes into `report`.
    func sweepAppStoreRecovery(into report: inout SweepReport) async {
        guard let iap = iap else { return }
        if let backfill = await iap.backfillIfDue(claimant: claimant) {
            report.backfillRan = !backfill.environments.isEmpty
            report.notificationsRecovered = backfill.recovered
        }
        report.consumptionSent = await iap.sweepConsumption(claimant: claimant).sent
        report.subscriptionsChecked = await iap.recheckSubscriptions()
    }

    /// Returns how many were credited.
    func retryUnmatchedApplePurchases(now: Date) async -> Int {
        guard let iap = iap else { return 0 }
        return await iap.retryUnmatched(now: now, olderThan: max(configuration.after, Self.unmatchedRetryAge),
                                        limit: Self.unmatchedPerSweep)
    }
}
