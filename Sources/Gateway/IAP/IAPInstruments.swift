// SPDX-License-Identifier: Apache-2.0
import Observability

/// iOS purchases' metrics: creates, reports, credits, Apple's refunds and notifications, the calls
/// to the App Store that failed, and the recovery halves (the notification history backfill,
/// consumption requests, the daily refund history check). Made when the `IAPService` is built.
final class IAPInstruments: Sendable {
    static let reports = Metric<Counter>(
        "wxpay_appstore_reports_total", help: "iOS transaction reports by outcome (credited, repeated, or the error code).")
    static let credits = Metric<Counter>(
        "wxpay_appstore_credits_total", help: "App Store transactions credited to an order, by how the order was found and environment.")
    static let refunds = Metric<Counter>(
        "wxpay_appstore_refunds_total", help: "Orders moved to REFUND because Apple refunded or revoked their transaction.")
    static let upstreamErrors = Metric<Counter>(
        "wxpay_appstore_upstream_errors_total", help: "Failed calls to the App Store (Server API, verifyReceipt) by API and error.")
    static let refundsReversed = Metric<Counter>(
        "wxpay_appstore_refunds_reversed_total",
        help: "Orders moved back to SUCCESS because Apple reversed its refund (REFUND_REVERSED).")
    static let reportLinesSuppressed = Metric<Counter>(
        "wxpay_appstore_report_lines_suppressed_total",
        help: "Repeated iOS reports of one order within a minute that added no timeline line.")
    static let receiptsRead = Metric<Counter>(
        "wxpay_appstore_receipts_read_total", help: "App receipts read locally (StoreKit 1 reports with the Server API), by outcome.")
    static let notifications = Metric<Counter>(
        "wxpay_appstore_notifications_total",
        help: "App Store Server Notifications by outcome (handled, duplicate, ignored, rejected, error).")
    static let backfillRuns = Metric<Counter>(
        "wxpay_appstore_backfill_runs_total",
        help: "Runs of the notification history backfill (Get Notification History) by this instance, by outcome.")
    static let backfillRecovered = Metric<Counter>(
        "wxpay_appstore_backfill_recovered_total",
        help: "Notifications the backfill handled that had not been handled before (their delivery was lost).")
    static let backfillLastSuccess = Metric<Gauge>(
        "wxpay_appstore_backfill_last_success_timestamp_seconds",
        help: "When the notification history was last read through, for the environment furthest behind.")
    static let consumptionRequests = Metric<Counter>(
        "wxpay_appstore_consumption_requests_total", help: "Consumption requests (CONSUMPTION_REQUEST) recorded, by environment.")
    static let consumptionAnswers = Metric<Counter>(
        "wxpay_appstore_consumption_answers_total",
        help: "Consumption requests answered, by who answered (business, defaults) and consent.")
    static let consumptionSent = Metric<Counter>(
        "wxpay_appstore_consumption_sent_total",
        help: "Attempts to send consumption information to Apple, by outcome (accepted, refused, retry).")
    static let consumptionExpired = Metric<Counter>(
        "wxpay_appstore_consumption_expired_total", help: "Consumption requests whose 12 hours passed before an answer was sent.")
    static let subscriptionChanges = Metric<Counter>(
        "wxpay_appstore_subscription_changes_total",
        help: "Changes to what an App Store subscription grants (its status, its end, its renewal), by the status it came to.")
    static let subscriptionChecks = Metric<Counter>(
        "wxpay_appstore_subscription_checks_total",
        help: "The reconciler's reads of Get All Subscription Statuses, by outcome (ok, not_found, error).")
    // Never described (no HELP line of its own in /metrics since it was added); describing it is a
    // change of the exposition, for a commit of its own.
    static let refundHistoryRuns = Metric<Counter>(
        "wxpay_appstore_refund_history_runs_total", help: "Daily Get Refund History checks, by result (ok, errors).")

    /// Creates of App Store orders (`wxpay_orders_created_total`, channel apple).
    let creates: CreateOutcomes
    /// By outcome: `credited`, `repeated`, an error's code…
    let reports: MetricFamily<Counter>
    /// By how the order was found, and environment.
    let credits: MetricFamily<Counter>
    let reportLinesSuppressed: Counter
    /// By outcome: `ok`, `bundle_mismatch`, a reading error's kind…
    let receiptsRead: MetricFamily<Counter>
    /// By API and error.
    let upstreamErrors: MetricFamily<Counter>
    /// By environment.
    let refunds: MetricFamily<Counter>
    let refundsReversed: MetricFamily<Counter>

    let notificationHandled: Counter
    let notificationDuplicate: Counter
    let notificationFailed: Counter
    let notificationIgnored: MetricFamily<Counter>
    let notificationRejected: MetricFamily<Counter>

    let backfillSucceeded: Counter
    let backfillFailed: Counter
    let backfillRecovered: Counter
    let backfillLastSuccess: Gauge
    /// By environment.
    let consumptionRequests: MetricFamily<Counter>
    /// By who answered and consent.
    let consumptionAnswers: MetricFamily<Counter>
    let consumptionAccepted: Counter
    let consumptionRefused: Counter
    let consumptionRetried: Counter
    let consumptionExpired: Counter
    /// A history read that failed, by error (the reconciler's failures, stage `transaction_history`).
    let historyErrors: MetricFamily<Counter>
    let refundHistoryClean: Counter
    let refundHistoryWithErrors: Counter
    /// By the status the subscription came to.
    let subscriptionStates: MetricFamily<Counter>
    /// By outcome.
    let subscriptionChecks: MetricFamily<Counter>

    init(_ registry: MetricsRegistry) {
        registry.describe(Self.reports, Self.credits, Self.refunds, Self.upstreamErrors, Self.refundsReversed,
                          Self.reportLinesSuppressed, Self.receiptsRead, Self.notifications, Self.backfillRuns,
                          Self.backfillRecovered, Self.backfillLastSuccess, Self.consumptionRequests,
                          Self.consumptionAnswers, Self.consumptionSent, Self.consumptionExpired, Self.subscriptionChanges,
                          Self.subscriptionChecks)

        creates = CreateOutcomes(registry, channel: "apple")
        reports = registry.makeCounters(Self.reports, labelNames: "outcome")
        credits = registry.makeCounters(Self.credits, labelNames: "matched_by", "environment")
        reportLinesSuppressed = registry.makeCounter(Self.reportLinesSuppressed)
        receiptsRead = registry.makeCounters(Self.receiptsRead, labelNames: "outcome")
        upstreamErrors = registry.makeCounters(Self.upstreamErrors, labelNames: "api", "error")
        refunds = registry.makeCounters(Self.refunds, labelNames: "environment")
        refundsReversed = registry.makeCounters(Self.refundsReversed, labelNames: "environment")

        notificationHandled = registry.makeCounter(Self.notifications, ["outcome": "handled"])
        notificationDuplicate = registry.makeCounter(Self.notifications, ["outcome": "duplicate"])
        notificationFailed = registry.makeCounter(Self.notifications, ["outcome": "error"])
        notificationIgnored = registry.makeCounters(Self.notifications, ["outcome": "ignored"], labelNames: "reason")
        notificationRejected = registry.makeCounters(Self.notifications, ["outcome": "rejected"], labelNames: "reason")

        backfillSucceeded = registry.makeCounter(Self.backfillRuns, ["outcome": "ok"])
        backfillFailed = registry.makeCounter(Self.backfillRuns, ["outcome": "failed"])
        backfillRecovered = registry.makeCounter(Self.backfillRecovered)
        backfillLastSuccess = registry.makeGauge(Self.backfillLastSuccess)
        consumptionRequests = registry.makeCounters(Self.consumptionRequests, labelNames: "environment")
        consumptionAnswers = registry.makeCounters(Self.consumptionAnswers, labelNames: "by", "consented")
        consumptionAccepted = registry.makeCounter(Self.consumptionSent, ["outcome": "accepted"])
        consumptionRefused = registry.makeCounter(Self.consumptionSent, ["outcome": "refused"])
        consumptionRetried = registry.makeCounter(Self.consumptionSent, ["outcome": "retry"])
        consumptionExpired = registry.makeCounter(Self.consumptionExpired)
        historyErrors = registry.makeCounters(ReconcilerInstruments.errors, ["stage": "transaction_history"], labelNames: "error")
        refundHistoryClean = registry.makeCounter(Self.refundHistoryRuns, ["result": "ok"])
        refundHistoryWithErrors = registry.makeCounter(Self.refundHistoryRuns, ["result": "errors"])
        subscriptionStates = registry.makeCounters(Self.subscriptionChanges, labelNames: "status")
        subscriptionChecks = registry.makeCounters(Self.subscriptionChecks, labelNames: "outcome")
        // Exported from the start for the alerts that compare them over time: a forged
        // notification (WxpayNotifyForgeryBurst) and the backfill's runs (WxpayAppStoreBackfillFailing).
        notificationRejected.labelled("invalid_signature").publish()
        for counter in [backfillSucceeded, backfillFailed] { counter.publish() }
    }
}
