// SPDX-License-Identifier: Apache-2.0
import Dispatch
import FIFO
import Foundation
import StorageCore
import Synchronization

/// The one thread that writes, owning the one write connection, with group commit.
///
/// Whatever is queued when the thread becomes free runs in one `BEGIN IMMEDIATE … COMMIT`. Results
/// are delivered after COMMIT returns. With `synchronous=FULL` that is one fsync for the whole batch
/// instead of one per operation, and no waiting when idle: a lone write is a batch of one.
///
/// A failing operation is rolled back alone, and the others commit. That takes a SAVEPOINT around
/// each operation, which is not free: SQLite copies every page an operation touches into the
/// savepoint's journal first (a payment touches a dozen: the order's row, its indexes, the
/// timeline, the outbox), about a tenth of the SQLite work of a payment. Operations almost never
/// fail, so a batch first runs without savepoints; if one fails, the whole transaction is rolled
/// back, nothing of it delivered, and the batch runs again the careful way, each operation in its
/// own savepoint, whose outcome is the one delivered. An operation's body may therefore run twice;
/// it must have no effect beyond the connection (`SQLiteOrderStore.write` says so to its callers).
/// After a failure the next batches go the careful way at once for a while, so a stream of failing
/// writes costs no more than it did before. (What the store refuses by its rules, a conflicting
/// create or a refund beyond the amount, it answers as a result, not a failure; writes fail for
/// the files' sake, a full disk or an I/O error, and for a constraint SQLite itself enforces.)
final class SQLiteWriter: Sendable {
    private enum Item: Sendable {
        case write(WriteJob)
        case read(ReadJob)
    }

    private struct Queue {
        var items = FIFOQueue<Item>()
        var isClosed = false
    }

    private enum Work {
        case batch([Item])
        case sleep
        case exit
    }

    private let connection: SQLiteConnection
    private let maxBatchSize: Int
    private let queue = Mutex(Queue())
    private let wakeup = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)
    private let transactionCount = Atomic<Int>(0)
    private let operationCount = Atomic<Int>(0)
    private let replayCount = Atomic<Int>(0)
    /// Batches still to run with a savepoint per operation since the last failure (writer thread only).
    private let carefulBatches = Atomic<Int>(0)
    /// How many batches after a failing one skip the first, savepoint-free pass.
    static let carefulBatchesAfterFailure = 64
    /// When a write last failed where the files are (disk full, I/O error), in `DispatchTime`
    /// nanoseconds; 0 for never. Readiness asks for it (`SQLiteOrderStore.isHealthy`): its own probe
    /// writes nothing, so it commits on a full disk.
    private let lastFileFailure = Atomic<UInt64>(0)
    /// How long after such a failure the store reports itself unhealthy. A full disk keeps failing
    /// the writes sent to it, so readiness stays off while traffic comes; without traffic it comes
    /// back after this long, and the next writes tell again.
    static let fileFailureMemory: UInt64 = 10_000_000_000
    /// Test hook: the number of queued items, to build a batch deterministically.
    var queuedCount: Int { queue.withLock { $0.items.count } }

    /// Starts the thread; `connection` belongs to it from now on. `name` is the thread's in `top -H`
    /// and `perf`: at most 15 bytes, or Linux refuses it and the thread shows its creator's.
    init(connection: SQLiteConnection, maxBatchSize: Int, name: String) {
        precondition(maxBatchSize >= 1)
        self.connection = connection
        self.maxBatchSize = maxBatchSize
        StoreThread.start(named: name) { [self] in self.runLoop() }
    }

    /// Queues a write; fails it with `.closed` if the writer was closed.
    func submit(_ job: WriteJob) {
        enqueue(.write(job), orFail: job.fail)
    }

    /// Queues a read on the write connection (in-memory databases have no other connection).
    func submit(_ job: ReadJob) {
        enqueue(.read(job), orFail: job.fail)
    }

    /// Transactions committed or rolled back, and operations run in them, since start; a batch run
    /// again the careful way after a failure counts once, as the transactions its outcome came from.
    var statistics: (transactions: Int, operations: Int) {
        (transactionCount.load(ordering: .relaxed), operationCount.load(ordering: .relaxed))
    }

    /// Batches whose savepoint-free pass failed and ran again with a savepoint per operation.
    var replayedBatches: Int { replayCount.load(ordering: .relaxed) }

    /// Whether a write failed for want of space or an I/O error in the last `fileFailureMemory`.
    var failedWritesRecently: Bool {
        let last = lastFileFailure.load(ordering: .relaxed)
        return last != 0 && DispatchTime.now().uptimeNanoseconds - last < Self.fileFailureMemory
    }

    /// Notes a failure of the files (not of an operation's own rules) for readiness.
    private func note(_ error: StorageError) {
        if error == .full || error == .io { lastFileFailure.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed) }
    }

    /// Refuses new work, finishes what is queued, closes the connection and ends the thread.
    func close() async {
        guard requestClose() else { return }
        await Blocking.run { [exited] in exited.wait() }
    }

    /// Starts closing without waiting for the thread. Returns whether this call started it.
    @discardableResult
    func requestClose() -> Bool {
        let first = queue.withLock { queue in
            defer { queue.isClosed = true }
            return !queue.isClosed
        }
        if first { wakeup.signal() }
        return first
    }

    private func enqueue(_ item: Item, orFail fail: (StorageError) -> Void) {
        let accepted = queue.withLock { queue in
            guard !queue.isClosed else { return false }
            queue.items.append(item)
            return true
        }
        if accepted {
            wakeup.signal()
        } else {
            fail(.closed)
        }
    }

    private func runLoop() {
        while true {
            // Extra signals (work already taken by an earlier batch) only cause an empty pass.
            let work = queue.withLock { queue -> Work in
                if !queue.items.isEmpty {
                    return .batch(queue.items.popFirst(maxBatchSize))
                }
                return queue.isClosed ? .exit : .sleep
            }
            switch work {
            case .sleep:
                wakeup.wait()
            case .exit:
                // SQLite's advice for long-lived connections: refresh planner statistics at close.
                _ = try? connection.run("PRAGMA optimize")
                connection.close()
                exited.signal()
                return
            case .batch(let items):
                var writes: [WriteJob] = []
                for item in items {
                    switch item {
                    // Reads queued together with writes were concurrent with them, so running them
                    // first, outside the transaction, never hides a write their caller awaited.
                    case .read(let job): job.run(connection)
                    case .write(let job): writes.append(job)
                    }
                }
                if !writes.isEmpty { run(writes) }
            }
        }
    }

    /// Runs a batch: in one transaction without savepoints when that succeeds whole, otherwise the
    /// careful way (`commit`).
    private func run(_ jobs: [WriteJob]) {
        if carefulBatches.load(ordering: .relaxed) > 0 {
            carefulBatches.subtract(1, ordering: .relaxed)
        } else if commitWhole(jobs) {
            return
        }
        commit(jobs)
    }

    /// Runs every job in one transaction without savepoints and commits, delivering the results;
    /// returns `false`, with everything rolled back and nothing delivered or failed, when any job
    /// or the transaction itself failed, for the caller to run the batch again the careful way.
    private func commitWhole(_ jobs: [WriteJob]) -> Bool {
        do throws(StorageError) {
            try connection.run("BEGIN IMMEDIATE")
        } catch {
            return false
        }
        // Counted as they start, as the careful way counts them; taken back if the batch runs again.
        transactionCount.add(1, ordering: .relaxed)
        var deliveries: [Delivery] = []
        deliveries.reserveCapacity(jobs.count)
        var failed = false
        for job in jobs {
            operationCount.add(1, ordering: .relaxed)
            guard case .success(let delivery) = job.perform(connection) else {
                failed = true
                break
            }
            deliveries.append(delivery)
        }
        if !failed {
            do throws(StorageError) {
                try connection.run("COMMIT")
                for delivery in deliveries { delivery.deliver() }
                return true
            } catch {
                note(error)
            }
        }
        if !connection.isAutocommit { _ = try? connection.run("ROLLBACK") }
        transactionCount.subtract(1, ordering: .relaxed)
        operationCount.subtract(deliveries.count + (failed ? 1 : 0), ordering: .relaxed)
        replayCount.add(1, ordering: .relaxed)
        carefulBatches.store(Self.carefulBatchesAfterFailure, ordering: .relaxed)
        return false
    }

    /// Runs the jobs, each in its own savepoint, in as few transactions as possible: one, unless
    /// SQLite itself abandons a transaction after a failure (disk full, I/O error), in which case
    /// the jobs already run in it fail and the rest start a new one.
    // Transaction control goes through the statement cache too: parsing SAVEPOINT and RELEASE anew
    // for every operation is wasted work on the one thread every write waits for.
    private func commit(_ jobs: [WriteJob]) {
        var next = 0
        while next < jobs.count {
            do throws(StorageError) {
                try connection.run("BEGIN IMMEDIATE")
            } catch {
                note(error)
                for job in jobs[next...] { job.fail(error) }
                return
            }
            transactionCount.add(1, ordering: .relaxed)
            var succeeded: [(job: WriteJob, delivery: Delivery)] = []
            var failed: [(job: WriteJob, error: StorageError)] = []
            var abandoned: StorageError?
            while next < jobs.count, abandoned == nil {
                let job = jobs[next]
                next += 1
                operationCount.add(1, ordering: .relaxed)
                switch runInSavepoint(job) {
                case .success(let delivery):
                    succeeded.append((job, delivery))
                case .failure(let error):
                    note(error)
                    failed.append((job, error))
                    if connection.isAutocommit { abandoned = error }
                }
            }
            if let abandoned {
                for (job, _) in succeeded { job.fail(abandoned) }
                for (job, error) in failed { job.fail(error) }
                continue
            }
            do throws(StorageError) {
                try connection.run("COMMIT")
            } catch {
                note(error)
                if !connection.isAutocommit { _ = try? connection.run("ROLLBACK") }
                for (job, _) in succeeded { job.fail(error) }
                for (job, error) in failed { job.fail(error) }
                continue
            }
            for (_, delivery) in succeeded { delivery.deliver() }
            for (job, error) in failed { job.fail(error) }
        }
    }

    private func runInSavepoint(_ job: WriteJob) -> Result<Delivery, StorageError> {
        do throws(StorageError) {
            try connection.run("SAVEPOINT operation")
        } catch {
            return .failure(error)
        }
        var result = job.perform(connection)
        if case .success = result {
            do throws(StorageError) {
                try connection.run("RELEASE operation")
                return result
            } catch {
                result = .failure(error)
            }
        }
        // Undo this operation alone. When SQLite already rolled the whole transaction back there
        // is no savepoint left, and the caller sees that in `isAutocommit`.
        if !connection.isAutocommit {
            _ = try? connection.run("ROLLBACK TO operation")
            _ = try? connection.run("RELEASE operation")
        }
        return result
    }
}
