// SPDX-License-Identifier: Apache-2.0
import Observability
import Synchronization

/// `wxpay-bench metrics`: what one count costs on the notify and create paths, through a handle
/// made once (as the gateway counts now) against the string path it replaced (a name and a label
/// dictionary at every call, turned into a key under the registry's lock), in alternating rounds
/// on one thread. The string path is kept below as the reference, exactly as the registry did it.
enum MetricsBenchmark {
    static let command = BenchmarkCommand(
        name: "metrics", summary: "one count through a handle against the string path it replaced", options: run)

    static let notifies = Metric<Counter>("wxpay_notifies_total", help: "Payment notifies by outcome.")
    static let upstreamCalls = Metric<Counter>("wxpay_upstream_calls_total", help: "Calls to WeChat Pay by API and outcome.")
    static let upstreamDuration = Metric<Histogram>("wxpay_upstream_duration_seconds", help: "Latency of calls to WeChat Pay.")

    static func run(_ options: BenchmarkOptions) throws {
        let registry = MetricsRegistry()
        let reference = StringPathRegistry()
        let settled = registry.makeCounter(notifies, ["outcome": "settled"])
        let calls = registry.makeCounters(upstreamCalls, labelNames: "api", "outcome")
        let durations = registry.makeHistograms(upstreamDuration, labelNames: "api")
        let success = registry.makeCounter(upstreamCalls, ["api": "unifiedorder", "outcome": "success"])
        let latency = registry.makeHistogram(upstreamDuration, ["api": "unifiedorder"])

        print("a notify settled: wxpay_notifies_total{outcome=\"settled\"} += 1")
        let notify = try Throughput.interleaved([
            ("  handle made once", { settled.increment() }),
            ("  string path (reference)", { reference.increment("wxpay_notifies_total", ["outcome": "settled"]) }),
        ], options)
        print("a WeChat call answered: wxpay_upstream_calls_total{api,outcome} += 1, a latency observed")
        let call = try Throughput.interleaved([
            ("  handles made once", {
                success.increment()
                latency.record(0.004)
            }),
            ("  family lookups (as Upstream counts)", {
                calls.labelled("unifiedorder", "success").increment()
                durations.labelled("unifiedorder").record(0.004)
            }),
            ("  string path (reference)", {
                reference.increment("wxpay_upstream_calls_total", ["api": "unifiedorder", "outcome": "success"])
                reference.observe("wxpay_upstream_duration_seconds", 0.004, ["api": "unifiedorder"])
            }),
        ], options)
        // Both paths must have counted every call, or the comparison is of different work.
        guard settled.value > 0, reference.count("wxpay_notifies_total", ["outcome": "settled"]) > 0 else {
            throw BenchmarkFailure("a path counted nothing")
        }
        print("handle / string path: notify \(String(format2: notify[0].median / notify[1].median))x, "
              + "WeChat call \(String(format2: call[0].median / call[2].median))x (family "
              + "\(String(format2: call[1].median / call[2].median))x), by wall time; by CPU time "
              + "\(String(format2: notify[0].cpuMedian / notify[1].cpuMedian))x and "
              + "\(String(format2: call[0].cpuMedian / call[2].cpuMedian))x")
    }
}

/// The string path as the registry ran it before handles: every count builds its key (the name and
/// its `k=v` labels, sorted) and updates a dictionary under the registry's one lock.
private final class StringPathRegistry: Sendable {
    private struct Key: Hashable {
        var name: String
        var labels: [String]
    }

    private struct Histogram {
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

    private struct State {
        var counters: [Key: Double] = [:]
        var histograms: [Key: Histogram] = [:]
    }

    private let state = Mutex(State())

    func increment(_ name: String, by amount: Double = 1, _ labels: [String: String] = [:]) {
        let key = Self.key(name, labels)
        state.withLock { $0.counters[key, default: 0] += amount }
    }

    func observe(_ name: String, _ value: Double, _ labels: [String: String] = [:]) {
        let key = Self.key(name, labels)
        let buckets = MetricsRegistry.latencyBuckets
        state.withLock { state in
            state.histograms[key, default: Histogram(buckets: buckets, counts: Array(repeating: 0, count: buckets.count))]
                .record(value)
        }
    }

    func count(_ name: String, _ labels: [String: String]) -> Double {
        let key = Self.key(name, labels)
        return state.withLock { $0.counters[key] ?? 0 }
    }

    private static func key(_ name: String, _ labels: [String: String]) -> Key {
        guard labels.count > 1 else { return Key(name: name, labels: labels.map { $0.key + "=" + $0.value }) }
        return Key(name: name, labels: labels.map { $0.key + "=" + $0.value }.sorted())
    }
}
