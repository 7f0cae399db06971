// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// A graceful shutdown, fired once: a `ServiceGroup` makes one per service and fires it when that
/// service's turn to stop comes; a test makes one to stop a service without signals.
///
/// Code running under it (`run`, and every child and unstructured task made there) reaches it
/// through `withGracefulShutdownHandler`, `gracefulShutdown()` and `cancelWhenGracefulShutdown`,
/// without being passed anything.
///
/// ```swift
/// let shutdown = GracefulShutdownTrigger()
/// async let stopped: Void = shutdown.run { try await service.run() }
/// shutdown.trigger()
/// try await stopped
/// ```
public final class GracefulShutdownTrigger: Sendable {
    private struct State {
        var triggered = false
        var handlers: [UInt64: @Sendable () -> Void] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    public var isTriggered: Bool { state.withLock { $0.triggered } }

    /// Fires the shutdown: every handler registered under it runs now (once), and every one
    /// registered later runs at once.
    public func trigger() {
        let handlers = state.withLock { state -> [(UInt64, @Sendable () -> Void)] in
            guard !state.triggered else { return [] }
            state.triggered = true
            defer { state.handlers = [:] }
            return state.handlers.sorted { $0.key < $1.key }
        }
        for (_, handler) in handlers { handler() }
    }

    /// Runs `operation` with this trigger as its task's graceful shutdown.
    public func run<T>(_ operation: () async throws -> T) async rethrows -> T {
        try await GracefulShutdown.$current.withValue(self) { try await operation() }
    }

    /// Registers `handler`; nil when the shutdown was fired already (the caller runs it).
    fileprivate func register(_ handler: @escaping @Sendable () -> Void) -> UInt64? {
        state.withLock { state in
            guard !state.triggered else { return nil }
            defer { state.nextID += 1 }
            state.handlers[state.nextID] = handler
            return state.nextID
        }
    }

    fileprivate func unregister(_ id: UInt64) {
        _ = state.withLock { $0.handlers.removeValue(forKey: id) }
    }
}

enum GracefulShutdown {
    @TaskLocal static var current: GracefulShutdownTrigger?
}

/// Runs `operation`; when the task's graceful shutdown fires meanwhile (or had fired already),
/// `handler` runs once, on the thread that fired it, to make `operation` wind down (stop taking new
/// work, finish what is in hand). Outside any graceful shutdown, only runs `operation`.
public func withGracefulShutdownHandler<T>(operation: () async throws -> T,
                                           onGracefulShutdown handler: @escaping @Sendable () -> Void) async rethrows -> T {
    guard let trigger = GracefulShutdown.current else { return try await operation() }
    guard let id = trigger.register(handler) else {
        handler()
        return try await operation()
    }
    defer { trigger.unregister(id) }
    return try await operation()
}

/// Waits until the task's graceful shutdown fires; throws `CancellationError` if the task is
/// cancelled first (or, outside any graceful shutdown, when it is cancelled).
public func gracefulShutdown() async throws {
    let fired = Mailbox<Bool>()
    try await withGracefulShutdownHandler {
        guard await fired.next() != nil else { throw CancellationError() }
    } onGracefulShutdown: {
        fired.post(true)
    }
}

/// Runs `operation` in a task of its own that is cancelled when the graceful shutdown fires (or
/// when the calling task is cancelled), and answers what it returns: for loops that stop when
/// cancelled, finishing the call in hand.
public func cancelWhenGracefulShutdown<T: Sendable>(_ operation: @escaping @Sendable () async -> T) async -> T {
    // An unstructured task, so the handler can cancel it from any thread; it keeps the caller's
    // task-locals and priority, and the caller waits for it either way.
    let task = Task { await operation() }
    return await withTaskCancellationHandler {
        await withGracefulShutdownHandler { await task.value } onGracefulShutdown: { task.cancel() }
    } onCancel: {
        task.cancel()
    }
}

/// `cancelWhenGracefulShutdown` for an operation that throws; a cancelled one may throw
/// `CancellationError`.
public func cancelWhenGracefulShutdown<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    let task = Task { try await operation() }
    return try await withTaskCancellationHandler {
        try await withGracefulShutdownHandler { try await task.value } onGracefulShutdown: { task.cancel() }
    } onCancel: {
        task.cancel()
    }
}
