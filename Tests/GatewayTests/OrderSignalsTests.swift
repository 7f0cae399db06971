// SPDX-License-Identifier: Apache-2.0
@testable import Gateway
import Synchronization
import TestSupport
import Testing

// A waiter that is never woken would hold its test for an hour: the limit ends it as a failure.
@Suite(.timeLimit(.minutes(5)))
struct OrderSignalsTests {
    /// A wait that must not time out during a test: a loaded machine can starve a test's tasks for
    /// tens of seconds (CI once took longer than 30 s to run a thousand tiny parking tasks).
    let neverWithinATest = 3_600.0

    @Test func aWakeBetweenReadingTheStateAndWaitingIsNotLost() async {
        let signals = OrderSignals()
        let token = signals.token()      // the waiter reads the order's state after this…
        signals.wake("order-1")          // …a notify settles it before the waiter starts waiting…
        // …and the wait ends at once: true, where a timeout would answer false after an hour.
        #expect(await signals.wait(for: "order-1", since: token, seconds: neverWithinATest))
        #expect(signals.openWaits == 0)
    }

    @Test func aWakeOfAnotherOrderOrBeforeTheTokenDoesNotEndTheWait() async {
        let signals = OrderSignals()
        signals.wake("order-1")
        let token = signals.token()
        signals.wake("order-2")
        #expect(await signals.wait(for: "order-1", since: token, seconds: 0.2) == false)
    }

    @Test func aWaiterIsWokenByALaterWake() async {
        let signals = OrderSignals()
        let token = signals.token()
        async let woken = signals.wait(for: "order-3", since: token, seconds: neverWithinATest)
        try? await Task.sleep(for: .milliseconds(100))
        signals.wake("order-3")
        #expect(await woken)
    }

    // MARK: - Parked waiters (no task while waiting)

    /// What parked callbacks reported, in order.
    final class Resumes: Sendable {
        private let list = Mutex<[(String, Bool)]>([])
        func record(_ name: String, _ woken: Bool) { list.withLock { $0.append((name, woken)) } }
        var all: [(String, Bool)] { list.withLock { $0 } }
        var count: Int { list.withLock { $0.count } }
    }

    @Test func aParkedWaiterIsResumedByAWakeExactlyOnce() async {
        let signals = OrderSignals()
        let resumes = Resumes()
        let ticket = signals.park("order-4", since: signals.token(), seconds: neverWithinATest) { resumes.record("order-4", $0) }
        #expect(ticket != nil)
        #expect(signals.openWaits == 1)
        signals.wake("order-4")
        #expect(resumes.all.map(\.1) == [true])
        #expect(signals.openWaits == 0)
        // Neither a second wake nor a cancel resumes it again.
        signals.wake("order-4")
        #expect(signals.cancel(ticket!) == false)
        #expect(resumes.count == 1)
    }

    @Test func aParkedWaiterWokenBeforeParkingIsResumedAtOnce() {
        let signals = OrderSignals()
        let token = signals.token()
        signals.wake("order-5")
        let resumes = Resumes()
        #expect(signals.park("order-5", since: token, seconds: neverWithinATest) { resumes.record("order-5", $0) } == nil)
        #expect(resumes.all.map(\.1) == [true])
        #expect(signals.openWaits == 0)
    }

    @Test func parkedWaitersTimeOutInDeadlineOrderOnTheSharedTimer() async {
        let signals = OrderSignals()
        let resumes = Resumes()
        let token = signals.token()
        for (name, seconds) in [("late", 0.6), ("early", 0.2), ("middle", 0.4)] {
            signals.park(name, since: token, seconds: seconds) { resumes.record(name, $0) }
        }
        #expect(await eventually { resumes.count == 3 })
        #expect(resumes.all.map(\.0) == ["early", "middle", "late"])
        #expect(resumes.all.allSatisfy { $0.1 == false })
        #expect(signals.openWaits == 0)
        #expect(signals.scheduledDeadlines == 0)
    }

    @Test func aCancelledParkedWaiterEndsAsOnTimeout() {
        let signals = OrderSignals()
        let resumes = Resumes()
        let ticket = signals.park("order-6", since: signals.token(), seconds: neverWithinATest) { resumes.record("order-6", $0) }
        #expect(signals.cancel(ticket!))
        #expect(resumes.all.map(\.1) == [false])
        #expect(signals.openWaits == 0)
    }

    @Test func aCancelledTaskStopsWaitingAtOnce() async {
        let signals = OrderSignals()
        let token = signals.token()
        let waiting = Task { await signals.wait(for: "order-7", since: token, seconds: neverWithinATest) }
        #expect(await eventually { signals.openWaits == 1 })
        waiting.cancel()
        #expect(await waiting.value == false)
        #expect(signals.openWaits == 0)
    }

    @Test func aThousandParkedWaitersOutliveTheTasksThatParkedThem() async {
        let signals = OrderSignals()
        let resumes = Resumes()
        let token = signals.token()
        // Every parking task has finished when the group returns: what holds the waits is data.
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<1_000 {
                group.addTask {
                    signals.park("order-\(index % 500)", since: token, seconds: neverWithinATest) { resumes.record("\(index)", $0) }
                }
            }
        }
        #expect(signals.openWaits == 1_000)
        for index in 0..<500 { signals.wake("order-\(index)") }
        #expect(resumes.count == 1_000)
        #expect(resumes.all.allSatisfy { $0.1 })
        #expect(signals.openWaits == 0)
    }

    @Test func deadlinesOfWaitersWokenEarlyDoNotPileUp() {
        let signals = OrderSignals()
        let token = signals.token()
        for index in 0..<3_000 { signals.park("order-\(index)", since: token, seconds: neverWithinATest) { _ in } }
        for index in 0..<3_000 { signals.wake("order-\(index)") }
        #expect(signals.scheduledDeadlines == 3_000)
        signals.park("order-next", since: signals.token(), seconds: neverWithinATest) { _ in }
        #expect(signals.scheduledDeadlines == 1)
        #expect(signals.openWaits == 1)
    }

    // MARK: - SingleFlight

    /// A count tasks share.
    final class Count: Sendable {
        private let value = Mutex(0)
        func add() { value.withLock { $0 += 1 } }
        var current: Int { value.withLock { $0 } }
    }

    @Test func callersArrivingWhileAnOperationRunsShareItsOneResult() async {
        let flight = SingleFlight<String, Int>()
        let runs = Count()
        let gate = Gate()
        let first = Task { await flight.run("k") { runs.add(); await gate.wait(); return 7 } }
        #expect(await eventually { flight.isRunning("k") })
        let second = Task { await flight.run("k") { runs.add(); return 8 } }
        try? await Task.sleep(for: .milliseconds(50))
        gate.open()
        #expect(await [first.value, second.value] == [7, 7])
        #expect(runs.current == 1)
        #expect(await eventually { !flight.isRunning("k") })
    }

    @Test func aCancelledCallerStopsWaitingWhileTheOperationGoesOnForTheOthers() async {
        let flight = SingleFlight<String, Int>()
        let gate = Gate()
        let finished = Count()
        let cancelled = Task {
            await flight.runUnlessCancelled("k") {
                await withCheckedContinuation { continuation in
                    // Deaf to cancellation, as a send already on the wire is.
                    Task.detached { await gate.wait(); continuation.resume() }
                }
                finished.add()
                return 7
            }
        }
        #expect(await eventually { flight.isRunning("k") })
        let other = Task { await flight.runUnlessCancelled("k") { 8 } }
        cancelled.cancel()
        #expect(await cancelled.value == nil)           // at once, the operation still running
        #expect(finished.current == 0)
        gate.open()
        #expect(await other.value == 7)                 // the others still get its result
        #expect(finished.current == 1)
        #expect(await eventually { !flight.isRunning("k") })
    }
}
