// SPDX-License-Identifier: Apache-2.0
import Observability

/// The order flows' metrics (create, notify, waits, settlement, WeChat calls, the app's limits):
/// every name declared once here, every series' handle made when the `GatewayContext` is built, so
/// that counting on the hot paths is an atomic add. The exposition is pinned by
/// `MetricsExpositionTests`; a name, a help text or which series exist from the start is part of it.
final class OrderInstruments: Sendable {
    static let ordersCreated = Metric<Counter>("wxpay_orders_created_total", help: "Order creations by channel and outcome.")
    static let notifies = Metric<Counter>("wxpay_notifies_total", help: "Payment notifies by outcome (and channel, when the order is known).")
    static let upstreamCalls = Metric<Counter>("wxpay_upstream_calls_total", help: "Calls to WeChat Pay by API and outcome.")
    static let upstreamDuration = Metric<Histogram>("wxpay_upstream_duration_seconds", help: "Latency of calls to WeChat Pay.")
    static let waitsOpen = Metric<Gauge>("wxpay_waits_open", help: "Order and refund queries waiting for a final state.")
    static let waitDuration = Metric<Histogram>(
        "wxpay_wait_duration_seconds",
        help: "How long a held wait (an order's or a refund's) lasted until it answered, by how it ended: final, ran out (open), or cancelled (its client left, or a shutdown).")
    static let waitPolls = Metric<Counter>(
        "wxpay_wait_polls_total", help: "Polls of waiting queries: queried WeChat, or left to the instance holding the claim.")
    static let settlements = Metric<Counter>("wxpay_settlements_total", help: "State changes by source and new state.")
    static let transactionMismatches = Metric<Counter>(
        "wxpay_transaction_mismatches_total",
        help: "Paid orders WeChat reported paid again under another transaction id (flagged for support).")
    static let refundsOutsideGateway = Metric<Counter>(
        "wxpay_refunds_outside_gateway_total",
        help: "Paid orders WeChat reports REFUND without a refund of the gateway's (flagged for support).")
    static let amountMismatches = Metric<Counter>(
        "wxpay_amount_mismatches_total",
        help: "Payments WeChat reported with another amount than the order's (not settled), by source.")
    static let appTokenRefusals = Metric<Counter>(
        "wxpay_app_token_refusals_total", help: "App tokens refused (401 invalid_token), by the rule they broke.")
    static let appRateLimited = Metric<Counter>(
        "wxpay_app_rate_limited_total", help: "App-token requests refused by a per-user limit (429), by limit.")
    // Never described (no HELP line of their own in /metrics since they were added); describing
    // them is a change of the exposition, for a commit of its own.
    static let storageErrors = Metric<Counter>("wxpay_storage_errors_total", help: "Storage failures (reads and writes, the audit log's included), by error.")
    static let outboxRedrives = Metric<Counter>("wxpay_outbox_redrives_total", help: "Dead-lettered outbox events redriven by support.")

    /// Creates of WeChat orders and payment notifies of a known order, by channel (the app's
    /// kind), indexed by `WeChatAppKind.ordinal`.
    private let createsByChannel: [CreateOutcomes]
    private let notifiesByChannel: [NotifyOutcomes]

    /// Payment notifies no order could be found for (refused) or not stored.
    let notifyStorageError: Counter
    let notifyRejected: MetricFamily<Counter>

    // Held waits and their polls.
    let waitsOpen: Gauge
    let waitEndedFinal: Histogram
    let waitRanOut: Histogram
    let waitCancelled: Histogram
    let pollQueried: Counter
    let pollClaimedElsewhere: Counter

    // The one door, by source (`Settlement.label`) and new state.
    let settlements: MetricFamily<Counter>
    let transactionMismatches: MetricFamily<Counter>
    let amountMismatches: MetricFamily<Counter>
    let refundsOutsideGateway: Counter

    // WeChat Pay calls, by API and outcome.
    let upstreamCalls: MetricFamily<Counter>
    let upstreamDuration: MetricFamily<Histogram>

    // The app's tokens and limits.
    let appTokenRefusals: MetricFamily<Counter>
    let createsLimited: Counter
    let reportsLimited: Counter
    let waitsLimited: Counter

    let storageErrors: MetricFamily<Counter>
    let outboxRedrives: Counter
    let health: HealthInstruments

    /// - Parameter channels: the kinds of the merchant's apps, whose settled notifies are
    ///   exported from the start.
    init(_ registry: MetricsRegistry, channels: Set<WeChatAppKind> = [.app]) {
        registry.describe(Self.ordersCreated, Self.notifies, Self.upstreamCalls, Self.settlements, Self.transactionMismatches,
                          Self.refundsOutsideGateway, Self.appTokenRefusals, Self.appRateLimited, Self.amountMismatches,
                          Self.waitPolls, Self.upstreamDuration, Self.waitsOpen, Self.waitDuration, Self.storageErrors)

        createsByChannel = WeChatAppKind.allCases.map { CreateOutcomes(registry, channel: $0.rawValue) }
        notifiesByChannel = WeChatAppKind.allCases.map { NotifyOutcomes(registry, channel: $0.rawValue) }
        notifyStorageError = registry.makeCounter(Self.notifies, ["outcome": "storage_error"])
        notifyRejected = registry.makeCounters(Self.notifies, ["outcome": "rejected"], labelNames: "reason")

        waitsOpen = registry.makeGauge(Self.waitsOpen)
        waitEndedFinal = registry.makeHistogram(Self.waitDuration, ["state": "final"])
        waitRanOut = registry.makeHistogram(Self.waitDuration, ["state": "open"])
        waitCancelled = registry.makeHistogram(Self.waitDuration, ["state": "cancelled"])
        pollQueried = registry.makeCounter(Self.waitPolls, ["outcome": "queried"])
        pollClaimedElsewhere = registry.makeCounter(Self.waitPolls, ["outcome": "claimed_elsewhere"])

        settlements = registry.makeCounters(Self.settlements, labelNames: "source", "state")
        transactionMismatches = registry.makeCounters(Self.transactionMismatches, labelNames: "source")
        amountMismatches = registry.makeCounters(Self.amountMismatches, labelNames: "source")
        refundsOutsideGateway = registry.makeCounter(Self.refundsOutsideGateway)

        upstreamCalls = registry.makeCounters(Self.upstreamCalls, labelNames: "api", "outcome")
        upstreamDuration = registry.makeHistograms(Self.upstreamDuration, labelNames: "api")

        appTokenRefusals = registry.makeCounters(Self.appTokenRefusals, labelNames: "rule")
        createsLimited = registry.makeCounter(Self.appRateLimited, ["limit": "creates"])
        reportsLimited = registry.makeCounter(Self.appRateLimited, ["limit": "reports"])
        waitsLimited = registry.makeCounter(Self.appRateLimited, ["limit": "waits"])

        storageErrors = registry.makeCounters(Self.storageErrors, labelNames: "error")
        outboxRedrives = registry.makeCounter(Self.outboxRedrives)
        health = HealthInstruments(registry)

        // Exported from the start: alerts compare a counter with its value minutes ago, and a
        // series that first appeared with its first event would hide that event.
        waitsOpen.set(0)
        for source in Settlement.sourceLabels + ["refundquery"] { amountMismatches.labelled(source).publish() }
        for kind in channels { notifies(kind).settled.publish() }
        notifyRejected.labelled("bad_sign").publish()
        // WxpayDatabaseWritesFailing watches these two.
        for error in ["full", "io"] { storageErrors.labelled(error).publish() }
    }

    /// What WxpayWeChatErrors divides, exported from the start for each API `apis` names: the
    /// calls that succeeded, and the failures an outage of WeChat or of the way to it brings
    /// (a series first seen with its first failure would hide that failure from the rate).
    func publishUpstreamCalls(apis: [String]) {
        for api in apis {
            for outcome in Self.upstreamOutcomesFromStart { upstreamCalls.labelled(api, outcome).publish() }
            // WxpayWeChatSlow takes a rate of the buckets: the first slow calls count too.
            upstreamDuration.labelled(api).publish()
        }
    }

    static let upstreamOutcomesFromStart = [
        "success", "http_status", "transport_connect", "transport_dns", "transport_timeout", "transport_tls",
    ]

    /// The create outcomes of orders for apps of `kind`.
    func creates(_ kind: WeChatAppKind) -> CreateOutcomes { createsByChannel[kind.ordinal] }

    /// The notify outcomes of orders for apps of `kind`.
    func notifies(_ kind: WeChatAppKind) -> NotifyOutcomes { notifiesByChannel[kind.ordinal] }
}

/// What became of payment notifies whose order was found, for one channel.
struct NotifyOutcomes: Sendable {
    let settled: Counter
    let duplicate: Counter
    let paymentFailed: Counter
    let otherTransaction: Counter
    let notSettled: Counter

    init(_ registry: MetricsRegistry, channel: String) {
        func counter(_ outcome: String) -> Counter {
            registry.makeCounter(OrderInstruments.notifies, ["outcome": outcome, "channel": channel])
        }
        settled = counter("settled")
        duplicate = counter("duplicate")
        paymentFailed = counter("payment_failed")
        otherTransaction = counter("other_transaction")
        notSettled = counter("not_settled")
    }
}
