// SPDX-License-Identifier: Apache-2.0

// The string path (a name and a label dictionary at every call), kept while the call sites move
// to handles made once; removed when the last one has.
extension MetricsRegistry {
    public func describe(_ name: String, type: String, help: String) {
        switch MetricType(rawValue: type)! {
        case .counter: describe(Metric<Counter>(name, help: help))
        case .gauge: describe(Metric<Gauge>(name, help: help))
        case .histogram: describe(Metric<Histogram>(name, help: help))
        }
    }

    public func increment(_ name: String, by amount: Double = 1, _ labels: [String: String] = [:]) {
        makeCounter(Metric(name, help: ""), labels).increment(by: Int(amount))
    }

    public func set(_ name: String, to value: Double, _ labels: [String: String] = [:]) {
        makeGauge(Metric(name, help: ""), labels).set(value)
    }

    public func add(_ name: String, _ delta: Double, _ labels: [String: String] = [:]) {
        makeGauge(Metric(name, help: ""), labels).add(delta)
    }

    public func observe(_ name: String, _ value: Double, _ labels: [String: String] = [:],
                        buckets: [Double] = MetricsRegistry.latencyBuckets) {
        makeHistogram(Metric(name, help: ""), labels, buckets: buckets).record(value)
    }
}
