// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import SQLiteStore
import StorageCore
import TestSupport
import Testing

struct DurabilityTests {
    @Test func theStoresThreadsCarryNamesAnOperatorCanTellApartInTopH() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        // Each thread names itself as it starts.
        func names() throws -> Set<String> {
            let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
            return Set(tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
                .map { $0.trimmingCharacters(in: .newlines) })
        }
        #expect(try await eventually { try names().isSuperset(of: ["sqlite-writer", "sqlite-reader-0", "sqlite-reader-1"]) })
        await store.close()
    }

    @Test func openingReportsTheMigrationsItApplied() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let made = try await SQLiteOrderStore.open(path: directory.databasePath)
        let first = try #require(made.schemaUpgrade)
        await made.close()
        #expect(first.from == 0)
        #expect(first.applied.count == first.to)
        #expect(first.applied.first?.hasPrefix("1 ") == true)
        let raw = RawSQLite(path: directory.databasePath)
        defer { raw.close() }
        #expect(raw.execute("DELETE FROM schema_migrations WHERE version = \(first.to)") == 0)
        let upgraded = try await SQLiteOrderStore.open(path: directory.databasePath)
        #expect(upgraded.schemaUpgrade?.from == first.to - 1)
        #expect(upgraded.schemaUpgrade?.to == first.to)
        #expect(upgraded.schemaUpgrade?.applied == [first.applied.last!])
        await upgraded.close()
        let current = try await SQLiteOrderStore.open(path: directory.databasePath)
        #expect(current.schemaUpgrade == nil)
        await current.close()
    }

    @Test func reopeningTheSameFileAppliesNoMigrationTwice() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for round in 0..<3 {
            let store = try await SQLiteOrderStore.open(path: directory.databasePath)
            try await Fixture.create(Fixture.order("D2-\(round)"), in: store)
            await store.close()
        }
        let raw = RawSQLite(path: directory.databasePath)
        defer { raw.close() }
        // Every migration once, numbered from 1 without gaps (whatever the latest number is).
        let applied = raw.scalar("SELECT COUNT(*) FROM schema_migrations")
        #expect(applied == raw.scalar("SELECT MAX(version) FROM schema_migrations"))
        #expect(Int(applied ?? "") ?? 0 >= 3)
        #expect(raw.scalar("SELECT COUNT(DISTINCT version) FROM schema_migrations") == applied)
        #expect(raw.scalar("SELECT COUNT(*) FROM sqlite_master WHERE name = 'refunds'") == "1")
        #expect(raw.scalar("SELECT COUNT(*) FROM sqlite_master WHERE name = 'orders_open_by_expires_at'") == "0")
        #expect(raw.scalar("SELECT COUNT(*) FROM orders") == "3")
        #expect(raw.scalar("PRAGMA journal_mode") == "wal")
    }

    @Test func aDatabaseMigratedByANewerProgramIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        await (try await SQLiteOrderStore.open(path: directory.databasePath)).close()
        let raw = RawSQLite(path: directory.databasePath)
        #expect(raw.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)") == 0)
        raw.close()
        await #expect(throws: StorageError.schemaTooNew) {
            let store = try await SQLiteOrderStore.open(path: directory.databasePath)
            await store.close()
        }
    }

    @Test func openingCreatesMissingParentDirectories() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/nested/deeper/orders.sqlite"
        let store = try await SQLiteOrderStore.open(path: path)
        try await Fixture.create(Fixture.order("D3"), in: store)
        await store.close()
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func aPathThatCannotHoldADatabaseFailsWithATypedError() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let blocker = directory.path + "/a-file"
        #expect(FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8)))
        await #expect(throws: StorageError.openFailed) {
            let store = try await SQLiteOrderStore.open(path: blocker + "/orders.sqlite")
            await store.close()
        }
    }

    @Test func aFileThatIsNotADatabaseIsReportedAsCorrupt() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let junk = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        #expect(FileManager.default.createFile(atPath: directory.databasePath, contents: junk))
        await #expect(throws: StorageError.corrupt) {
            let store = try await SQLiteOrderStore.open(path: directory.databasePath)
            await store.close()
        }
    }

    @Test func writesQueuedBeforeCloseAreCommittedNotDropped() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        let creates = (0..<30).map { index in
            Task { try await store.create(Fixture.order("Q\(index)"), event: Fixture.created) }
        }
        // Whatever was accepted before close completes; whatever came after is refused as closed.
        await store.close()
        var created = 0
        for task in creates {
            switch await task.result {
            case .success: created += 1
            case .failure(let error): #expect(error as? StorageError == .closed)
            }
        }
        let reopened = try await SQLiteOrderStore.open(path: directory.databasePath)
        let stored = try await reopened.counts().ordersByState[.notPay]
        await reopened.close()
        #expect(stored == created)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3")))
    func aWriterKilledInTheMiddleOfATransactionLeavesNothingBehind() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        try await Fixture.create(Fixture.order("K0"), in: store)
        await store.close()

        // A separate process opens a transaction, writes, and is killed with SIGKILL before COMMIT.
        // (A ChildProcess: Foundation's Process.run() can crash the test process on Linux.)
        let output = directory.path + "/sqlite3.out"
        let child = try ChildProcess("/usr/bin/sqlite3", [directory.databasePath], environment: [:], input: .pipe,
                                     output: output, errors: "/dev/null")
        child.write(Array("""
            BEGIN IMMEDIATE;
            UPDATE orders SET state = 'SUCCESS', transaction_id = 'forged' WHERE out_trade_no = 'K0';
            INSERT INTO orders (out_trade_no, amount, description, client_ip, sign_type, time_expire, expires_at,
                created_at, state, parameters_digest, updated_at)
                VALUES ('K1', 1, 'x', 'x', 'MD5', 'x', 0, 0, 'NOTPAY', 'x', 0);
            .print ready

            """.utf8))
        // Bounded: should "ready" never come, the kill below ends the child anyway.
        var ready = false
        let deadline = ContinuousClock.now + .seconds(30)
        while !ready && child.isRunning && ContinuousClock.now < deadline {
            ready = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("ready")
            if !ready { try await Task.sleep(for: .milliseconds(10)) }
        }
        await child.wait(timeout: .zero)
        #expect(ready)

        let reopened = try await SQLiteOrderStore.open(path: directory.databasePath)
        let k0 = try await reopened.order("K0")
        let k1 = try await reopened.order("K1")
        let integrity = try await reopened.integrityCheck()
        // The store can write again: the dead process's lock is gone.
        let paid = try await Fixture.pay("K0", in: reopened)
        await reopened.close()
        #expect(k0?.state == .notPay)
        #expect(k0?.transactionID == nil)
        #expect(k1 == nil)
        #expect(integrity == "ok")
        #expect(paid.didChange)
    }
}
