// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// A metric's kind, as Prometheus' `# TYPE` line names it.
public enum MetricType: String, Sendable {
    case counter, gauge, histogram
}

/// A handle kind: `Counter`, `Gauge` or `Histogram`.
public protocol MetricHandle: Sendable {
    static var type: MetricType { get }
}

/// A metric of any kind as `MetricsRegistry.describe` lists it: its name, type and help text.
public protocol MetricDeclaration: Sendable {
    var name: String { get }
    var type: MetricType { get }
    var help: String { get }
}

/// What a metric is, declared once: its name and its help text. Components keep these as
/// `static let`s beside the handles they make from them, so a metric's name is written in one place.
///
/// ```swift
/// static let notifies = Metric<Counter>("wxpay_notifies_total", help: "Payment notifies by outcome.")
/// registry.describe(Self.notifies)  // with any others: registry.describe(Self.notifies, Self.waits)
/// let settled = registry.makeCounter(Self.notifies, ["outcome": "settled"])
/// settled.increment()
/// ```
public struct Metric<Handle: MetricHandle>: MetricDeclaration, Hashable {
    public let name: String
    public let help: String
    public var type: MetricType { Handle.type }

    public init(_ name: String, help: String) {
        self.name = name
        self.help = help
    }
}

/// One counter series (a name and one set of label values), made once by `MetricsRegistry.makeCounter`
/// where its component is built. An increment is one atomic add: no name, no label dictionary, no lock.
/// Counts are whole numbers, kept exactly.
public struct Counter: MetricHandle {
    public static let type = MetricType.counter
    let cell: CounterCell

    /// Adds `amount` (0 or more). Adding 0 still exports the series, at its current value.
    public func increment(by amount: Int = 1) {
        precondition(amount >= 0, "a counter only goes up")
        cell.add(amount)
    }

    /// The series is exported from now on, at 0 until its first event. For series an alert
    /// compares with their value minutes ago: one that first appeared with its first event would
    /// hide that event.
    public func publish() { cell.add(0) }

    public var value: Int { cell.value }
}

/// One gauge series: a value that is set, or moved up and down.
public struct Gauge: MetricHandle {
    public static let type = MetricType.gauge
    let cell: GaugeCell

    public func set(_ value: Double) { cell.set(value) }
    public func add(_ delta: Double) { cell.add(delta) }
    public var value: Double { cell.value }
}

/// One histogram series: observations counted into cumulative buckets, with their sum.
public struct Histogram: MetricHandle {
    public static let type = MetricType.histogram
    let cell: HistogramCell

    public func record(_ value: Double) { cell.record(value) }

    /// Exports the series before its first observation, every bucket at 0: a rate over it then
    /// counts the first observations too.
    public func publish() { cell.exported.set() }

    /// Records a duration in seconds.
    public func record(_ duration: Duration) {
        record(Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18)
    }
}

/// The series of one metric whose label values are known only when something happens (an error
/// code, an API name): each set of values is made into a handle once, on first use, and found again
/// by its values alone. Label values must come from a bounded set, never from a request.
public final class MetricFamily<Handle: MetricHandle>: Sendable {
    private let fixed: [String: String]
    private let labelNames: [String]
    private let make: @Sendable ([String: String]) -> Handle
    private let handles = Mutex<[[String]: Handle]>([:])

    init(fixed: [String: String], labelNames: [String], make: @escaping @Sendable ([String: String]) -> Handle) {
        precondition(Set(labelNames).count == labelNames.count && fixed.keys.allSatisfy { !labelNames.contains($0) },
                     "a label is named twice")
        self.fixed = fixed
        self.labelNames = labelNames
        self.make = make
    }

    /// The series with these label values, in the order the family named its labels.
    public func labelled(_ values: String...) -> Handle {
        precondition(values.count == labelNames.count, "\(labelNames.count) label values expected")
        if let handle = handles.withLock({ $0[values] }) { return handle }
        // Made outside the family's lock; two first uses at once make the same series (the
        // registry gives one name and label set one cell), so either handle is right.
        let handle = make(fixed.merging(zip(labelNames, values)) { $1 })
        handles.withLock { $0[values] = handle }
        return handle
    }
}

// MARK: - The cells behind the handles

/// Whether a series has had its first event: a series made ahead of time (where its component is
/// built) is exported only from then on, as it was when series came into being with their first event.
final class Exported: Sendable {
    private let flag = Atomic<Bool>(false)

    var isSet: Bool { flag.load(ordering: .acquiring) }

    func set() {
        // Read first: after the first event the flag is only ever read, so hot series share the
        // cache line instead of writing it on every increment.
        if !flag.load(ordering: .relaxed) { flag.store(true, ordering: .releasing) }
    }
}

final class CounterCell: Sendable {
    private let count = Atomic<Int>(0)
    let exported = Exported()

    func add(_ amount: Int) {
        count.wrappingAdd(amount, ordering: .relaxed)
        exported.set()
    }

    var value: Int { count.load(ordering: .relaxed) }
}

final class GaugeCell: Sendable {
    // A Double's bits: atomics hold integers.
    private let bits = Atomic<UInt64>(0.0.bitPattern)
    let exported = Exported()

    func set(_ value: Double) {
        bits.store(value.bitPattern, ordering: .relaxed)
        exported.set()
    }

    func add(_ delta: Double) {
        var current = bits.load(ordering: .relaxed)
        while true {
            let (exchanged, original) = bits.compareExchange(
                expected: current, desired: (Double(bitPattern: current) + delta).bitPattern, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
        exported.set()
    }

    var value: Double { Double(bitPattern: bits.load(ordering: .relaxed)) }
}

final class HistogramCell: Sendable {
    struct Snapshot {
        /// Cumulative: `counts[i]` observations were at most `buckets[i]`.
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    let buckets: [Double]
    private let state: Mutex<Snapshot>
    let exported = Exported()

    init(buckets: [Double]) {
        self.buckets = buckets
        state = Mutex(Snapshot(counts: Array(repeating: 0, count: buckets.count)))
    }

    func record(_ value: Double) {
        // The bucket scan happens outside the lock; only the additions are inside it.
        let first = buckets.firstIndex { value <= $0 } ?? buckets.count
        state.withLock { state in
            for index in first..<buckets.count { state.counts[index] += 1 }
            state.sum += value
            state.count += 1
        }
        exported.set()
    }

    var snapshot: Snapshot { state.withLock { $0 } }
}
