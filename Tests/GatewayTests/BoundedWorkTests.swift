// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import Synchronization
import Testing

struct BoundedWorkTests {
    /// Counts operations running now, the most seen at once, and the ones finished.
    final class Tally: Sendable {
        let state = Mutex<(running: Int, peak: Int, done: [Int])>((0, 0, []))
        func start() { state.withLock { $0.running += 1; $0.peak = max($0.peak, $0.running) } }
        func finish(_ index: Int) { state.withLock { $0.running -= 1; $0.done.append(index) } }
    }

    // The deadlines are generous: when a run starts, the heavy synchronous suites can hold the
    // cooperative pool's threads (one per core) for half a minute on a loaded machine, and a full
    // run beside two builds finished only 174 of the 200 one-millisecond sleeps in two minutes.
    @Test func everyQueuedOperationRunsWithNeverMoreThanTheWidthInFlight() async throws {
        let work = BoundedWork(width: 3)
        let tally = Tally()
        for index in 0..<200 {
            work.submit {
                tally.start()
                try? await Task.sleep(for: .milliseconds(1))
                tally.finish(index)
            }
        }
        let deadline = ContinuousClock.now + .seconds(600)
        while tally.state.withLock({ $0.done.count }) < 200 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let (running, peak, done) = tally.state.withLock { $0 }
        #expect(done.count == 200)
        #expect(Set(done) == Set(0..<200))
        #expect(peak <= 3)
        #expect(peak >= 1)
        #expect(running == 0)
        #expect(work.backlog == 0)
    }

    @Test func operationsStartInTheOrderTheyWereQueued() async throws {
        let work = BoundedWork(width: 1)
        let tally = Tally()
        for index in 0..<50 {
            work.submit {
                tally.start()
                tally.finish(index)
            }
        }
        let deadline = ContinuousClock.now + .seconds(600)
        while tally.state.withLock({ $0.done.count }) < 50 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(tally.state.withLock { $0.done } == Array(0..<50))
    }
}
