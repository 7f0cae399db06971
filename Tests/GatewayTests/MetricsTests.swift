// SPDX-License-Identifier: Apache-2.0
import Gateway
import Testing

struct MetricsTests {
    @Test func countersGaugesAndHistogramsAreExposedInPrometheusTextFormat() {
        let metrics = MetricsRegistry()
        metrics.describe("wxpay_notifies_total", type: "counter", help: "Payment notifies by outcome.")
        metrics.increment("wxpay_notifies_total", ["outcome": "settled"])
        metrics.increment("wxpay_notifies_total", ["outcome": "settled"])
        metrics.set("wxpay_waits_open", to: 3)
        metrics.observe("wxpay_upstream_duration_seconds", 0.02, ["api": "orderquery"])
        let text = metrics.exposition()
        #expect(text.contains("# TYPE wxpay_notifies_total counter"))
        #expect(text.contains(#"wxpay_notifies_total{outcome="settled"} 2"#))
        #expect(text.contains("wxpay_waits_open 3"))
        #expect(text.contains(#"wxpay_upstream_duration_seconds_bucket{api="orderquery",le="0.025"} 1"#))
        #expect(text.contains(#"wxpay_upstream_duration_seconds_bucket{api="orderquery",le="0.01"} 0"#))
        #expect(text.contains(#"wxpay_upstream_duration_seconds_count{api="orderquery"} 1"#))
        #expect(metrics.counter("wxpay_notifies_total", ["outcome": "settled"]) == 2)
    }

    @Test func labelValuesAreEscaped() {
        let metrics = MetricsRegistry()
        metrics.increment("x_total", ["reason": "a\"b\\c"])
        #expect(metrics.exposition().contains(#"x_total{reason="a\"b\\c"} 1"#))
    }

    @Test func aDescribedMetricWithoutASampleIsStillDeclared() {
        let metrics = MetricsRegistry()
        metrics.describe("wxpay_outbox_dead", type: "gauge", help: "Outbox events given up on.")
        metrics.increment("wxpay_notifies_total", ["outcome": "settled"])
        let text = metrics.exposition()
        #expect(text.contains("# HELP wxpay_outbox_dead Outbox events given up on.\n# TYPE wxpay_outbox_dead gauge"))
        #expect(!text.contains("wxpay_outbox_dead 0"))
        #expect(text.contains("# TYPE wxpay_notifies_total counter"))
    }
}
