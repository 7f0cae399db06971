// SPDX-License-Identifier: Apache-2.0
import Observability
import Testing

struct MetricsTests {
    static let notifies = Metric<Counter>("wxpay_notifies_total", help: "Payment notifies by outcome.")
    static let waits = Metric<Gauge>("wxpay_waits_open", help: "Order queries waiting for a final state.")
    static let upstream = Metric<Histogram>("wxpay_upstream_duration_seconds", help: "Latency of calls to WeChat Pay.")

    @Test func countersGaugesAndHistogramsAreExposedInPrometheusTextFormat() {
        let metrics = MetricsRegistry()
        metrics.describe(Self.notifies)
        let settled = metrics.makeCounter(Self.notifies, ["outcome": "settled"])
        settled.increment()
        settled.increment()
        metrics.makeGauge(Self.waits).set(3)
        metrics.makeHistogram(Self.upstream, ["api": "orderquery"]).record(0.02)
        let text = metrics.exposition()
        #expect(text.contains("# TYPE wxpay_notifies_total counter"))
        #expect(text.contains(#"wxpay_notifies_total{outcome="settled"} 2"#))
        #expect(text.contains("wxpay_waits_open 3"))
        #expect(text.contains(#"wxpay_upstream_duration_seconds_bucket{api="orderquery",le="0.025"} 1"#))
        #expect(text.contains(#"wxpay_upstream_duration_seconds_bucket{api="orderquery",le="0.01"} 0"#))
        #expect(text.contains(#"wxpay_upstream_duration_seconds_count{api="orderquery"} 1"#))
        #expect(metrics.counter("wxpay_notifies_total", ["outcome": "settled"]) == 2)
        #expect(settled.value == 2)
    }

    @Test func labelValuesAreEscaped() {
        let metrics = MetricsRegistry()
        metrics.makeCounter(Metric("x_total", help: "x"), ["reason": "a\"b\\c"]).increment()
        #expect(metrics.exposition().contains(#"x_total{reason="a\"b\\c"} 1"#))
    }

    @Test func aDescribedMetricWithoutASampleIsStillDeclared() {
        let metrics = MetricsRegistry()
        metrics.describe(Metric<Gauge>("wxpay_outbox_dead", help: "Outbox events given up on."))
        metrics.makeCounter(Self.notifies, ["outcome": "settled"]).increment()
        let text = metrics.exposition()
        #expect(text.contains("# HELP wxpay_outbox_dead Outbox events given up on.\n# TYPE wxpay_outbox_dead gauge"))
        #expect(!text.contains("wxpay_outbox_dead 0"))
        #expect(text.contains("# TYPE wxpay_notifies_total counter"))
    }

    @Test func aHandleMadeAheadIsExportedFromItsFirstEventOrOncePublished() {
        let metrics = MetricsRegistry()
        let duplicate = metrics.makeCounter(Self.notifies, ["outcome": "duplicate"])
        let settled = metrics.makeCounter(Self.notifies, ["outcome": "settled"])
        let waits = metrics.makeGauge(Self.waits)
        let latency = metrics.makeHistogram(Self.upstream)
        #expect(metrics.exposition() == "\n")
        settled.publish()
        #expect(metrics.exposition() == "# HELP wxpay_notifies_total wxpay_notifies_total\n# TYPE wxpay_notifies_total counter\n"
            + "wxpay_notifies_total{outcome=\"settled\"} 0\n")
        duplicate.increment(by: 0)
        waits.add(0)
        latency.record(.milliseconds(20))
        let text = metrics.exposition()
        #expect(text.contains(#"wxpay_notifies_total{outcome="duplicate"} 0"#))
        #expect(text.contains("wxpay_waits_open 0"))
        #expect(text.contains("wxpay_upstream_duration_seconds_count 1"))
        #expect(text.contains("wxpay_upstream_duration_seconds_sum 0.02"))
    }

    @Test func aNameAndLabelSetIsOneSeriesHoweverManyHandlesAreMadeOfIt() {
        let metrics = MetricsRegistry()
        let one = metrics.makeCounter(Self.notifies, ["outcome": "rejected", "reason": "bad_sign"])
        let other = metrics.makeCounter(Self.notifies, ["reason": "bad_sign", "outcome": "rejected"])
        let family = metrics.makeCounters(Self.notifies, labelNames: "outcome", "reason")
        one.increment()
        other.increment()
        family.labelled("rejected", "bad_sign").increment()
        family.labelled("rejected", "unknown_order").increment(by: 4)
        #expect(metrics.counter("wxpay_notifies_total", ["outcome": "rejected", "reason": "bad_sign"]) == 3)
        #expect(metrics.counter("wxpay_notifies_total", ["outcome": "rejected", "reason": "unknown_order"]) == 4)
        // Labels in name order, whatever order they were given in.
        #expect(metrics.exposition().contains(#"wxpay_notifies_total{outcome="rejected",reason="bad_sign"} 3"#))
    }

    @Test func countsFromManyTasksAtOnceAreExact() async {
        let metrics = MetricsRegistry()
        let counter = metrics.makeCounter(Self.notifies, ["outcome": "settled"])
        let gauge = metrics.makeGauge(Self.waits)
        let histogram = metrics.makeHistogram(Self.upstream)
        let family = metrics.makeCounters(Self.notifies, labelNames: "outcome")
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for _ in 0..<10_000 {
                        counter.increment()
                        gauge.add(1)
                        gauge.add(-0.5)
                        histogram.record(0.001)
                        family.labelled(task % 2 == 0 ? "even" : "odd").increment()
                    }
                }
            }
        }
        #expect(counter.value == 80_000)
        #expect(gauge.value == 40_000)
        #expect(metrics.counter("wxpay_notifies_total", ["outcome": "even"]) == 40_000)
        #expect(metrics.exposition().contains("wxpay_upstream_duration_seconds_count 80000"))
        #expect(metrics.exposition().contains(#"wxpay_upstream_duration_seconds_bucket{le="0.005"} 80000"#))
    }
}
