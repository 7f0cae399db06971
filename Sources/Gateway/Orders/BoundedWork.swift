// SPDX-License-Identifier: Apache-2.0
import FIFO
import Synchronization

/// Runs queued operations with at most `width` of them in flight, in the order queued.
///
/// Why: 10,000 `wait` queries starting together each started an orderquery at once, every one a
/// task with its own frames, XML buffers and a queued store write. The peak of all of them alive
/// together stayed in the process's memory long after, and it would hammer WeChat too. Queued
/// operations cost a closure each until a worker takes them.
public final class BoundedWork: Sendable {
    private struct State {
        var queue = FIFOQueue<@Sendable () async -> Void>()
        var workers = 0
    }

    private let state = Mutex(State())
    private let width: Int

    /// - Parameter width: the most operations running at once (at least 1).
    public init(width: Int) {
        precondition(width >= 1)
        self.width = width
    }

    /// Operations queued or running now.
    public var backlog: Int { state.withLock { $0.queue.count + $0.workers } }

    /// Queues `operation`; it runs once fewer than `width` queued before it are running.
    public func submit(_ operation: @escaping @Sendable () async -> Void) {
        let startWorker = state.withLock { state -> Bool in
            state.queue.append(operation)
            guard state.workers < width else { return false }
            state.workers += 1
            return true
        }
        if startWorker { Task { await self.drain() } }
    }

    private func drain() async {
        while let operation = next() {
            await operation()
        }
    }

    /// The next operation, or nil after retiring this worker when none is left.
    private func next() -> (@Sendable () async -> Void)? {
        state.withLock { state in
            guard let operation = state.queue.popFirst() else {
                state.workers -= 1
                // Idle: the storage a burst grew goes back.
                state.queue.removeAll()
                return nil
            }
            return operation
        }
    }
}
