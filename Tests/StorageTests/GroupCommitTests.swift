// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import Testing

@testable import SQLiteStore
@testable import StorageCore
import TestSupport

struct GroupCommitTests {
    /// Occupies the writer thread until `release` is signalled, so that later writes queue up.
    private func blockWriter(_ store: SQLiteOrderStore) async -> (blocker: Task<Int, any Error>, release: DispatchSemaphore) {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let blocker = Task {
            try await store.write { _ throws(StorageError) in
                started.signal()
                release.wait()
                return 0
            }
        }
        await wait(for: started)
        return (blocker, release)
    }

    /// Creates `count` orders, pays them all while the writer is held busy (so every payment is
    /// queued), then lets it go; returns how many transactions and operations the payments took.
    private func paymentsQueuedBehindABusyWriter(
        _ count: Int, prefix: String, in store: SQLiteOrderStore
    ) async throws -> (transactions: Int, operations: Int) {
        let orders = (0..<count).map { "\(prefix)\($0)" }
        for order in orders { try await Fixture.create(Fixture.order(order), in: store) }
        let (blocker, release) = await blockWriter(store)
        let before = store.writeStatistics
        let payments = orders.map { order in Task { try await Fixture.pay(order, in: store) } }
        try #require(await eventually { store.writer.queuedCount == orders.count })
        release.signal()
        _ = try await blocker.value
        for payment in payments { #expect(try await payment.value.didChange) }
        let after = store.writeStatistics
        return (after.transactions - before.transactions, after.operations - before.operations)
    }

    @Test func writesQueuedWhileTheWriterIsBusyCommitInOneTransaction() async throws {
        try await withSQLiteStore { store, _ async throws in
            let written = try await paymentsQueuedBehindABusyWriter(20, prefix: "G", in: store)
            #expect(written.transactions == 1)
            #expect(written.operations == 20)
            // Nothing failed, so the batch committed on its first, savepoint-free pass.
            #expect(store.writer.replayedBatches == 0)
        }
    }

    @Test func aFailingWriteInABatchRollsBackAloneAndTheOthersCommit() async throws {
        try await withSQLiteStore { store, _ async throws in
            for order in ["F1", "F2", "F3"] { try await Fixture.create(Fixture.order(order), in: store) }
            let (blocker, release) = await blockWriter(store)
            let before = store.writeStatistics
            let good1 = Task { try await Fixture.pay("F1", in: store) }
            try #require(await eventually { store.writer.queuedCount == 1 })
            let good2 = Task {
                try await store.transition(
                    "F2", to: .success, from: OrderState.open, outbox: Fixture.paid("F2"), at: TestTime.at(1))
            }
            try #require(await eventually { store.writer.queuedCount == 2 })
            // A write the database refuses (a constraint failure) after F1 and F2 in the same batch.
            let refused = Task {
                try await store.transition(
                    "F3", to: .success, from: OrderState.open, outbox: Fixture.refusedByTheDatabase("F3"),
                    at: TestTime.at(1))
            }
            try #require(await eventually { store.writer.queuedCount == 3 })
            release.signal()
            _ = try await blocker.value
            #expect(try await good1.value.didChange)
            #expect(try await good2.value.didChange)
            await #expect(throws: StorageError.constraint) { try await refused.value }
            #expect(store.writeStatistics.transactions - before.transactions == 1)
            // The batch's first pass, without savepoints, failed whole and ran again the careful way.
            #expect(store.writer.replayedBatches == 1)
            #expect(try await store.order("F3")?.state == .notPay)
            #expect(try await store.events("F3").count == 1)
            #expect(try await store.order("F1")?.state == .success)
            #expect(try await store.order("F2")?.state == .success)
        }
    }

    @Test func afterAFailingBatchTheNextBatchesTakeTheCarefulWayAtOnce() async throws {
        try await withSQLiteStore { store, _ async throws in
            for order in ["K1", "K2", "K3", "K4"] { try await Fixture.create(Fixture.order(order), in: store) }
            // Two batches in a row, each with a write that fails after the door's UPDATE and event
            // (an outbox row the database refuses): each time only that write is undone.
            for (good, bad) in [("K1", "K2"), ("K3", "K4")] {
                let (blocker, release) = await blockWriter(store)
                let paid = Task {
                    try await store.transition(
                        good, to: .success, from: OrderState.open, outbox: Fixture.paid(good), at: TestTime.at(1))
                }
                try #require(await eventually { store.writer.queuedCount == 1 })
                let refused = Task {
                    try await store.transition(
                        bad, to: .success, from: OrderState.open, outbox: Fixture.refusedByTheDatabase(bad), at: TestTime.at(1))
                }
                try #require(await eventually { store.writer.queuedCount == 2 })
                release.signal()
                _ = try await blocker.value
                #expect(try await paid.value.didChange)
                await #expect(throws: StorageError.constraint) { try await refused.value }
                #expect(try await store.order(bad)?.state == .notPay)
                #expect(try await store.events(bad).count == 1)
            }
            // Only the first failure cost a second pass: the batches after it went the careful way
            // from the start.
            #expect(store.writer.replayedBatches == 1)
        }
    }

    @Test func withGroupCommitOffEveryWriteIsItsOwnTransaction() async throws {
        try await withSQLiteStore(configuration: .init(maxBatchSize: 1)) { store, _ async throws in
            #expect(try await paymentsQueuedBehindABusyWriter(5, prefix: "N", in: store).transactions == 5)
        }
    }

    @Test func aResultIsDeliveredOnlyAfterItsTransactionCommitted() async throws {
        try await withSQLiteStore { store, directory async throws in
            try await Fixture.create(Fixture.order("C1"), in: store)
            // Another connection sees the change as soon as the caller has the result: nothing is
            // reported before COMMIT.
            let raw = RawSQLite(path: directory.databasePath)
            defer { raw.close() }
            for attempt in 0..<20 {
                _ = try await store.appendEvent("C1", kind: "probe", detail: "\(attempt)", at: TestTime.t0)
                #expect(raw.scalar("SELECT COUNT(*) FROM order_events WHERE out_trade_no = 'C1'") == "\(attempt + 2)")
            }
        }
    }
}
