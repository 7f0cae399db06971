// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import Synchronization

/// Readiness as a metric: `/readyz` and every `/metrics` scrape ask the database, and what they
/// found is `wxpay_database_up`, `wxpay_ready` and how long the answer took. An alert on a gauge
/// that only a background task refreshes would go on reporting a database that answered minutes
/// ago; measured at the scrape, it is the state Prometheus saw.
extension OrderService {
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
        let elapsed = ContinuousClock.now - started
        metrics.observe("wxpay_database_probe_duration_seconds",
                        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
        metrics.set("wxpay_database_up", to: healthy ? 1 : 0)
        // Today the database is the only condition of readiness; another one joins here.
        metrics.set("wxpay_ready", to: healthy ? 1 : 0)
        return healthy
    }

    static func describeHealthMetrics(_ metrics: MetricsRegistry) {
        metrics.describe("wxpay_database_up", type: "gauge",
                         help: "1 when the database answered the last readiness probe (each scrape and /readyz) within 1 s.")
        metrics.describe("wxpay_ready", type: "gauge", help: "1 when /readyz would answer 200: take the instance out of rotation at 0.")
        metrics.describe("wxpay_database_probe_duration_seconds", type: "histogram",
                         help: "How long the database took to answer a readiness probe (capped at the 1 s deadline).")
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
