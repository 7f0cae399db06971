// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Spaces calls evenly at `rate` per second: each caller is given the next free slot and sleeps
/// until it. Slots are handed out under a lock, so concurrent callers never share one.
final class RateLimiter: Sendable {
    private let spacing: Duration
    private let nextSlot = Mutex<ContinuousClock.Instant>(.now)

    /// - Parameter rate: calls per second, greater than 0.
    init(rate: Double) {
        precondition(rate > 0, "a rate limit must be positive")
        spacing = .nanoseconds(Int64((1e9 / rate).rounded(.up)))
    }

    /// Waits for this caller's slot. Returns early (without error) when the task is cancelled.
    func acquire() async {
        let now = ContinuousClock.now
        let slot = nextSlot.withLock { next -> ContinuousClock.Instant in
            // An idle limiter does not bank slots: a burst after a pause is still spaced.
            let slot = max(next, now)
            next = slot + spacing
            return slot
        }
        if slot > now { try? await Task.sleep(until: slot, clock: .continuous) }
    }
}
