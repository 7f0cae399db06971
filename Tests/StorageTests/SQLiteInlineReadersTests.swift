// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import SQLiteStore
@testable import StorageCore
import TestSupport

/// Reads by key on lent connections (SQLiteInlineReaders): never one connection on two threads at
/// once, the reader threads when none is idle or a lock is met, and a close that waits for the
/// connections lent.
struct SQLiteInlineReadersTests {
    /// What the concurrent readers saw, shared among their tasks.
    private final class Probe: Sendable {
        let inUse = Mutex<Set<ObjectIdentifier>>([])
        let overlaps = Atomic<Int>(0)
        let finished = Atomic<Bool>(false)
    }

    private static func connections(_ count: Int, in directory: TemporaryDirectory) async throws -> [SQLiteConnection] {
        await (try await SQLiteOrderStore.open(path: directory.databasePath)).close()
        return try (0..<count).map { _ in
            try SQLiteConnection.open(path: directory.databasePath, readOnly: true, busyTimeout: .zero)
        }
    }

    @Test func aConnectionIsLentToOneReaderAtATimeAndNothingOnceClosed() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let readers = SQLiteInlineReaders(connections: try await Self.connections(2, in: directory))
        let probe = Probe()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<200 {
                        _ = try? readers.read { connection throws(StorageError) -> Bool in
                            let id = ObjectIdentifier(connection)
                            if !probe.inUse.withLock({ $0.insert(id).inserted }) { probe.overlaps.add(1, ordering: .relaxed) }
                            usleep(50)
                            probe.inUse.withLock { _ = $0.remove(id) }
                            return true
                        }
                    }
                }
            }
        }
        let overlapping = probe.overlaps.load(ordering: .relaxed)
        #expect(overlapping == 0)
        await readers.close()
        #expect(try readers.read { _ throws(StorageError) in 1 } == nil, "nothing is lent once closed")
    }

    @Test func aLockMetIsNotAnErrorButANilSoTheReadIsQueued() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let readers = SQLiteInlineReaders(connections: try await Self.connections(1, in: directory))
        #expect(try readers.read { _ throws(StorageError) -> Int in throw StorageError(code: .busy, detail: "locked") } == nil)
        #expect(throws: StorageError.self) {
            _ = try readers.read { _ throws(StorageError) -> Int in throw StorageError(code: .corrupt, detail: "bad page") }
        }
        // The connection came back after each: it is lent again.
        #expect(try readers.read { _ throws(StorageError) in 7 } == 7)
        await readers.close()
    }

    @Test func closeWaitsForTheConnectionsLent() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let readers = SQLiteInlineReaders(connections: try await Self.connections(1, in: directory))
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let probe = Probe()
        let reading = Task.detached {
            try readers.read { connection throws(StorageError) -> Int in
                entered.signal()
                release.wait()
                let value = try connection.row("SELECT 41 + 1") { row throws(StorageError) in try row.int(0) } ?? 0
                probe.finished.store(true, ordering: .releasing)
                return value
            }
        }
        await wait(for: entered)
        let closing = Task { await readers.close() }
        try await Task.sleep(for: .milliseconds(100))
        // The connection is still in use: the read goes on, on a connection close has not closed.
        release.signal()
        #expect(try await reading.value == 42)
        await closing.value
        let finishedBeforeClose = probe.finished.load(ordering: .acquiring)
        #expect(finishedBeforeClose)
    }

    @Test func manyConcurrentReadsByKeyOfAFileStoreAllAnswerTheirOwnOrder() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        for index in 0..<20 { try await Fixture.create(Fixture.order("IR-\(index)"), in: store) }
        let wrong = try await withThrowingTaskGroup(of: Bool.self) { group in
            for round in 0..<400 {
                group.addTask {
                    let key = round % 25
                    let found = try await store.order("IR-\(key)")
                    return key < 20 ? found?.outTradeNo != "IR-\(key)" : found != nil
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(wrong == 0)
        await store.close()
    }
}
