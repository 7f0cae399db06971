// SPDX-License-Identifier: Apache-2.0
import Testing

@testable import FIFO

struct FIFOQueueTests {
    @Test func elementsComeOutInTheOrderTheyWentInAcrossCompactions() {
        var queue = FIFOQueue<Int>()
        var expected = 0
        var next = 0
        // Bursts larger than the compaction threshold, taken part way, more queued meanwhile.
        for burst in [3000, 10, 2500, 1, 4096] {
            for _ in 0..<burst {
                queue.append(next)
                next += 1
            }
            for _ in 0..<(burst * 2 / 3) {
                #expect(queue.popFirst() == expected)
                expected += 1
            }
            #expect(queue.count == next - expected)
        }
        while let value = queue.popFirst() {
            #expect(value == expected)
            expected += 1
        }
        #expect(expected == next)
        #expect(queue.isEmpty)
        #expect(queue.popFirst() == nil)
    }

    @Test func firstIsWhatPopFirstTakesAndLeavesItQueued() {
        var queue = FIFOQueue<String>()
        #expect(queue.first == nil)
        queue.append("a")
        queue.append("b")
        #expect(queue.first == "a")
        #expect(queue.count == 2)
        #expect(queue.popFirst() == "a")
        #expect(queue.first == "b")
        #expect(queue.count == 1)
        #expect(!queue.isEmpty)
    }

    @Test func takenSlotsAreDroppedOnceThereAreAThousandAndTwentyFourAndHalfTheArray() {
        var queue = FIFOQueue<Int>()
        for value in 0..<4000 { queue.append(value) }
        for _ in 0..<1023 { _ = queue.popFirst() }
        #expect(queue.takenSlots == 1023)
        _ = queue.popFirst()
        // 1,024 taken but fewer than half of 4,000: kept until they are half.
        #expect(queue.takenSlots == 1024)
        for _ in 0..<976 { _ = queue.popFirst() }
        #expect(queue.takenSlots == 0)
        #expect(queue.count == 2000)
        #expect(queue.first == 2000)
    }

    @Test func anEmptiedQueueKeepsItsStorageUntilRemoveAllGivesItBack() {
        var queue = FIFOQueue<Int>()
        for value in 0..<500 { queue.append(value) }
        while queue.popFirst() != nil {}
        #expect(queue.takenSlots == 0)
        #expect(queue.capacity >= 500)
        queue.append(1)
        queue.removeAll()
        #expect(queue.isEmpty)
        #expect(queue.capacity == 0)
    }

    @Test func aTakenElementIsReleasedAtOnceNotAtTheNextCompaction() {
        final class Job {}
        var queue = FIFOQueue<Job>()
        weak var taken: Job?
        do {
            let job = Job()
            taken = job
            queue.append(job)
            queue.append(Job())
        }
        _ = queue.popFirst()
        #expect(taken == nil)
        #expect(queue.count == 1)
    }

    @Test func popFirstWithALimitTakesAtMostThatManyInOrder() {
        var queue = FIFOQueue<Int>()
        for value in 0..<5 { queue.append(value) }
        #expect(queue.popFirst(3) == [0, 1, 2])
        #expect(queue.popFirst(3) == [3, 4])
        #expect(queue.popFirst(3) == [])
    }
}
