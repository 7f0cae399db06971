// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Cancels one piece of work once, whoever asks first and from any thread, and runs what the work
/// registered for that: an HTTP request's handler (its task, or what a deferred handler said
/// cancelling means), a held order wait (take it out of its parking).
///
/// The work registers again each time what cancelling means changes (a wait parked anew); a
/// cancellation that came first runs the action at once, so none is lost between the two.
public final class CancellationLatch: Sendable {
    private struct State {
        var cancelled = false
        var action: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    public init() {}

    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Runs `action` on `cancel`, or at once when already cancelled; it replaces an action
    /// registered before and not yet run.
    public func whenCancelled(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard !state.cancelled else { return true }
            state.action = action
            return false
        }
        if runNow { action() }
    }

    /// Cancels: the registered action runs now, on this thread, outside any lock. Later calls do
    /// nothing.
    public func cancel() {
        let action = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.cancelled else { return nil }
            state.cancelled = true
            defer { state.action = nil }
            return state.action
        }
        action?()
    }

    /// The work ended without being cancelled: its action is let go without running.
    public func forget() {
        state.withLock { $0.action = nil }
    }
}
