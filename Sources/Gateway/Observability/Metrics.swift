// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// Counters, gauges and histograms with bounded label sets, exposed in Prometheus' text format.
///
/// Labels are outcomes, API names and route templates — never order numbers, tokens or other
/// unbounded or secret values. One registry per gateway instance (injected, not global), so tests
/// can assert metrics in parallel.
public final class MetricsRegistry: Sendable {
    private struct Key: Hashable, Sendable {
        var name: String
        var labels: [String]  // "k=v" pairs, sorted
    }

    private struct Histogram: Sendable {
        var buckets: [Double]
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0

        mutating func record(_ value: Double) {
            for index in buckets.indices where value <= buckets[index] { counts[index] += 1 }
            sum += value
            count += 1
        }
    }

    private struct State: Sendable {
        var help: [String: (type: String, text: String)] = [:]
        var counters: [Key: Double] = [:]
        var gauges: [Key: Double] = [:]
        var histograms: [Key: Histogram] = [:]
    }

    private let state = Mutex(State())
    /// Latency buckets in seconds, from a fast local call to WeChat's slowest documented timeouts.
    public static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    public init() {}

    /// Declares a metric's type and help text (once; later calls are ignored).
    public func describe(_ name: String, type: String, help: String) {
        state.withLock { if $0.help[name] == nil { $0.help[name] = (type, help) } }
    }

    public func increment(_ name: String, by amount: Double = 1, _ labels: [String: String] = [:]) {
        let key = Self.key(name, labels)
        state.withLock { $0.counters[key, default: 0] += amount }
    }

    public func set(_ name: String, to value: Double, _ labels: [String: String] = [:]) {
        let key = Self.key(name, labels)
        state.withLock { $0.gauges[key] = value }
    }

    public func add(_ name: String, _ delta: Double, _ labels: [String: String] = [:]) {
        let key = Self.key(name, labels)
        state.withLock { $0.gauges[key, default: 0] += delta }
    }

    public func observe(_ name: String, _ value: Double, _ labels: [String: String] = [:],
                        buckets: [Double] = MetricsRegistry.latencyBuckets) {
        let key = Self.key(name, labels)
        state.withLock { state in
            // Updated in place: a copy taken out of the dictionary and stored back made every
            // observation copy the bucket counts while the dictionary still held the original.
            state.histograms[key, default: Histogram(buckets: buckets, counts: Array(repeating: 0, count: buckets.count))]
                .record(value)
        }
    }

    /// The current value of a counter (tests and reports).
    public func counter(_ name: String, _ labels: [String: String] = [:]) -> Double {
        let key = Self.key(name, labels)
        return state.withLock { $0.counters[key] ?? 0 }
    }

    /// The current value of a gauge.
    public func gauge(_ name: String, _ labels: [String: String] = [:]) -> Double {
        let key = Self.key(name, labels)
        return state.withLock { $0.gauges[key] ?? 0 }
    }

    /// Prometheus text exposition format 0.0.4.
    public func exposition() -> String {
        state.withLock { state in
            var lines: [String] = []
            var described = Set<String>()
            func header(_ name: String, _ fallback: String) {
                guard described.insert(name).inserted else { return }
                let help = state.help[name]
                lines.append("# HELP \(name) \(help?.text ?? name)")
                lines.append("# TYPE \(name) \(help?.type ?? fallback)")
            }
            for (key, value) in state.counters.sorted(by: { Self.order($0.key, $1.key) }) {
                header(key.name, "counter")
                lines.append("\(key.name)\(Self.render(key.labels)) \(Self.number(value))")
            }
            for (key, value) in state.gauges.sorted(by: { Self.order($0.key, $1.key) }) {
                header(key.name, "gauge")
                lines.append("\(key.name)\(Self.render(key.labels)) \(Self.number(value))")
            }
            for (key, histogram) in state.histograms.sorted(by: { Self.order($0.key, $1.key) }) {
                header(key.name, "histogram")
                for (index, bound) in histogram.buckets.enumerated() {
                    lines.append("\(key.name)_bucket\(Self.render(key.labels + ["le=\(Self.number(bound))"])) \(histogram.counts[index])")
                }
                lines.append("\(key.name)_bucket\(Self.render(key.labels + ["le=+Inf"])) \(histogram.count)")
                lines.append("\(key.name)_sum\(Self.render(key.labels)) \(Self.number(histogram.sum))")
                lines.append("\(key.name)_count\(Self.render(key.labels)) \(histogram.count)")
            }
            // A described metric without a sample yet is still declared, so what the gateway can
            // export is visible (and checkable against the alert rules) before it happens.
            for name in state.help.keys.sorted() where !described.contains(name) {
                header(name, "untyped")
            }
            return lines.joined(separator: "\n") + "\n"
        }
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
