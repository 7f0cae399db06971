// SPDX-License-Identifier: Apache-2.0
import Dispatch
import FIFO
import Foundation
import StorageCore
import Synchronization

/// Read-only connections, each on its own thread, taking reads from one shared queue. In WAL mode
/// they read the last committed state while the writer writes.
final class SQLiteReaderPool: Sendable {
    private struct Queue {
        var jobs = FIFOQueue<ReadJob>()
        var isClosed = false
    }

    private enum Next {
        case job(ReadJob)
        case sleep
        case exit
    }

    private let queue = Mutex(Queue())
    private let wakeup = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)
    private let threadCount: Int

    /// Starts one thread per connection; the connections belong to the threads from now on. Each
    /// thread is `name-index`: at most 15 bytes, or Linux refuses it (see `SQLiteWriter`).
    init(connections: [SQLiteConnection], name: String) {
        threadCount = connections.count
        for (index, connection) in connections.enumerated() {
            StoreThread.start(named: "\(name)-\(index)") { [self] in self.runLoop(connection) }
        }
    }

    func submit(_ job: ReadJob) {
        let accepted = queue.withLock { queue in
            guard !queue.isClosed else { return false }
            queue.jobs.append(job)
            return true
        }
        if accepted {
            wakeup.signal()
        } else {
            job.fail(.closed)
        }
    }

    /// Refuses new reads, finishes queued ones, closes the connections and ends the threads.
    func close() async {
        guard requestClose() else { return }
        await Blocking.run { [exited, threadCount] in
            for _ in 0..<threadCount { exited.wait() }
        }
    }

    /// Starts closing without waiting for the threads. Returns whether this call started it.
    @discardableResult
    func requestClose() -> Bool {
        let first = queue.withLock { queue in
            defer { queue.isClosed = true }
            return !queue.isClosed
        }
        if first {
            for _ in 0..<threadCount { wakeup.signal() }
        }
        return first
    }

    private func runLoop(_ connection: SQLiteConnection) {
        while true {
            let next = queue.withLock { queue -> Next in
                if let job = queue.jobs.popFirst() { return .job(job) }
                return queue.isClosed ? .exit : .sleep
            }
            switch next {
            case .exit:
                connection.close()
                exited.signal()
                return
            case .sleep:
                // Each read signals once; a signal whose read another thread took costs one empty pass.
                wakeup.wait()
            case .job(let job):
                job.run(connection)
            }
        }
    }
}
