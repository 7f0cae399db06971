// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
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

/// The outside review's restore findings: a database reached through a symbolic link, two restores
/// within one second, the files' modes, and backups that are not files.
struct SQLiteRestoreSafetyTests {
    @Test("A restore through a symbolic link to a database in use is refused")
    func aRestoreThroughASymlinkToADatabaseInUseIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        try await Fixture.create(Fixture.order("SL-1"), in: store)
        let backupPath = directory.path + "/other.backup"
        _ = try await SQLiteBackup.backup(database: directory.databasePath, to: backupPath)
        let alias = directory.path + "/alias.sqlite"
        try FileManager.default.createSymbolicLink(atPath: alias, withDestinationPath: directory.databasePath)
        // And a link to the directory, as /var/lib/wxpay-gateway → a data volume.
        let linkedDirectory = directory.path + "/linked"
        try FileManager.default.createSymbolicLink(atPath: linkedDirectory, withDestinationPath: directory.path)
        for path in [alias, linkedDirectory + "/orders.sqlite", directory.path + "/linked/./orders.sqlite"] {
            do {
                _ = try await SQLiteBackup.restore(from: backupPath, to: path)
                Issue.record("a restore through \(path) replaced a database in use")
            } catch {
                guard case .inUse = error else { Issue.record("\(path): \(error)"); continue }
            }
        }
        try await Fixture.create(Fixture.order("SL-2"), in: store)
        #expect(try await store.order("SL-2") != nil)
        await store.close()
    }

    @Test("Two restores within one second keep both databases they replaced")
    func twoRestoresWithinOneSecondKeepBothSafetyCopies() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        try await Fixture.create(Fixture.order("LIVE-1"), in: store)
        await store.close()
        let backupPath = directory.path + "/empty.backup"
        let empty = try await SQLiteOrderStore.open(path: directory.path + "/empty.sqlite")
        await empty.close()
        _ = try await SQLiteBackup.backup(database: directory.path + "/empty.sqlite", to: backupPath)
        let now = Date()
        let (_, first) = try await SQLiteBackup.restore(from: backupPath, to: directory.databasePath, now: now)
        let (_, second) = try await SQLiteBackup.restore(from: backupPath, to: directory.databasePath, now: now)
        let kept = try #require(first)
        #expect(second != nil && second != first)
        // The first copy still holds the original order.
        let original = try await SQLiteOrderStore.open(path: kept)
        #expect(try await original.order("LIVE-1") != nil)
        await original.close()
    }

    @Test("A new database, a backup and a safety copy are readable by their owner only")
    func databasesAndCopiesAreTheOwnersAlone() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let previous = umask(0o022)
        defer { umask(previous) }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        await store.close()
        let backupPath = directory.path + "/b.backup"
        _ = try await SQLiteBackup.backup(database: directory.databasePath, to: backupPath)
        let (_, saved) = try await SQLiteBackup.restore(from: backupPath, to: directory.databasePath)
        for path in [directory.databasePath, backupPath, try #require(saved)] {
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(path)")
        }
    }

    @Test("A backup that is missing or not a regular file is refused at once as unreadable, not as unsound")
    func aMissingOrSpecialBackupIsRefusedAsUnreadable() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fifo = directory.path + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        for path in [directory.path + "/missing.backup", fifo, directory.path] {
            do {
                _ = try await SQLiteBackup.restore(from: path, to: directory.databasePath)
                Issue.record("\(path) was restored")
            } catch {
                guard case .failed(let reason) = error else { Issue.record("\(path): \(error)"); continue }
                #expect(reason.contains("cannot read the backup"))
            }
        }
        #expect(!FileManager.default.fileExists(atPath: directory.databasePath))
    }
}
