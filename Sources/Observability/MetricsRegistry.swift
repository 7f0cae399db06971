// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// Counters, gauges and histograms with bounded label sets, exposed in Prometheus' text format.
///
/// Labels are outcomes, API names and route templates — never order numbers, tokens or other
/// unbounded or secret values. One registry per gateway instance (injected, not global), so tests
/// can assert metrics in parallel.
///
/// Components make their handles once, where they are built (`makeCounter`, `makeGauge`,
/// `makeHistogram`, or a `MetricFamily` for label values known only later), and count through
/// them; the registry's lock is taken to make a series and to expose them all, never to count.
/// A series made ahead of time is exported from its first event on (or once `publish`ed).
public final class MetricsRegistry: Sendable {
    private struct Key: Hashable, Sendable {
        var name: String
        var labels: [String]  // "k=v" pairs, sorted
    }

    private struct State: Sendable {
        var help: [String: (type: MetricType, text: String)] = [:]
        var counters: [Key: CounterCell] = [:]
        var gauges: [Key: GaugeCell] = [:]
        var histograms: [Key: HistogramCell] = [:]
    }

    private let state = Mutex(State())
    /// Latency buckets in seconds, from a fast local call to WeChat's slowest documented timeouts.
    public static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    public init() {}

    /// Declares metrics' types and help texts (once each; later calls are ignored). A described
    /// metric is listed in the exposition (HELP and TYPE) before its first sample.
    public func describe(_ metrics: any MetricDeclaration...) {
        state.withLock { state in
            for metric in metrics where state.help[metric.name] == nil {
                state.help[metric.name] = (metric.type, metric.help)
            }
        }
    }

    /// The counter series of `metric` with `labels`: the same name and labels give the same series.
    public func makeCounter(_ metric: Metric<Counter>, _ labels: [String: String] = [:]) -> Counter {
        Counter(cell: cell(metric.name, labels, \.counters) { CounterCell() })
    }

    public func makeGauge(_ metric: Metric<Gauge>, _ labels: [String: String] = [:]) -> Gauge {
        Gauge(cell: cell(metric.name, labels, \.gauges) { GaugeCell() })
    }

    /// `buckets` (ascending upper bounds) are the series' from its first making on.
    public func makeHistogram(_ metric: Metric<Histogram>, _ labels: [String: String] = [:],
                              buckets: [Double] = MetricsRegistry.latencyBuckets) -> Histogram {
        Histogram(cell: cell(metric.name, labels, \.histograms) { HistogramCell(buckets: buckets) })
    }

    /// The cell of one series, made on its first making: one name and label set is one cell.
    private func cell<Cell: Sendable>(_ name: String, _ labels: [String: String], _ cells: WritableKeyPath<State, [Key: Cell]>,
                            make: () -> Cell) -> Cell {
        let key = Self.key(name, labels)
        return state.withLock { state in
            if let cell = state[keyPath: cells][key] { return cell }
            let cell = make()
            state[keyPath: cells][key] = cell
            return cell
        }
    }

    /// The counters of `metric` with the `fixed` labels and the values of `labelNames`, each made
    /// on first use: `makeCounters(.notifies, ["outcome": "rejected"], labelNames: "reason")`.
    public func makeCounters(_ metric: Metric<Counter>, _ fixed: [String: String] = [:],
                             labelNames: String...) -> MetricFamily<Counter> {
        MetricFamily(fixed: fixed, labelNames: labelNames) { [self] labels in makeCounter(metric, labels) }
    }

    public func makeHistograms(_ metric: Metric<Histogram>, _ fixed: [String: String] = [:], labelNames: String...,
                               buckets: [Double] = MetricsRegistry.latencyBuckets) -> MetricFamily<Histogram> {
        MetricFamily(fixed: fixed, labelNames: labelNames) { [self] labels in makeHistogram(metric, labels, buckets: buckets) }
    }

    /// The current value of a counter series by name (tests and reports); 0 for one never counted.
    public func counter(_ name: String, _ labels: [String: String] = [:]) -> Double {
        let key = Self.key(name, labels)
        return Double(state.withLock { $0.counters[key] }?.value ?? 0)
    }

    /// The current value of a gauge series by name.
    public func gauge(_ name: String, _ labels: [String: String] = [:]) -> Double {
        let key = Self.key(name, labels)
        return state.withLock { $0.gauges[key] }?.value ?? 0
    }

    /// Prometheus text exposition format 0.0.4: counters, then gauges, then histograms, each by
    /// name and labels; then the described metrics without a sample, as HELP and TYPE alone.
    public func exposition() -> String {
        let (help, counters, gauges, histograms) = state.withLock { state in
            (state.help, state.counters.filter { $0.value.exported.isSet }, state.gauges.filter { $0.value.exported.isSet },
             state.histograms.filter { $0.value.exported.isSet })
        }
        var lines: [String] = []
        var described = Set<String>()
        func header(_ name: String, _ fallback: MetricType) {
            guard described.insert(name).inserted else { return }
            let declared = help[name]
            lines.append("# HELP \(name) \(declared?.text ?? name)")
            lines.append("# TYPE \(name) \((declared?.type ?? fallback).rawValue)")
        }
        for (key, cell) in counters.sorted(by: { Self.order($0.key, $1.key) }) {
            header(key.name, .counter)
            lines.append("\(key.name)\(Self.render(key.labels)) \(cell.value)")
        }
        for (key, cell) in gauges.sorted(by: { Self.order($0.key, $1.key) }) {
            header(key.name, .gauge)
            lines.append("\(key.name)\(Self.render(key.labels)) \(Self.number(cell.value))")
        }
        for (key, cell) in histograms.sorted(by: { Self.order($0.key, $1.key) }) {
            header(key.name, .histogram)
            let histogram = cell.snapshot
            for (index, bound) in cell.buckets.enumerated() {
                lines.append("\(key.name)_bucket\(Self.render(key.labels + ["le=\(Self.number(bound))"])) \(histogram.counts[index])")
            }
            lines.append("\(key.name)_bucket\(Self.render(key.labels + ["le=+Inf"])) \(histogram.count)")
            lines.append("\(key.name)_sum\(Self.render(key.labels)) \(Self.number(histogram.sum))")
            lines.append("\(key.name)_count\(Self.render(key.labels)) \(histogram.count)")
        }
        // A described metric without a sample yet is still declared, so what the gateway can
        // export is visible (and checkable against the alert rules) before it happens.
        for name in help.keys.sorted() where !described.contains(name) {
            header(name, .gauge)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func key(_ name: String, _ labels: [String: String]) -> Key {
        // Most metrics carry one or two labels; sorting is only needed from two on.
        guard labels.count > 1 else { return Key(name: name, labels: labels.map { $0.key + "=" + $0.value }) }
        return Key(name: name, labels: labels.map { $0.key + "=" + $0.value }.sorted())
    }

    private static func order(_ a: Key, _ b: Key) -> Bool {
        a.name != b.name ? a.name < b.name : a.labels.lexicographicallyPrecedes(b.labels)
    }

    private static func render(_ labels: [String]) -> String {
        guard !labels.isEmpty else { return "" }
        let rendered = labels.map { pair -> String in
            let equals = pair.firstIndex(of: "=")!
            let value = pair[pair.index(after: equals)...]
                .replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
            return "\(pair[..<equals])=\"\(value)\""
        }
        return "{" + rendered.joined(separator: ",") + "}"
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
