// SPDX-License-Identifier: Apache-2.0
// Over 400 lines as one file: the queues, the group commit, the pipelined reads and the
// reconnection all work on one lock-guarded state; split, each part would reach into the others'.
import Dispatch
import FIFO
import Foundation
import StorageCore
import Synchronization

/// A job for a pool thread. `perform` runs on the thread with a live connection and returns what
/// to hand back once the work is durable; `fail` reports any failure.
struct PGJob: Sendable {
    /// For batched writes: the order in which the batch takes its row locks (see `PostgresPool`).
    let lockKey: String
    /// The job as one statement, when it can be: sent with other jobs' statements without waiting
    /// for each answer, so a batch of them costs one round trip instead of one per statement.
    var statement: PGStatement? = nil
    let perform: @Sendable (PGConnection) -> Result<PGDelivery, StorageError>
    let fail: @Sendable (StorageError) -> Void
}

/// A job's one statement, and what its result means.
struct PGStatement: Sendable {
    let query: PGQuery
    /// The job's outcome from the statement's result; nil when the statement did not apply (a
    /// write whose condition no longer held): the job then runs through `perform`, as it would have.
    let complete: @Sendable (PGResult) -> Result<PGDelivery, StorageError>?
    /// How the statement joins others of its kind in one multi-row statement, when it can.
    var merge: PGMerge? = nil
}

/// Statements of one kind that a batch sends as one multi-row statement: the server plans,
/// starts and ends it once for the batch instead of once per write.
struct PGMerge: Sendable {
    /// Which multi-row statement; statements merge only with their own kind.
    let kind: String
    /// This statement's row of the multi-row statement's input.
    let row: [PGValue]
    /// The statement for several rows. Each row it returns ends with the 1-based position of the
    /// input row it belongs to; an input row without one did not apply.
    let many: @Sendable ([[PGValue]]) -> PGQuery
    /// The job's outcome from its row of the result (nil: it returned none), as `complete`.
    let complete: @Sendable (PGRow?) -> Result<PGDelivery, StorageError>?
}

/// Hands a result to its waiter; for a write, after COMMIT returned.
struct PGDelivery: Sendable {
    /// Orders whose state this write changed: other instances hear of them by NOTIFY at commit.
    var changedOrders: [String] = []
    let deliver: @Sendable () -> Void
}

/// Up to `size` threads, each owning at most one connection, opened when first needed and
/// replaced (with backoff) when it breaks. No libpq call ever runs on the Swift cooperative pool.
///
/// - **Reads** run on any free thread, in their own implicit transaction. Reads that are one
///   statement each (`PGStatement`) and are queued together go in one pipeline: one round trip.
/// - **Writes** are group-committed: a free thread takes every queued write (up to `maxBatchSize`)
///   and runs them in one `BEGIN … COMMIT`, so one WAL flush covers the batch. At most
///   `maxWritingThreads` threads commit at once, so writes queue up behind a commit in flight
///   and the next batch is larger: fewer, fuller transactions cost the server and the gateway
///   less per write (reads and exclusive writes still have the other threads). Results are delivered
///   after COMMIT returned. The batch runs its writes sorted by `lockKey` (each write locks rows
///   of one order or one outbox event only): every batch of every instance takes its locks in the
///   same order, so two batches can wait for each other but never deadlock. If a write fails
///   (a constraint), the transaction is rolled back and the others run again without it; a
///   deadlock or serialization failure the server reports anyway reruns the batch.
/// - **Writes that are one statement** (`PGStatement`: a conditional change made on what the
///   caller read before) are sent together, sorted by `lockKey`, in one pipeline after `BEGIN`
///   (those of one kind merged into one multi-row statement, `PGMerge`); then `COMMIT`: two
///   round trips for the whole batch. Those whose condition no longer held
///   wrote nothing and then run the usual way, in a transaction of their own after the COMMIT;
///   on any failure the whole batch runs the usual way.
/// - **Exclusive writes** (claims that lock many rows with `SKIP LOCKED`) run alone, in their own
///   transaction, so they never hold locks while waiting for another batch.
/// - When the server is unreachable, jobs fail at once with `unavailable` until the next connection
///   attempt is due (50 ms, doubling to 5 s), so callers answer 503 instead of hanging.
final class PostgresPool: Sendable {
    private enum Kind: Sendable {
        case read
        case write
        case exclusive
    }

    private struct Queue {
        var reads = FIFOQueue<(Kind, PGJob)>()
        var writes = FIFOQueue<PGJob>()
        var threads = 0
        /// Threads committing a batch of writes now.
        var writing = 0
        var sleeping = 0
        var signalled = 0
        var isClosed = false
        /// Connection attempts wait until then after a failed one.
        var retryAt: ContinuousClock.Instant?
        var backoff: Duration = PostgresPool.firstBackoff
    }

    private enum Work {
        case one(Kind, PGJob)
        case reads([PGJob])
        case batch([PGJob])
        case sleep
        case exit
    }

    static let firstBackoff: Duration = .milliseconds(50)
    static let maximumBackoff: Duration = .seconds(5)

    let settings: PostgresSettings
    private let size: Int
    private let maxBatchSize: Int
    private let maxWritingThreads: Int
    private let channel: String
    private let name: String
    private let queue = Mutex(Queue())
    private let wakeup = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)
    private let transactionCount = Atomic<Int>(0)
    private let operationCount = Atomic<Int>(0)
    private let oneStatementCount = Atomic<Int>(0)

    /// - Parameters:
    ///   - channel: the NOTIFY channel on which committed state changes are announced.
    ///   - name: the threads are `name-index` in `top -H` and `perf`: at most 15 bytes, or Linux
    ///     refuses the name and the thread shows its creator's.
    init(settings: PostgresSettings, size: Int, maxBatchSize: Int, maxWritingThreads: Int, channel: String, name: String) {
        precondition(size >= 1 && maxBatchSize >= 1 && maxWritingThreads >= 1)
        self.maxWritingThreads = maxWritingThreads
        self.settings = settings
        self.size = size
        self.maxBatchSize = maxBatchSize
        self.channel = channel
        self.name = name
    }

    /// Test hook: writes queued and not yet taken by a thread.
    var queuedWrites: Int { queue.withLock { $0.writes.count } }

    /// Write transactions committed or rolled back, operations run in them, and writes committed
    /// as one statement (`PGStatement`), since start.
    var statistics: (transactions: Int, operations: Int, oneStatement: Int) {
        (transactionCount.load(ordering: .relaxed), operationCount.load(ordering: .relaxed),
         oneStatementCount.load(ordering: .relaxed))
    }

    func submitRead(_ job: PGJob) { enqueue(.read, job) }
    func submitWrite(_ job: PGJob) { enqueue(.write, job) }
    func submitExclusive(_ job: PGJob) { enqueue(.exclusive, job) }

    /// Refuses new work, finishes what is queued, closes the connections and ends the threads.
    func close() async {
        let threads = queue.withLock { queue -> Int? in
            guard !queue.isClosed else { return nil }
            queue.isClosed = true
            return queue.threads
        }
        guard let threads else { return }
        for _ in 0..<threads { wakeup.signal() }
        await Blocking.run { [exited] in
            for _ in 0..<threads { exited.wait() }
        }
    }

    // MARK: - Queueing

    private func enqueue(_ kind: Kind, _ job: PGJob) {
        enum Action { case refuse, signal, spawn, none }
        let action = queue.withLock { queue -> Action in
            guard !queue.isClosed else { return .refuse }
            if kind == .write { queue.writes.append(job) } else { queue.reads.append((kind, job)) }
            if queue.sleeping > queue.signalled {
                queue.signalled += 1
                return .signal
            }
            if queue.threads < size {
                queue.threads += 1
                return .spawn
            }
            return .none
        }
        switch action {
        case .refuse: job.fail(.closed)
        case .signal: wakeup.signal()
        case .spawn: spawn(index: queue.withLock { $0.threads })
        case .none: break
        }
    }

    private func spawn(index: Int) {
        StoreThread.start(named: "\(name)-\(index)") { [self] in self.runLoop() }
    }

    private func runLoop() {
        var connection: PGConnection?
        while true {
            let work = queue.withLock { queue -> Work in
                if let (kind, job) = queue.reads.popFirst() {
                    guard kind == .read, job.statement != nil else { return .one(kind, job) }
                    var reads = [job]
                    while reads.count < maxBatchSize, let (nextKind, next) = queue.reads.first,
                          nextKind == .read, next.statement != nil {
                        _ = queue.reads.popFirst()
                        reads.append(next)
                    }
                    return reads.count == 1 ? .one(kind, job) : .reads(reads)
                }
                if !queue.writes.isEmpty && queue.writing < maxWritingThreads {
                    queue.writing += 1
                    return .batch(queue.writes.popFirst(maxBatchSize))
                }
                if queue.isClosed { return .exit }
                queue.sleeping += 1
                return .sleep
            }
            switch work {
            case .sleep:
                wakeup.wait()
                queue.withLock { queue in
                    queue.sleeping -= 1
                    queue.signalled = max(0, queue.signalled - 1)
                }
            case .exit:
                connection?.close()
                exited.signal()
                return
            case .one(let kind, let job):
                runAlone(job, retrying: kind == .read, connection: &connection)
            case .reads(let jobs):
                read(jobs, connection: &connection)
            case .batch(let jobs):
                commit(jobs, connection: &connection)
                queue.withLock { $0.writing -= 1 }
            }
        }
    }

    // MARK: - Connections

    /// The thread's live connection, opened (or replaced) if needed; nil while connecting fails.
    private func live(_ connection: inout PGConnection?) -> Result<PGConnection, StorageError> {
        if let current = connection {
            if !current.isBroken { return .success(current) }
            current.close()
            connection = nil
        }
        let now = ContinuousClock.now
        if let retryAt = queue.withLock({ $0.retryAt }), now < retryAt {
            return .failure(StorageError(code: .unavailable, context: "connect (backing off)"))
        }
        do throws(StorageError) {
            let opened = try PGConnection.connect(settings)
            queue.withLock { queue in
                queue.retryAt = nil
                queue.backoff = Self.firstBackoff
            }
            connection = opened
            return .success(opened)
        } catch {
            queue.withLock { queue in
                queue.retryAt = ContinuousClock.now + queue.backoff
                queue.backoff = min(queue.backoff * 2, Self.maximumBackoff)
            }
            return .failure(error)
        }
    }

    // MARK: - Running jobs

    /// A read or an exclusive write in a transaction of its own. A read whose connection turned out
    /// to be broken (the server restarted since its last use) is run once more on a fresh one.
    private func runAlone(_ job: PGJob, retrying: Bool, connection: inout PGConnection?) {
        var mayRetry = retrying
        while true {
            let current: PGConnection
            switch live(&connection) {
            case .success(let live): current = live
            case .failure(let error): return job.fail(error)
            }
            switch job.perform(current) {
            case .success(let delivery):
                return delivery.deliver()
            case .failure(let error):
                if error.breaksConnection && mayRetry {
                    mayRetry = false
                    continue
                }
                return job.fail(error)
            }
        }
    }

    /// Reads that are one statement each, in one pipeline; if it fails, each runs on its own.
    private func read(_ jobs: [PGJob], connection: inout PGConnection?) {
        let current: PGConnection
        switch live(&connection) {
        case .success(let live): current = live
        case .failure(let error):
            for job in jobs { job.fail(error) }
            return
        }
        let results: [PGResult]
        do throws(StorageError) {
            results = try current.run(jobs.map { $0.statement!.query })
        } catch {
            for job in jobs { runAlone(job, retrying: true, connection: &connection) }
            return
        }
        for (job, result) in zip(jobs, results) {
            switch job.statement!.complete(result) {
            case .success(let delivery)?: delivery.deliver()
            case .failure(let error)?: job.fail(error)
            case nil: runAlone(job, retrying: true, connection: &connection)
            }
        }
    }

    /// Runs the writes (see the type's documentation): those that are one statement in one
    /// transaction, then the others and those whose statement did not apply in another.
    private func commit(_ jobs: [PGJob], connection: inout PGConnection?) {
        var usual = jobs.filter { $0.statement == nil }
        let statements = jobs.filter { $0.statement != nil }
        if !statements.isEmpty {
            usual += commit(statements: statements, connection: &connection)
        }
        if !usual.isEmpty { commitOneByOne(usual, connection: &connection) }
    }

    /// The one-statement writes in one transaction; returns the jobs still to run the usual way.
    private func commit(statements jobs: [PGJob], connection: inout PGConnection?) -> [PGJob] {
        let jobs = jobs.sorted { $0.lockKey < $1.lockKey }
        let current: PGConnection
        switch live(&connection) {
        case .success(let live): current = live
        case .failure(let error):
            for job in jobs { job.fail(error) }
            return []
        }
        transactionCount.add(1, ordering: .relaxed)
        current.sendAhead(PGQuery("BEGIN"))
        // What is sent: each job's statement, or one for several jobs of a kind that merges.
        var units: [(query: PGQuery, jobs: [Int], merged: Bool)] = []
        var kinds: [String: [Int]] = [:]
        for (index, job) in jobs.enumerated() {
            if let merge = job.statement!.merge {
                kinds[merge.kind, default: []].append(index)
            } else {
                units.append((job.statement!.query, [index], false))
            }
        }
        for indexes in kinds.values.sorted(by: { $0[0] < $1[0] }) {
            if indexes.count == 1 {
                units.append((jobs[indexes[0]].statement!.query, indexes, false))
            } else {
                let merges = indexes.map { jobs[$0].statement!.merge! }
                units.append((merges[0].many(merges.map(\.row)), indexes, true))
            }
        }
        let results: [PGResult]
        do throws(StorageError) {
            results = try current.run(units.map(\.query))
        } catch {
            // Nothing was committed: every job runs again the usual way, which deals with a
            // constraint, a race or a lost connection one job at a time.
            if !current.isBroken { _ = try? current.run([PGQuery("ROLLBACK")]) }
            return jobs
        }
        var outcomes = [Result<PGDelivery, StorageError>?](repeating: nil, count: jobs.count)
        for (unit, result) in zip(units, results) {
            guard unit.merged else {
                outcomes[unit.jobs[0]] = jobs[unit.jobs[0]].statement!.complete(result)
                continue
            }
            var rows = [PGRow?](repeating: nil, count: unit.jobs.count)
            for index in 0..<result.rowCount {
                let row = result.row(index)
                guard let position = try? row.int64(row.columnCount - 1), position >= 1, position <= rows.count,
                      rows[Int(position) - 1] == nil
                else {
                    if !current.isBroken { _ = try? current.run([PGQuery("ROLLBACK")]) }
                    return jobs
                }
                rows[Int(position) - 1] = row
            }
            for (position, index) in unit.jobs.enumerated() {
                outcomes[index] = jobs[index].statement!.merge!.complete(rows[position])
            }
        }
        var applied: [(job: PGJob, delivery: PGDelivery)] = []
        var missed: [PGJob] = []
        for (job, outcome) in zip(jobs, outcomes) {
            switch outcome {
            case .success(let delivery)?: applied.append((job, delivery))
            case .failure?:
                if !current.isBroken { _ = try? current.run([PGQuery("ROLLBACK")]) }
                return jobs
            case nil: missed.append(job)
            }
        }
        do throws(StorageError) {
            _ = try current.run(notifications(applied.flatMap(\.delivery.changedOrders)) + [PGQuery("COMMIT")])
        } catch {
            // Unknown outcome for the applied ones (see `commitOneByOne`); the missed wrote nothing.
            for (job, _) in applied { job.fail(error) }
            return missed
        }
        operationCount.add(applied.count, ordering: .relaxed)
        oneStatementCount.add(applied.count, ordering: .relaxed)
        for (_, delivery) in applied { delivery.deliver() }
        return missed
    }

    /// Runs the writes in one transaction, one after the other (see the type's documentation).
    private func commitOneByOne(_ jobs: [PGJob], connection: inout PGConnection?) {
        var pending = jobs.sorted { $0.lockKey < $1.lockKey }
        var reconnected = false
        var races = 0
        while !pending.isEmpty {
            let current: PGConnection
            switch live(&connection) {
            case .success(let live): current = live
            case .failure(let error):
                for job in pending { job.fail(error) }
                return
            }
            transactionCount.add(1, ordering: .relaxed)
            current.sendAhead(PGQuery("BEGIN"))
            var succeeded: [(job: PGJob, delivery: PGDelivery)] = []
            var failure: (index: Int, error: StorageError)?
            for (index, job) in pending.enumerated() {
                operationCount.add(1, ordering: .relaxed)
                switch job.perform(current) {
                case .success(let delivery): succeeded.append((job, delivery))
                case .failure(let error): failure = (index, error)
                }
                if failure != nil { break }
            }
            if let (index, error) = failure {
                if !current.isBroken { _ = try? current.run([PGQuery("ROLLBACK")]) }
                if error.breaksConnection || current.isBroken {
                    // Nothing was committed: the whole batch may run again, once, on a new connection.
                    if !reconnected {
                        reconnected = true
                        continue
                    }
                    for job in pending { job.fail(error) }
                    return
                }
                if error.isTransactionRace && races < 3 {
                    races += 1
                    continue
                }
                pending[index].fail(error)
                pending.remove(at: index)
                continue
            }
            do throws(StorageError) {
                _ = try current.run(notifications(succeeded.flatMap(\.delivery.changedOrders)) + [PGQuery("COMMIT")])
            } catch {
                // A connection lost during COMMIT leaves the outcome unknown: `unavailable`, which
                // callers treat as "maybe": every write here is safe to repeat.
                for job in pending { job.fail(error) }
                return
            }
            for (_, delivery) in succeeded { delivery.deliver() }
            return
        }
    }

    /// `pg_notify` calls for the changed orders, delivered to every listener at COMMIT. Keys are
    /// joined by newlines into payloads under PostgreSQL's 8,000-byte limit.
    private func notifications(_ orders: [String]) -> [PGQuery] {
        guard !orders.isEmpty else { return [] }
        var queries: [PGQuery] = []
        var payload = ""
        for order in Set(orders).sorted() {
            if !payload.isEmpty && payload.utf8.count + order.utf8.count + 1 > 7900 {
                queries.append(PGQuery("SELECT pg_notify($1, $2)", channel, payload))
                payload = ""
            }
            payload += payload.isEmpty ? order : "\n" + order
        }
        queries.append(PGQuery("SELECT pg_notify($1, $2)", channel, payload))
        return queries
    }
}
