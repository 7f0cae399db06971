// SPDX-License-Identifier: Apache-2.0
import Foundation
import SQLiteStore
import StorageCore
import Synchronization

/// `wxpay-bench storage`: transitions to SUCCESS per second through the one door, with group commit
/// versus one transaction per operation (the naive path), same file contents, same durability
/// (WAL, synchronous=FULL), same number of concurrent writers, in one run.
///
/// Options: `--orders N` (default 4000), `--writers N` (default 64), `--rounds N` (default 3; the
/// medians are reported), `--dir PATH` (default a new temporary directory, removed afterwards; put
/// it on the disk you care about), `--group-only` (no naive rounds: for the writer's CPU alone).
///
/// Each round also gives the writer thread's CPU time per transition (from the kernel's
/// nanosecond count of the thread's time on a CPU, `/proc/self/task/TID/schedstat`): every
/// transition's statements, commits and fsync calls run on that one thread, so its time is the
/// store's cost of a payment, and steadier than the rate on a shared machine (rounds of one run
/// agree within a few percent, runs apart within about a tenth: compare builds in alternating pairs).
enum StorageBench {
    static func run(_ arguments: [String]) async {
        let orders = option("--orders", in: arguments) ?? 4000
        let writers = option("--writers", in: arguments) ?? 64
        let rounds = max(option("--rounds", in: arguments) ?? 3, 1)
        let groupOnly = arguments.contains("--group-only")
        let keep = arguments.firstIndex(of: "--dir").flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
        let directory = keep ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("wxpay-bench-storage-\(UUID().uuidString)").path
        defer { if keep == nil { try? FileManager.default.removeItem(atPath: directory) } }
        do {
            try await measure(orders: orders, writers: writers, rounds: rounds, groupOnly: groupOnly, directory: directory)
        } catch {
            print("storage bench failed: \(error)")
            exit(1)
        }
    }

    private struct Outcome {
        var seconds: Double
        var statistics: SQLiteOrderStore.WriteStatistics
        var perSecond: Double
        /// The writer thread's CPU time per transition, in microseconds.
        var writerMicroseconds: Double
    }

    private static func measure(orders: Int, writers: Int, rounds: Int, groupOnly: Bool, directory: String) async throws {
        let seed = directory + "/seed.sqlite"
        try await seedOrders(orders, writers: writers, path: seed)
        print("storage: \(orders) transitions NOTPAY -> SUCCESS (+ event + outbox row), \(writers) concurrent writers,")
        print("         WAL + synchronous=FULL, \(rounds) rounds alternating the modes, files in \(directory)")
        let allModes = [("naive (1 transaction per operation)", 1), ("group commit", 256)]
        let modes = groupOnly ? [allModes[1]] : allModes
        var perSecond: [[Double]] = modes.map { _ in [] }
        var writerCPU: [[Double]] = modes.map { _ in [] }
        // Alternating the modes round by round spreads the noise of a shared machine over both.
        for round in 1...rounds {
            for (mode, (name, batch)) in modes.enumerated() {
                let path = directory + "/round-\(round)-batch-\(batch).sqlite"
                try FileManager.default.copyItem(atPath: seed, toPath: path)
                let outcome = try await settle(orders: orders, writers: writers, path: path, maxBatchSize: batch)
                try? FileManager.default.removeItem(atPath: path)
                perSecond[mode].append(outcome.perSecond)
                writerCPU[mode].append(outcome.writerMicroseconds)
                let mean = Double(outcome.statistics.operations) / Double(max(outcome.statistics.transactions, 1))
                print(
                    "  round \(round) \(name.padding(toLength: 36, withPad: " ", startingAt: 0))"
                        + " \(format(outcome.seconds, 2)) s  \(format(outcome.perSecond, 0)) transitions/s"
                        + "  (\(outcome.statistics.transactions) transactions, \(format(mean, 1)) operations each)"
                        + "  writer CPU \(format(outcome.writerMicroseconds, 1)) µs per transition")
            }
        }
        let group = median(perSecond[modes.count - 1])
        print("  median group commit: \(format(group, 0)) transitions/s, writer CPU "
              + "\(format(median(writerCPU[modes.count - 1]), 1)) µs per transition")
        print("RESULT storage-group-writer-us \(format(median(writerCPU[modes.count - 1]), 1))")
        guard !groupOnly else { return }
        let naive = median(perSecond[0])
        print("  median naive: \(format(naive, 0)) transitions/s, writer CPU \(format(median(writerCPU[0]), 1)) µs per transition")
        print("  ratio group/naive (medians): \(format(group / naive, 1))x")
    }

    /// The CPU time, in nanoseconds, of this process's thread named `name` (the store's writer).
    private static func threadNanoseconds(named name: String) -> Int? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return nil }
        for task in tasks {
            guard let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
                  let schedstat = try? String(contentsOfFile: "/proc/self/task/\(task)/schedstat", encoding: .utf8),
                  let first = schedstat.split(separator: " ").first
            else { continue }
            return Int(first)
        }
        return nil
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    private static func seedOrders(_ count: Int, writers: Int, path: String) async throws {
        let store = try await SQLiteOrderStore.open(path: path)
        let next = Counter()
        let now = Date()
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<writers {
                    group.addTask {
                        while case let index = next.take(), index < count {
                            let order = OrderRecord(
                                outTradeNo: name(index), amount: 100 + index % 7, description: "bench",
                                clientIP: "127.0.0.1", userID: "user-\(index % 97)", signType: "HMAC-SHA256",
                                timeExpire: "20300101000000", expiresAt: now.addingTimeInterval(7200), createdAt: now,
                                parametersDigest: "digest-\(index)")
                            _ = try await store.create(order, event: NewOrderEvent(kind: "created", detail: "", at: now))
                        }
                    }
                }
                try await group.waitForAll()
            }
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    private static func settle(orders: Int, writers: Int, path: String, maxBatchSize: Int) async throws -> Outcome {
        let store = try await SQLiteOrderStore.open(
            path: path, configuration: SQLiteOrderStore.Configuration(maxBatchSize: maxBatchSize))
        let next = Counter()
        let before = store.writeStatistics
        let clock = ContinuousClock()
        let start = clock.now
        let changed: Int
        do {
            changed = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<writers {
                    group.addTask {
                        var changed = 0
                        while case let index = next.take(), index < orders {
                            let now = Date()
                            let outbox = OutboxEvent(
                                id: UUID().uuidString, outTradeNo: name(index), type: "order.paid",
                                payload: #"{"out_trade_no":"\#(name(index))"}"#, createdAt: now)
                            let result = try await store.transition(
                                name(index), to: .success, from: OrderState.open, transactionID: "wx-\(index)",
                                paidAt: now, expectedAmount: 100 + index % 7, detail: "bench", outbox: outbox, at: now)
                            if result.didChange { changed += 1 }
                        }
                        return changed
                    }
                }
                return try await group.reduce(0, +)
            }
        } catch {
            await store.close()
            throw error
        }
        let elapsed = clock.now - start
        // A round's store has a writer thread of its own, started when the store opened: its time
        // is this round's writes (and the opening's few statements).
        let writerNanoseconds = threadNanoseconds(named: "sqlite-writer") ?? 0
        let after = store.writeStatistics
        let counts = try await store.counts()
        await store.close()
        // A benchmark that lost a write would be measuring the wrong thing.
        guard changed == orders, counts.ordersByState[.success] == orders, counts.outboxPending == orders else {
            throw BenchError.inconsistent
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Outcome(
            seconds: seconds,
            statistics: SQLiteOrderStore.WriteStatistics(
                transactions: after.transactions - before.transactions,
                operations: after.operations - before.operations),
            perSecond: Double(orders) / seconds,
            writerMicroseconds: Double(writerNanoseconds) / 1000 / Double(orders))
    }

    private enum BenchError: Error {
        case inconsistent
    }

    private final class Counter: Sendable {
        private let value = Atomic<Int>(0)
        func take() -> Int { value.wrappingAdd(1, ordering: .relaxed).oldValue }
    }

    private static func name(_ index: Int) -> String { "bench-\(index)" }

    private static func option(_ name: String, in arguments: [String]) -> Int? {
        guard let index = arguments.firstIndex(of: name), arguments.indices.contains(index + 1) else { return nil }
        return Int(arguments[index + 1])
    }

    private static func format(_ value: Double, _ digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }
}
