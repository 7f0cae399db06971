// SPDX-License-Identifier: Apache-2.0

/// A first-in, first-out queue whose take is O(1): an array read from a head index, the taken
/// slots dropped in bulk.
///
/// Why not `Array.removeFirst()`: it moves every element left on each take, which was quadratic
/// when a burst of 10,000 `wait` queries queued their reads at once. Why not a ring buffer: the
/// queues it serves (a store's reads, the gateway's bounded work) are empty most of the time, and
/// an array reset to empty keeps its storage for the next burst without any index arithmetic.
///
/// A taken element is released at once (its slot is cleared), so what a job captured does not
/// live on until the next compaction.
///
/// ```swift
/// var jobs = FIFOQueue<Job>()
/// jobs.append(job)
/// while let next = jobs.popFirst() { next.run() }
/// ```
public struct FIFOQueue<Element> {
    /// Taken slots before `head` are nil until they are dropped.
    private var slots: [Element?] = []
    private var head = 0

    /// Taken slots are dropped once there are at least this many and they are at least half of
    /// the array: each element is then moved at most once per compaction, O(1) per take amortised.
    public static var compactionThreshold: Int { 1024 }

    public init() {}

    /// How many elements are queued.
    public var count: Int { slots.count - head }

    public var isEmpty: Bool { head == slots.count }

    /// The element `popFirst()` would take, left in the queue.
    public var first: Element? { head < slots.count ? slots[head] : nil }

    /// Queues `element` after every element queued before it.
    public mutating func append(_ element: Element) {
        slots.append(element)
    }

    /// Takes the element queued first, or nil when the queue is empty.
    public mutating func popFirst() -> Element? {
        guard head < slots.count else { return nil }
        let element = slots[head]
        slots[head] = nil
        head += 1
        if head == slots.count {
            // Empty again: the storage is kept for the next burst.
            slots.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= Self.compactionThreshold && head * 2 >= slots.count {
            slots.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Takes up to `limit` elements, first queued first.
    public mutating func popFirst(_ limit: Int) -> [Element] {
        var taken: [Element] = []
        taken.reserveCapacity(Swift.min(limit, count))
        while taken.count < limit, let element = popFirst() { taken.append(element) }
        return taken
    }

    /// Empties the queue and gives its storage back (after a burst, while idle).
    public mutating func removeAll() {
        slots = []
        head = 0
    }

    /// The storage's capacity, for tests of compaction and release.
    var capacity: Int { slots.capacity }

    /// Slots taken and not yet dropped, for tests of compaction.
    var takenSlots: Int { head }
}

extension FIFOQueue: Sendable where Element: Sendable {}
