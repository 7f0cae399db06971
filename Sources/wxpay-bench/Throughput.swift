// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Times `body` on the calling thread: `rounds` rounds of about `seconds` each, in batches so the
/// clock is read rarely. Reports the median and the best round, in operations per second of wall
/// time, and the median per second of the thread's own CPU time: on a shared machine the other
/// processes' time slices lower the first and not the second, which is what one core can do.
struct Throughput {
    let label: String
    let rounds: [Double]
    /// Operations per second of the measuring thread's CPU time, per round.
    let cpuRounds: [Double]

    var median: Double { rounds.sorted()[rounds.count / 2] }
    var best: Double { rounds.max() ?? 0 }
    var cpuMedian: Double { cpuRounds.sorted()[cpuRounds.count / 2] }

    static func measure(_ label: String, _ options: BenchmarkOptions, batch: Int = 1_000,
                        _ body: () throws -> Void) throws -> Throughput {
        try withoutActuallyEscaping(body) { body in try interleaved([(label, body)], options, batch: batch)[0] }
    }

    /// Measures several bodies in alternating rounds, so that a change in the machine's load
    /// (it is shared) hits all of them alike and their ratio stays meaningful.
    static func interleaved(_ bodies: [(String, () throws -> Void)], _ options: BenchmarkOptions,
                            batch: Int = 1_000) throws -> [Throughput] {
        // Warm up caches and the branch predictor outside the timed rounds.
        for (_, body) in bodies {
            for _ in 0..<batch { try body() }
        }
        var results = [[Double]](repeating: [], count: bodies.count)
        var cpuResults = [[Double]](repeating: [], count: bodies.count)
        let clock = ContinuousClock()
        for _ in 0..<options.rounds {
            for (index, (_, body)) in bodies.enumerated() {
                var operations = 0
                let cpuStart = Throughput.threadCPUSeconds()
                let start = clock.now
                let end = start + .nanoseconds(Int64(options.secondsPerRound * 1e9))
                var now = start
                repeat {
                    for _ in 0..<batch { try body() }
                    operations += batch
                    now = clock.now
                } while now < end
                let elapsed = now - start
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                results[index].append(Double(operations) / seconds)
                cpuResults[index].append(Double(operations) / max(Throughput.threadCPUSeconds() - cpuStart, 1e-9))
            }
        }
        let throughputs = bodies.indices.map {
            Throughput(label: bodies[$0].0, rounds: results[$0], cpuRounds: cpuResults[$0])
        }
        throughputs.forEach { $0.report() }
        return throughputs
    }

    func report() {
        print("\(label.padding(toLength: 44, withPad: " ", startingAt: 0)) median \(Self.format(median))/s  best \(Self.format(best))/s  per CPU-second \(Self.format(cpuMedian))/s")
    }

    /// The calling thread's CPU time (user + system).
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func format(_ value: Double) -> String {
        var digits = String(Int(value.rounded()))
        var grouped = ""
        while digits.count > 3 {
            grouped = "," + digits.suffix(3) + grouped
            digits.removeLast(3)
        }
        return (digits + grouped).leftPadded(to: 11)
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = " ") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}

/// Keeps results alive so the optimiser cannot drop the work that produced them.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// Prints whether a measured rate clears its bar, and the ratio, by wall time and by the thread's
/// CPU time (the two agree on an idle machine; on a shared one the second is the core's rate).
func reportBar(_ throughput: Throughput, bar: Double) {
    func verdict(_ rate: Double) -> String { "\(rate >= bar ? "PASS" : "FAIL") (\(String(format2: rate / bar))x)" }
    print("  bar \(Throughput.format(bar))/s: wall time \(verdict(throughput.median)), CPU time \(verdict(throughput.cpuMedian))")
}

extension String {
    /// One decimal place, without Foundation.
    init(format1 value: Double) {
        let tenths = Int((value * 10).rounded())
        self = "\(tenths / 10).\(abs(tenths % 10))"
    }
}

extension String {
    /// Two decimal places, without Foundation: a ratio to a bar reads 0.97x, not 1.0x.
    init(format2 value: Double) {
        let hundredths = Int((value * 100).rounded())
        let fraction = abs(hundredths % 100)
        self = "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
