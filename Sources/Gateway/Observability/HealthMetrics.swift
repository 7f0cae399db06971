// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import Synchronization

/// Readiness as a metric: `/readyz` and every `/metrics` scrape ask the database, and what they
/// found is `wxpay_database_up`, `wxpay_ready` and how long the answer took. An alert on a gauge
/// that only a background task refreshes would go on reporting a database that answered minutes
/// ago; measured at the scrape, it is the state Prometheus saw.
extension GatewayContext {
    /// How long the database has to answer before the instance counts as not ready.
    static let readinessDeadline: Duration = .seconds(1)

    /// Whether the database answers a trivial query on its read and write paths within a second,
    /// recorded in the readiness gauges. The check runs detached, so a store stuck behind a long
    /// write cannot hold the probe past its deadline.
    public func probeReadiness() async -> Bool {
        let started = ContinuousClock.now
        let answer = ReadinessAnswer()
        let store = self.store
        let healthy = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            answer.install(continuation)
            Task { answer.resolve(await store.isHealthy()) }
            Task {
                try? await Task.sleep(for: Self.readinessDeadline)
                answer.resolve(false)
            }
        }
        let health = instruments.health
        health.probeDuration.record(ContinuousClock.now - started)
        health.databaseUp.set(healthy ? 1 : 0)
        // Today the database is the only condition of readiness; another one joins here.
        health.ready.set(healthy ? 1 : 0)
        return healthy
    }
}

/// The readiness gauges and the probe's latency.
struct HealthInstruments: Sendable {
    static let databaseUp = Metric<Gauge>(
        "wxpay_database_up", help: "1 when the database answered the last readiness probe (each scrape and /readyz) within 1 s.")
    static let ready = Metric<Gauge>("wxpay_ready", help: "1 when /readyz would answer 200: take the instance out of rotation at 0.")
    static let probeDuration = Metric<Histogram>(
        "wxpay_database_probe_duration_seconds",
        help: "How long the database took to answer a readiness probe (capped at the 1 s deadline).")

    let databaseUp: Gauge
    let ready: Gauge
    let probeDuration: Histogram

    init(_ registry: MetricsRegistry) {
        registry.describe(Self.databaseUp, Self.ready, Self.probeDuration)
        databaseUp = registry.makeGauge(Self.databaseUp)
        ready = registry.makeGauge(Self.ready)
        probeDuration = registry.makeHistogram(Self.probeDuration)
    }
}

/// The first of "healthy" or "deadline passed" answers the probe; the other is ignored.
private final class ReadinessAnswer: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<Bool, Never>?, result: Bool?)>((nil, nil))

    func install(_ continuation: CheckedContinuation<Bool, Never>) {
        let early = state.withLock { state -> Bool? in
            if let result = state.result { return result }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    func resolve(_ value: Bool) {
        let continuation = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.result == nil else { return nil }
            state.result = value
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: value)
    }
}
