// SPDX-License-Identifier: Apache-2.0
import Observability

/// The reconciler's metrics: its sweeps, what they checked and found, and its failures (which the
/// refund and App Store halves of a sweep count too, by stage).
final class ReconcilerInstruments: Sendable {
    static let sweeps = Metric<Counter>("wxpay_reconcile_sweeps_total", help: "Reconciler sweeps run.")
    static let ordersChecked = Metric<Counter>(
        "wxpay_reconcile_orders_checked_total", help: "Open orders the reconciler asked WeChat about (orderquery or closeorder).")
    static let ordersSettled = Metric<Counter>(
        "wxpay_reconcile_orders_settled_total", help: "Orders the reconciler moved to SUCCESS: payments whose notify never arrived.")
    static let ordersClosed = Metric<Counter>(
        "wxpay_reconcile_orders_closed_total", help: "Orders the reconciler closed (expired) or found closed or failed at WeChat.")
    static let ordersSkipped = Metric<Counter>(
        "wxpay_reconcile_orders_skipped_total",
        help: "Claimed orders left for a later sweep (lease ran out or upstream kept failing).")
    static let errors = Metric<Counter>("wxpay_reconcile_errors_total", help: "Reconciler failures by stage.")
    static let refundsChecked = Metric<Counter>(
        "wxpay_reconcile_refunds_checked_total",
        help: "PROCESSING refunds the reconciler asked WeChat about (refundquery, or a resend).")
    static let refundsSettled = Metric<Counter>(
        "wxpay_reconcile_refunds_settled_total", help: "Refunds the reconciler finished: their notify never arrived.")
    static let lag = Metric<Gauge>(
        "wxpay_reconcile_lag_seconds", help: "How long the longest-waiting due order had waited for its check at the last sweep.")
    static let lastSweepClaimed = Metric<Gauge>("wxpay_reconcile_last_sweep_claimed", help: "Orders leased by the last sweep.")
    static let lastSweepTimestamp = Metric<Gauge>(
        "wxpay_reconcile_last_sweep_timestamp_seconds",
        help: "When the last sweep finished (Unix seconds): a reconciler that stopped sweeping leaves it behind.")
    static let sweepDuration = Metric<Histogram>("wxpay_reconcile_sweep_duration_seconds", help: "Duration of one sweep.")

    let registry: MetricsRegistry
    let sweeps: Counter
    let ordersChecked: Counter
    let ordersSettled: Counter
    let ordersClosed: Counter
    let ordersSkipped: Counter
    let storeErrors: Counter
    /// By stage and error: `labelled("orderquery", "http_status")`.
    let callErrors: MetricFamily<Counter>
    let refundsChecked: Counter
    let refundsSettled: Counter
    let lag: Gauge
    let lastSweepClaimed: Gauge
    let lastSweepTimestamp: Gauge
    let sweepDuration: Histogram

    init(_ registry: MetricsRegistry) {
        self.registry = registry
        registry.describe(Self.sweeps, Self.ordersChecked, Self.ordersSettled, Self.ordersClosed, Self.ordersSkipped,
                          Self.errors, Self.lag, Self.lastSweepClaimed, Self.lastSweepTimestamp, Self.sweepDuration)
        sweeps = registry.makeCounter(Self.sweeps)
        ordersChecked = registry.makeCounter(Self.ordersChecked)
        ordersSettled = registry.makeCounter(Self.ordersSettled)
        ordersClosed = registry.makeCounter(Self.ordersClosed)
        ordersSkipped = registry.makeCounter(Self.ordersSkipped)
        storeErrors = registry.makeCounter(Self.errors, ["stage": "store"])
        callErrors = registry.makeCounters(Self.errors, labelNames: "stage", "error")
        refundsChecked = registry.makeCounter(Self.refundsChecked)
        refundsSettled = registry.makeCounter(Self.refundsSettled)
        lag = registry.makeGauge(Self.lag)
        lastSweepClaimed = registry.makeGauge(Self.lastSweepClaimed)
        lastSweepTimestamp = registry.makeGauge(Self.lastSweepTimestamp)
        sweepDuration = registry.makeHistogram(Self.sweepDuration)
        // WxpayReconcilerFailing sums this counter's rate: it exists from the start with 0.
        storeErrors.publish()
    }

    /// The refund half's figures of a sweep. Its two metrics are declared with their first figures
    /// (a gateway whose reconciler never swept does not list them).
    func recordRefunds(checked: Int, settled: Int) {
        registry.describe(Self.refundsChecked, Self.refundsSettled)
        refundsChecked.increment(by: checked)
        refundsSettled.increment(by: settled)
    }
}

/// The bill comparison's metrics, declared with the first comparison's report.
final class BillInstruments: Sendable {
    static let runs = Metric<Counter>("wxpay_bill_runs_total", help: "Bill comparisons run.")
    static let differences = Metric<Counter>(
        "wxpay_bill_differences_total", help: "Bill comparison findings by kind (settled_from_bill is a repair).")

    private let registry: MetricsRegistry
    let clean: Counter
    let withDifferences: Counter
    /// A run that failed, by `BillReconciliationError.shortDescription`.
    let failed: MetricFamily<Counter>
    let differences: MetricFamily<Counter>

    init(_ registry: MetricsRegistry) {
        self.registry = registry
        clean = registry.makeCounter(Self.runs, ["result": "clean"])
        withDifferences = registry.makeCounter(Self.runs, ["result": "differences"])
        failed = registry.makeCounters(Self.runs, labelNames: "result")
        differences = registry.makeCounters(Self.differences, labelNames: "kind")
    }

    func record(_ report: BillReport) {
        registry.describe(Self.differences, Self.runs)
        (report.isClean ? clean : withDifferences).increment()
        for difference in report.differences { differences.labelled(difference.kind.rawValue).increment() }
    }
}
