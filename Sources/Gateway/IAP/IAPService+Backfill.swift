// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import Observability
import StorageCore

/// The notification history backfill: Get Notification History, read with the reconciler's sweeps
/// (at most every APPSTORE_BACKFILL_INTERVAL seconds), is what finds a purchase whose app report
/// and notification were both lost — a user's first purchase included, which the reconciler's
/// Get Transaction History cannot find (it needs a transaction of the user credited before).
///
/// Each run reads, per environment taken (production, and the sandbox when accepted), the window
/// since the last run went (with an overlap), or APPSTORE_BACKFILL_DAYS on the first run, or from
/// `--since` by hand; every notification in it is handled exactly as if it had been delivered
/// (`process`), once per notificationUUID, so a delivered and a backfilled copy make one effect.
/// Runs are leased across instances (`AppStoreBackfillStore`), and progress is durable: each page
/// is saved with its pagination token, and the window is done once its last page is.
extension IAPService {
    /// What one run did, per environment, summed.
    public struct BackfillReport: Sendable, Hashable {
        /// Environments whose history was read this run (not leased elsewhere, not early).
        public var environments: [String] = []
        public var pages = 0
        /// Notifications in the window.
        public var seen = 0
        /// Handled before (delivered, or read by an earlier run).
        public var alreadyHandled = 0
        /// Handled now for the first time: the notifications the backfill recovered.
        public var recovered = 0
        /// For another app or environment.
        public var ignored = 0
        /// That did not verify or could not be handled (the run failed; they are read again).
        public var failed = 0
        /// Why a run failed, per environment.
        public var errors: [String] = []
        /// How far the history is read now, per environment.
        public var through: [String: Date] = [:]

        public var succeeded: Bool { errors.isEmpty && failed == 0 }
    }

    /// The environments whose history is read: production, and the sandbox when accepted.
    var backfillEnvironments: [AppStoreEnvironment] { clients.acceptSandbox ? [.production, .sandbox] : [.production] }

    /// A sweep's backfill: each environment whose last run is at least APPSTORE_BACKFILL_INTERVAL
    /// seconds old and whose lease is free. Nil when the backfill is off (no Server API key, or
    /// an interval of 0).
    func backfillIfDue(claimant: String) async -> BackfillReport? {
        guard clients.serverAPI != nil, recovery.backfillInterval > 0 else { return nil }
        let report = await backfill(since: nil, claimant: claimant, force: false)
        await refreshBackfillGauge()
        return report
    }

    /// Reads the history once: from `since` when given (the command line), else from where the
    /// last run went. `force` runs even when the interval has not passed (the lease still holds).
    public func backfill(since: Date?, claimant: String, force: Bool) async -> BackfillReport {
        var report = BackfillReport()
        guard let api = clients.serverAPI else {
            report.errors.append("the App Store Server API is not configured")
            return report
        }
        for environment in backfillEnvironments {
            await backfill(environment, api: api, since: since, claimant: claimant, force: force, into: &report)
        }
        if !report.environments.isEmpty {
            (report.succeeded ? instruments.backfillSucceeded : instruments.backfillFailed).increment()
            instruments.backfillRecovered.increment(by: report.recovered)
            let level: Logger.Level = report.succeeded ? (report.recovered > 0 ? .notice : .info) : .warning
            logger.log(level, "App Store notification history read", [
                "environments": report.environments.joined(separator: ","), "seen": String(report.seen),
                "recovered": String(report.recovered), "already_handled": String(report.alreadyHandled),
                "failed": String(report.failed), "errors": report.errors.joined(separator: "; "),
            ])
        }
        return report
    }

    private func backfill(_ environment: AppStoreEnvironment, api: AppStoreServerAPIClient, since: Date?, claimant: String,
                          force: Bool, into report: inout BackfillReport) async {
        let name = environment.rawValue
        // Whole milliseconds, as the store keeps the window: a saved page token is good only for
        // the very same request.
        let started = Date(timeIntervalSince1970: (now().timeIntervalSince1970 * 1000).rounded() / 1000)
        let lease = recovery.backfillLease
        let claimed: AppStoreBackfillProgress?
        do {
            claimed = try await store.claimBackfill(
                environment: name, claimant: claimant, now: started, leaseUntil: started.addingTimeInterval(lease),
                lastRunBefore: force ? nil : started.addingTimeInterval(-recovery.backfillInterval))
        } catch {
            report.errors.append("\(name): the database: \(error.shortDescription)")
            return
        }
        guard let progress = claimed else { return }
        report.environments.append(name)
        // Apple keeps 180 days; an hour of margin keeps a slow run's start inside them.
        let oldest = started.addingTimeInterval(-Double(AppStoreRecoveryPolicy.appleHistoryDays) * 86400 + 3600)
        var window: ClosedRange<Date>
        var token: String?
        if since == nil, let saved = progress.window {
            // A run that stopped part way goes on from its last page.
            window = saved
            token = progress.paginationToken
        } else {
            let from = since ?? progress.through.map { $0.addingTimeInterval(-recovery.backfillOverlap) }
                ?? started.addingTimeInterval(-Double(recovery.backfillDays) * 86400)
            let start = max(oldest, min(from, started))
            window = Date(timeIntervalSince1970: (start.timeIntervalSince1970 * 1000).rounded() / 1000)...started
        }
        if window.lowerBound < oldest { window = oldest...max(oldest, window.upperBound) }
        var restarted = false
        while true {
            let page: NotificationHistoryPage
            do {
                page = try await api.notificationHistory(
                    NotificationHistoryRequest(startDate: window.lowerBound, endDate: max(window.upperBound, window.lowerBound.addingTimeInterval(0.001))),
                    paginationToken: token, environment: environment)
            } catch where !restarted && token != nil && (error.errorCode == 4_000_014 || error.errorCode == 4_000_017) {
                // The saved page token is no longer good: the window is read again from its start.
                restarted = true
                token = nil
                continue
            } catch {
                instruments.upstreamErrors.labelled("notification_history", error.kind.rawValue).increment()
                report.errors.append("\(name): Get Notification History: \(error.description)")
                _ = try? await store.finishBackfill(environment: name, claimant: claimant, through: nil,
                                                    error: error.description, at: now())
                return
            }
            report.pages += 1
            for item in page.items {
                report.seen += 1
                // A notification handled before is skipped without verifying it again: its UUID,
                // read from the unverified payload, is only used to skip work.
                if let uuid = AppStoreNotification.claimedUUID(item.signedPayload),
                   (try? await store.appStoreNotification(uuid)) ?? nil != nil {
                    report.alreadyHandled += 1
                    continue
                }
                switch await process(item.signedPayload, source: "notification history") {
                case .handled(let outcome):
                    report.recovered += 1
                    logger.notice("App Store notification recovered from the notification history",
                                  ["outcome": outcome, "delivered": String(item.wasDelivered)])
                case .duplicate:
                    report.alreadyHandled += 1
                case .ignored:
                    report.ignored += 1
                case .rejected(let reason):
                    report.failed += 1
                    logger.error("a notification from Get Notification History did not verify", ["reason": reason])
                case .failed(let error):
                    report.failed += 1
                    report.errors.append("\(name): a notification could not be handled (\(error.code))")
                    _ = try? await store.finishBackfill(environment: name, claimant: claimant, through: nil,
                                                        error: "a notification could not be handled (\(error.code))", at: now())
                    return
                }
            }
            guard page.hasMore, let next = page.paginationToken else { break }
            token = next
            let saved = (try? await store.saveBackfillPage(environment: name, claimant: claimant, window: window,
                                                            paginationToken: next, leaseUntil: now().addingTimeInterval(lease),
                                                            at: now())) ?? false
            guard saved else {
                report.errors.append("\(name): the lease ran out; another run goes on from the last saved page")
                return
            }
        }
        if (try? await store.finishBackfill(environment: name, claimant: claimant, through: window.upperBound, error: nil,
                                            at: now())) == true {
            report.through[name] = window.upperBound
        } else {
            report.errors.append("\(name): the lease ran out before the window was recorded as read")
        }
    }

    /// `wxpay_appstore_backfill_last_success_timestamp_seconds`: the last successful run of the
    /// environment furthest behind, from the database (so every instance shows the same, whichever
    /// ran it).
    func refreshBackfillGauge() async {
        var oldest: Date?
        for environment in backfillEnvironments {
            guard let progress = try? await store.backfillProgress(environment: environment.rawValue),
                  let success = progress.lastSuccessAt
            else { return }
            oldest = min(oldest ?? success, success)
        }
        if let oldest { instruments.backfillLastSuccess.set(oldest.timeIntervalSince1970) }
    }
}
