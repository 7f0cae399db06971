// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// A queue of events posted from anywhere (a signal handler's queue, another task) and read by one
/// task at a time. A read waits for the next event; it ends with nil once the mailbox is closed or
/// the reading task is cancelled, so no reader outlives its task.
final class Mailbox<Element: Sendable>: Sendable {
    private struct State {
        var pending: [Element] = []
        var reader: CheckedContinuation<Element?, Never>?
        var closed = false
    }

    private let state = Mutex(State())

    init() {}

    func post(_ element: Element) {
        let reader = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            guard !state.closed else { return nil }
            guard let reader = state.reader else {
                state.pending.append(element)
                return nil
            }
            state.reader = nil
            return reader
        }
        reader?.resume(returning: element)
    }

    /// The next event, or nil once closed (and drained) or when the calling task is cancelled.
    func next() async -> Element? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
                // `.some(nil)`: answer nil now; `nil`: wait for a post.
                let ready = state.withLock { state -> Element?? in
                    if !state.pending.isEmpty { return .some(state.pending.removeFirst()) }
                    // The cancellation handler may have run before the reader was in place.
                    if state.closed || Task.isCancelled { return .some(nil) }
                    precondition(state.reader == nil, "a mailbox is read by one task at a time")
                    state.reader = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            takeReader()?.resume(returning: nil)
        }
    }

    /// No more events: a waiting read, and every later one once the queue is drained, answers nil.
    func close() {
        let reader = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            state.closed = true
            guard state.pending.isEmpty else { return nil }
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
    }

    private func takeReader() -> CheckedContinuation<Element?, Never>? {
        state.withLock { state in
            defer { state.reader = nil }
            return state.reader
        }
    }
}
