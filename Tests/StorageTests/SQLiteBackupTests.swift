// SPDX-License-Identifier: Apache-2.0
import Foundation
import SQLiteStore
import StorageCore
import Testing

struct SQLiteBackupTests {
    @Test func theBackupCountsEveryTableTheMigrationsCreate() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        await (try await SQLiteOrderStore.open(path: directory.databasePath)).close()
        let raw = RawSQLite(path: directory.databasePath)
        let tables = raw.scalar("SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name)")
        raw.close()
        // A table added by a migration must be added to SQLiteBackup.counted too.
        #expect(tables == SQLiteBackup.countedTables.sorted().joined(separator: ","))
    }

    @Test func aBackupWhileTheStoreIsOpenIsVerifiedAndARestoreThenIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        for index in 0..<5 { try await Fixture.create(Fixture.order("BK-\(index)"), in: store) }
        let backupPath = directory.databasePath + ".backup"
        let report = try await SQLiteBackup.backup(database: directory.databasePath, to: backupPath)
        #expect(report.rows["orders"] == 5)
        #expect(report.uncounted.isEmpty)
        #expect(try SQLiteBackup.verify(backupPath).rows == report.rows)
        try await Fixture.create(Fixture.order("BK-after"), in: store)
        await #expect(throws: SQLiteBackup.RestoreRefusal.self) {
            _ = try await SQLiteBackup.restore(from: backupPath, to: directory.databasePath)
        }
        await store.close()
        // Closed: the restore goes through, and the order written after the backup is gone.
        let (restored, saved) = try await SQLiteBackup.restore(from: backupPath, to: directory.databasePath)
        #expect(restored.rows["orders"] == 5)
        #expect(saved.map { FileManager.default.fileExists(atPath: $0) } == true)
        let reopened = try await SQLiteOrderStore.open(path: directory.databasePath)
        #expect(try await reopened.order("BK-after") == nil)
        #expect(try await reopened.order("BK-4") != nil)
        await reopened.close()
    }

    @Test func aBackupThatIsNotSoundIsNotRestoredAndTheDatabaseStaysUsable() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        await (try await SQLiteOrderStore.open(path: directory.databasePath)).close()
        // A corrupt file is not restored, and the database is left as it was.
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: directory.databasePath + ".junk"))
        await #expect(throws: SQLiteBackup.RestoreRefusal.self) {
            _ = try await SQLiteBackup.restore(from: directory.databasePath + ".junk", to: directory.databasePath)
        }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        await store.close()
    }
}
