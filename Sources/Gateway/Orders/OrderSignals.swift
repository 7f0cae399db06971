// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// Wakes the queries waiting on an order the moment its state changes (a notify, a poll, a close),
/// so a `wait` answers at once instead of at its next poll.
///
/// Waiting holds no thread: a waiter is a stored continuation, resumed by `wake` or by its deadline.
///
/// A waiter reads the order's state and then waits; a change landing between the two would be a
/// lost wake-up, so waiters take a `token()` before reading and `wait(for:since:…)` returns at once
/// when the order was woken after that token.
public final class OrderSignals: Sendable {
    private struct Waiter {
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var waiters: [String: [UInt64: Waiter]] = [:]
        var nextID: UInt64 = 0
        var open = 0
        /// Counts wakes; `lastWake[key]` is the count when `key` was last woken.
        var epoch: UInt64 = 0
        var lastWake: [String: UInt64] = [:]
    }

    /// Keys whose last wake is remembered; older ones are forgotten (a waiter that old has long
    /// since re-read the state).
    private static let rememberedWakes = 100_000

    private let state = Mutex(State())

    public init() {}

    /// Number of waiters now (for the `waits open` gauge).
    public var openWaits: Int { state.withLock { $0.open } }

    /// The current wake count: take it before reading the state a wait depends on.
    public func token() -> UInt64 { state.withLock { $0.epoch } }

    /// Waits until `wake(key)` or until `seconds` pass. Returns true when woken (also when `key`
    /// was woken after `token`, before this call), false on timeout.
    public func wait(for key: String, since token: UInt64, seconds: Double) async -> Bool {
        guard seconds > 0 else { return false }
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let missed = state.withLock { state -> Bool in
                    if let woken = state.lastWake[key], woken > token { return true }
                    state.waiters[key, default: [:]][id] = Waiter(continuation: continuation)
                    state.open += 1
                    return false
                }
                if missed {
                    continuation.resume(returning: true)
                    return
                }
                Task {
                    try? await Task.sleep(for: .seconds(seconds))
                    self.resume(key: key, id: id, woken: false)
                }
            }
        } onCancel: {
            self.resume(key: key, id: id, woken: false)
        }
    }

    /// Wakes every waiter of `key`.
    public func wake(_ key: String) {
        let woken = state.withLock { state -> [Waiter] in
            state.epoch += 1
            state.lastWake[key] = state.epoch
            if state.lastWake.count > Self.rememberedWakes {
                let horizon = state.epoch - UInt64(Self.rememberedWakes / 2)
                state.lastWake = state.lastWake.filter { $0.value > horizon }
            }
            guard let waiters = state.waiters.removeValue(forKey: key) else { return [] }
            state.open -= waiters.count
            return Array(waiters.values)
        }
        for waiter in woken { waiter.continuation.resume(returning: true) }
    }

    private func resume(key: String, id: UInt64, woken: Bool) {
        let waiter = state.withLock { state -> Waiter? in
            guard let waiter = state.waiters[key]?.removeValue(forKey: id) else { return nil }
            if state.waiters[key]?.isEmpty == true { state.waiters.removeValue(forKey: key) }
            state.open -= 1
            return waiter
        }
        waiter?.continuation.resume(returning: woken)
    }
}

/// Runs at most one operation per key at a time: callers that arrive while one is in flight share
/// its result. This is how many clients waiting on one order cause one orderquery, not many.
public final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let inFlight = Mutex<[Key: Task<Value, Never>]>([:])

    public init() {}

    /// The result of `operation` for `key`, run now or joined if already running.
    public func run(_ key: Key, _ operation: @escaping @Sendable () async -> Value) async -> Value {
        let task = inFlight.withLock { inFlight -> Task<Value, Never> in
            if let running = inFlight[key] { return running }
            let task = Task { await operation() }
            inFlight[key] = task
            return task
        }
        let value = await task.value
        inFlight.withLock { inFlight in
            // Only the task that is still registered is removed (a later one may have replaced it).
            if inFlight[key] == task { inFlight.removeValue(forKey: key) }
        }
        return value
    }

    /// Whether an operation for `key` is running.
    public func isRunning(_ key: Key) -> Bool { inFlight.withLock { $0[key] != nil } }
}
