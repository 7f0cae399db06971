// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Synchronization

/// Wakes the queries waiting on an order the moment its state changes (a notify, a poll, a close),
/// so a `wait` answers at once instead of at its next poll.
///
/// Waiting holds no thread and no task: a waiter is a stored callback (`park`) or continuation
/// (`wait`), resumed by `wake` or by its deadline. All deadlines share one heap and one Dispatch
/// timer: a task sleeping per waiter cost about 1.7 KB each, 17 MB for 10,000 held waits.
///
/// A waiter reads the order's state and then waits; a change landing between the two would be a
/// lost wake-up, so waiters take a `token()` before reading, and `park`/`wait` end at once when
/// the order was woken after that token.
public final class OrderSignals: Sendable {
    /// A parked waiter, for `cancel`.
    public struct Ticket: Sendable, Hashable {
        let key: String
        let id: UInt64
    }

    private struct State {
        /// Waiters by order, then by id. Most orders have one waiter at most.
        var waiters: [String: [UInt64: @Sendable (Bool) -> Void]] = [:]
        var nextID: UInt64 = 0
        var open = 0
        /// Counts wakes; `lastWake[key]` is the count when `key` was last woken.
        var epoch: UInt64 = 0
        var lastWake: [String: UInt64] = [:]
        /// The count at the last `wakeAll`: a waiter with an older token is woken at once.
        var allWokenAt: UInt64 = 0
        var deadlines = DeadlineHeap()
        /// Heap entries whose waiter already left (woken or cancelled); dropped in bulk.
        var stale = 0
        /// When the timer will next fire (uptime nanoseconds); nil when it is idle.
        var armedFor: UInt64?

        /// Drops the heap entries of waiters that left early (woken or cancelled) once they
        /// outnumber the live ones, so the heap stays proportional to the waiters actually held
        /// rather than to every wait of the last 30 seconds.
        mutating func compactIfMostlyStale() {
            guard stale > 1024 && stale > open else { return }
            let waiters = self.waiters
            deadlines.keep { waiters[$0.key]?[$0.id] != nil }
            stale = 0
        }

        /// Takes a waiter out; its heap entry, unless it is the one being popped, becomes stale.
        mutating func remove(_ key: String, _ id: UInt64, fromHeap: Bool = false) -> (@Sendable (Bool) -> Void)? {
            guard let resume = waiters[key]?.removeValue(forKey: id) else {
                if fromHeap { stale = max(0, stale - 1) }
                return nil
            }
            if waiters[key]?.isEmpty == true { waiters.removeValue(forKey: key) }
            open -= 1
            if !fromHeap { stale += 1 }
            return resume
        }
    }

    /// Keys whose last wake is remembered; older ones are forgotten (a waiter that old has long
    /// since re-read the state).
    private static let rememberedWakes = 100_000
    /// How late the timer may fire: deadlines are whole seconds and polls 50 ms at the least.
    private static let leeway = DispatchTimeInterval.milliseconds(2)

    private let state = Mutex(State())
    private let timer: DeadlineTimer

    public init() {
        timer = DeadlineTimer()
        // Weak: the timer's handler must not keep the signals (and every waiter) alive.
        timer.start { [weak self] in self?.fire() }
    }

    deinit {
        timer.stop()
    }

    /// Number of waiters now (for the `waits open` gauge).
    public var openWaits: Int { state.withLock { $0.open } }

    /// Deadlines in the heap, live or stale (for tests of its compaction).
    var scheduledDeadlines: Int { state.withLock { $0.deadlines.count } }

    /// The current wake count: take it before reading the state a wait depends on.
    public func token() -> UInt64 { state.withLock { $0.epoch } }

    /// Calls `resume(true)` when `key` is woken, or `resume(false)` once `seconds` have passed
    /// (or on `cancel`). When `key` was woken after `token`, `resume(true)` is called at once, on
    /// this thread, and the answer is nil.
    ///
    /// `resume` runs exactly once, on the thread that wakes, cancels or parks it, or on the
    /// signals' timer queue: it must be quick and must not block (hand the work to a task or a
    /// queue), and it runs with no lock held, so it may park again.
    @discardableResult
    public func park(_ key: String, since token: UInt64, seconds: Double,
                     resume: @escaping @Sendable (Bool) -> Void) -> Ticket? {
        park(key, id: reserveID(), since: token, seconds: seconds, resume: resume)
    }

    /// Ends a parked waiter as if its time had run out (`resume(false)`); false when it had
    /// already ended.
    @discardableResult
    public func cancel(_ ticket: Ticket) -> Bool {
        guard let resume = state.withLock({ $0.remove(ticket.key, ticket.id) }) else { return false }
        resume(false)
        return true
    }

    /// Waits until `wake(key)` or until `seconds` pass. Returns true when woken (also when `key`
    /// was woken after `token`, before this call), false on timeout or cancellation.
    public func wait(for key: String, since token: UInt64, seconds: Double) async -> Bool {
        guard seconds > 0 else { return false }
        let id = reserveID()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let ticket = park(key, id: id, since: token, seconds: seconds) { continuation.resume(returning: $0) }
                // A cancellation that arrived before the waiter was parked found nothing to end.
                if let ticket, Task.isCancelled { cancel(ticket) }
            }
        } onCancel: {
            self.cancel(Ticket(key: key, id: id))
        }
    }

    /// Wakes every waiter of `key`.
    public func wake(_ key: String) {
        let woken = state.withLock { state -> [@Sendable (Bool) -> Void] in
            state.epoch += 1
            state.lastWake[key] = state.epoch
            if state.lastWake.count > Self.rememberedWakes {
                let horizon = state.epoch - UInt64(Self.rememberedWakes / 2)
                state.lastWake = state.lastWake.filter { $0.value > horizon }
            }
            guard let waiters = state.waiters.removeValue(forKey: key) else { return [] }
            state.open -= waiters.count
            state.stale += waiters.count
            return Array(waiters.values)
        }
        for resume in woken { resume(true) }
    }

    /// Wakes every waiter of every order: after a gap in which wakes may have been missed (the
    /// database's change feed reconnected), each re-reads the state it waits for.
    public func wakeAll() {
        let woken = state.withLock { state -> [@Sendable (Bool) -> Void] in
            state.epoch += 1
            // Every waiter that took its token before now must see a wake, parked or not yet.
            state.allWokenAt = state.epoch
            let all = state.waiters.values.flatMap(\.values)
            state.open -= all.count
            state.stale += all.count
            state.waiters.removeAll()
            return all
        }
        for resume in woken { resume(true) }
    }

    // MARK: - Internals

    private func reserveID() -> UInt64 {
        state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
    }

    private func park(_ key: String, id: UInt64, since token: UInt64, seconds: Double,
                      resume: @escaping @Sendable (Bool) -> Void) -> Ticket? {
        guard seconds > 0 else {
            resume(false)
            return nil
        }
        let now = DispatchTime.now().uptimeNanoseconds
        let deadline = now &+ UInt64(min(seconds, 86_400) * 1e9)
        let missed = state.withLock { state -> Bool in
            if let woken = state.lastWake[key], woken > token { return true }
            if state.allWokenAt > token { return true }
            state.waiters[key, default: [:]][id] = resume
            state.open += 1
            state.compactIfMostlyStale()
            state.deadlines.insert(DeadlineHeap.Entry(deadline: deadline, id: id, key: key))
            if state.armedFor.map({ deadline < $0 }) ?? true {
                state.armedFor = deadline
                timer.schedule(at: deadline, leeway: Self.leeway)
            }
            return false
        }
        if missed {
            resume(true)
            return nil
        }
        return Ticket(key: key, id: id)
    }

    /// The timer fired: ends every waiter whose deadline passed, and sets the timer for the next.
    private func fire() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { state -> [@Sendable (Bool) -> Void] in
            var due: [@Sendable (Bool) -> Void] = []
            while let first = state.deadlines.first, first.deadline <= now {
                state.deadlines.removeFirst()
                if let resume = state.remove(first.key, first.id, fromHeap: true) { due.append(resume) }
            }
            state.compactIfMostlyStale()
            state.armedFor = state.deadlines.first?.deadline
            if let next = state.armedFor { timer.schedule(at: next, leeway: Self.leeway) }
            return due
        }
        for resume in due { resume(false) }
    }
}

/// One Dispatch timer, re-armed for the earliest deadline.
// @unchecked Sendable: it holds a Dispatch handle (a C `dispatch_source_t`), which libdispatch lets
// any thread schedule and cancel; the Swift overlay just does not mark the protocol Sendable.
private struct DeadlineTimer: @unchecked Sendable {
    private let source: any DispatchSourceTimer

    init() {
        source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "wxpay.order-signals.deadlines"))
    }

    func start(_ handler: @escaping @Sendable () -> Void) {
        source.setEventHandler(handler: handler)
        source.schedule(deadline: .distantFuture)
        source.resume()
    }

    func schedule(at uptimeNanoseconds: UInt64, leeway: DispatchTimeInterval) {
        source.schedule(deadline: DispatchTime(uptimeNanoseconds: uptimeNanoseconds), leeway: leeway)
    }

    func stop() {
        source.cancel()
    }
}

/// A binary min-heap of deadlines.
struct DeadlineHeap: Sendable {
    struct Entry: Sendable {
        var deadline: UInt64
        var id: UInt64
        var key: String
    }

    private var entries: [Entry] = []

    var count: Int { entries.count }
    var first: Entry? { entries.first }

    mutating func insert(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() {
        guard !entries.isEmpty else { return }
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        siftDown(from: 0)
    }

    /// Keeps only the entries `predicate` accepts.
    mutating func keep(_ predicate: (Entry) -> Bool) {
        entries = entries.filter(predicate)
        for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { return }
            var smallest = left
            if left + 1 < entries.count && entries[left + 1].deadline < entries[left].deadline { smallest = left + 1 }
            guard entries[smallest].deadline < entries[parent].deadline else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// Runs at most one operation per key at a time: callers that arrive while one is in flight share
/// its result. This is how many clients waiting on one order cause one orderquery, not many.
public final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let inFlight = Mutex<[Key: Task<Value, Never>]>([:])

    public init() {}

    /// The result of `operation` for `key`, run now or joined if already running.
    public func run(_ key: Key, _ operation: @escaping @Sendable () async -> Value) async -> Value {
        let task = joinOrStart(key, operation)
        let value = await task.value
        finished(key, task)
        return value
    }

    /// Like `run`, but a caller cancelled while it waits stops waiting and gets nil at once; the
    /// operation goes on for whoever else waits on it (a refund's send is not cut short because
    /// the request that started it is being answered before a shutdown).
    public func runUnlessCancelled(_ key: Key, _ operation: @escaping @Sendable () async -> Value) async -> Value? {
        let task = joinOrStart(key, operation)
        let waiter = Mutex<CheckedContinuation<Value?, Never>?>(nil)
        let answer: @Sendable (Value?) -> Void = { value in waiter.withLock { $0.take() }?.resume(returning: value) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiter.withLock { $0 = continuation }
                Task {
                    let value = await task.value
                    self.finished(key, task)
                    answer(value)
                }
                // A cancellation that came before the continuation was stored found nothing to resume.
                if Task.isCancelled { answer(nil) }
            }
        } onCancel: {
            answer(nil)
        }
    }

    /// The task running `key`'s operation, started now unless one already is.
    private func joinOrStart(_ key: Key, _ operation: @escaping @Sendable () async -> Value) -> Task<Value, Never> {
        inFlight.withLock { inFlight in
            if let running = inFlight[key] { return running }
            let task = Task { await operation() }
            inFlight[key] = task
            return task
        }
    }

    /// Forgets `task` once it is done: only the task still registered (a later one may have
    /// replaced it).
    private func finished(_ key: Key, _ task: Task<Value, Never>) {
        inFlight.withLock { inFlight in
            if inFlight[key] == task { inFlight.removeValue(forKey: key) }
        }
    }

    /// Whether an operation for `key` is running.
    public func isRunning(_ key: Key) -> Bool { inFlight.withLock { $0[key] != nil } }
}
