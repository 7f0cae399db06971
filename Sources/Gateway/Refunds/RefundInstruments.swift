// SPDX-License-Identifier: Apache-2.0
import Observability

/// The refund flow's metrics: requests, WeChat's refusals, the refund door's changes and the
/// refund notifies, made when the `RefundService` is built.
final class RefundInstruments: Sendable {
    static let requested = Metric<Counter>("wxpay_refunds_requested_total", help: "Refund requests by outcome.")
    static let refused = Metric<Counter>(
        "wxpay_refunds_refused_total", help: "Refunds WeChat refused before accepting them (they end REFUNDCLOSE), by reason.")
    static let settlements = Metric<Counter>("wxpay_refund_settlements_total", help: "Refund state changes by source and new state.")
    static let notifies = Metric<Counter>("wxpay_refund_notifies_total", help: "Refund notifies by outcome.")

    let created: Counter
    let replayed: Counter
    /// Requests refused before WeChat heard of them, by outcome (`not_refundable`, `conflict`…).
    let requestRefused: MetricFamily<Counter>
    /// By `failure_reason`.
    let refusedByWeChat: MetricFamily<Counter>
    /// By source label and new state.
    let settlements: MetricFamily<Counter>
    let notifySettled: Counter
    let notifyDuplicate: Counter
    let notifyContradicting: Counter
    let notifyStorageError: Counter
    let notifyRejected: MetricFamily<Counter>
    /// A refundquery that failed, by error (the reconciler's failures, stage `refundquery`).
    let queryErrors: MetricFamily<Counter>
    /// refundquery reported another amount than the refund's.
    let amountMismatches: Counter

    init(_ registry: MetricsRegistry) {
        registry.describe(Self.requested, Self.refused, Self.settlements, Self.notifies)
        created = registry.makeCounter(Self.requested, ["outcome": "created"])
        replayed = registry.makeCounter(Self.requested, ["outcome": "replayed"])
        requestRefused = registry.makeCounters(Self.requested, labelNames: "outcome")
        refusedByWeChat = registry.makeCounters(Self.refused, labelNames: "reason")
        settlements = registry.makeCounters(Self.settlements, labelNames: "source", "state")
        notifySettled = registry.makeCounter(Self.notifies, ["outcome": "settled"])
        notifyDuplicate = registry.makeCounter(Self.notifies, ["outcome": "duplicate"])
        notifyContradicting = registry.makeCounter(Self.notifies, ["outcome": "contradicts_final_state"])
        notifyStorageError = registry.makeCounter(Self.notifies, ["outcome": "storage_error"])
        notifyRejected = registry.makeCounters(Self.notifies, ["outcome": "rejected"], labelNames: "reason")
        queryErrors = registry.makeCounters(ReconcilerInstruments.errors, ["stage": "refundquery"], labelNames: "error")
        amountMismatches = registry.makeCounter(OrderInstruments.amountMismatches, ["source": "refundquery"])
        // A refund ending CHANGE needs a person; its alert compares the counter over time, so
        // the series exist before the first one (docs/operations.md).
        for source in ["refund_notify", "refundquery", "reconcile"] { settlements.labelled(source, "CHANGE").publish() }
        // WxpayNotifyForgeryBurst sums the rejected ones: a forged refund notify is a bad_sign.
        notifyRejected.labelled("bad_sign").publish()
    }
}
