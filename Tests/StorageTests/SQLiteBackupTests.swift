// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import ChildProcessSupport
import SQLiteStore
import StorageCore
import StoreTestSupport
import Testing
import TestSupport

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

    @Test("A restore brings back no console session: one signed out after the backup stays signed out")
    func aRestoreEndsTheBackupsConsoleSessions() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        let at = Date()
        try await store.createSession(ConsoleSession(id: "kept-by-backup", username: "alice", credentialStamp: "stamp",
                                                     csrfToken: "csrf", createdAt: at, lastSeenAt: at,
                                                     expiresAt: at.addingTimeInterval(3600), address: "203.0.113.9"))
        try await Fixture.create(Fixture.order("KEEP-1"), in: store)
        await store.close()
        let backupPath = directory.path + "/sessions.backup"
        let taken = try await SQLiteBackup.backup(database: directory.databasePath, to: backupPath)
        #expect(taken.rows["console_sessions"] == 1)
        let (report, _) = try await SQLiteBackup.restore(from: backupPath, to: directory.databasePath)
        #expect(report.endedSessions == 1 && report.rows["console_sessions"] == 0 && report.rows["orders"] == 1)
        let restored = try await SQLiteOrderStore.open(path: directory.databasePath)
        #expect(try await restored.session(id: "kept-by-backup") == nil)
        #expect(try await restored.order("KEEP-1") != nil)
        await restored.close()
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

/// The second outside review's restore findings: "in use" belongs to the file, not its name (a hard
/// link is another name of the same file); the safety copy and the restored database with a WAL.
struct SQLiteRestoreLockTests {
    static let path = ["PATH": "/usr/bin:/bin"]

    @Test("A restore through a hard link, the path itself or a symbolic link to a database in use is refused and changes nothing")
    func aRestoreThroughAHardLinkToADatabaseInUseIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        try await Fixture.create(Fixture.order("HL-1"), in: store)
        let backupPath = directory.path + "/hl.backup"
        _ = try await SQLiteBackup.backup(database: directory.databasePath, to: backupPath)
        try await Fixture.create(Fixture.order("HL-2"), in: store)
        // Another directory: a lock kept beside a name would not be found from there.
        let elsewhere = directory.path + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        let hardLink = elsewhere + "/hard.sqlite"
        #expect(link(directory.databasePath, hardLink) == 0)
        let symbolic = elsewhere + "/soft.sqlite"
        try FileManager.default.createSymbolicLink(atPath: symbolic, withDestinationPath: directory.databasePath)
        let before = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        for path in [hardLink, directory.databasePath, symbolic] {
            do {
                _ = try await SQLiteBackup.restore(from: backupPath, to: path)
                Issue.record("a restore through \(path) replaced a database in use")
            } catch {
                guard case .inUse(_, byOtherProgram: false) = error else { Issue.record("\(path): \(error)"); continue }
                #expect(error.description.contains("running gateway"))
            }
        }
        // Nothing changed: no safety copy, both orders there, and the store still writes.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).sorted() == ["hard.sqlite", "soft.sqlite"])
        try await Fixture.create(Fixture.order("HL-3"), in: store)
        #expect(try await store.order("HL-2") != nil)
        await store.close()
        // Closed, but the file still has two names: refused by every name, since the WAL beside
        // the name a gateway used cannot be found from the other; nothing changed.
        let closedFiles = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        let image = try Data(contentsOf: URL(fileURLWithPath: directory.databasePath))
        for path in [hardLink, directory.databasePath, symbolic] {
            do {
                _ = try await SQLiteBackup.restore(from: backupPath, to: path)
                Issue.record("a restore through \(path) replaced a database with two names")
            } catch {
                guard case .severalNames(let names) = error else { Issue.record("\(path): \(error)"); continue }
                #expect(names.links == 2)
                #expect(error.description.contains("find / -samefile"), "\(error)")
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.databasePath)) == image)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == closedFiles)
        // One name again: the restore goes through, and the database is the backup.
        #expect(unlink(hardLink) == 0)
        let (restored, saved) = try await SQLiteBackup.restore(from: backupPath, to: symbolic)
        #expect(restored.rows["orders"] == 1)
        let kept = try SQLiteBackup.verify(try #require(saved))
        #expect(kept.rows["orders"] == 3)
        let reopened = try await SQLiteOrderStore.open(path: directory.databasePath)
        #expect(try await reopened.order("HL-1") != nil)
        #expect(try await reopened.order("HL-3") == nil)
        await reopened.close()
    }

    @Test("A backup and doctor's inspection run beside an open store and let go of the database when done")
    func backupsAndInspectionsShareTheLock() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        try await Fixture.create(Fixture.order("SH-1"), in: store)
        // Both run beside an open store (shared), and leave it working.
        let report = try await SQLiteBackup.backup(database: directory.databasePath, to: directory.path + "/sh.backup")
        #expect(report.rows["orders"] == 1)
        let inspection = try await SQLiteOrderStore.inspect(path: directory.databasePath)
        #expect(inspection.writable)
        try await Fixture.create(Fixture.order("SH-2"), in: store)
        await store.close()
        // Nothing holds it now: the restore goes through.
        let (restored, _) = try await SQLiteBackup.restore(from: directory.path + "/sh.backup", to: directory.databasePath)
        #expect(restored.rows["orders"] == 1)
    }

    /// What a gateway killed mid-flight leaves: the database file, a WAL whose committed frames
    /// were never checkpointed, and its shared-memory index (copied by `cp` in a child, since
    /// this process opening and closing the file would drop the store's SQLite locks).
    static func crashImage(of source: String, to image: String) async throws {
        for suffix in ["", "-wal", "-shm"] {
            let copy = try await ChildProcess.run("cp", [source + suffix, image + suffix], environment: path)
            try #require(copy.status == 0, "cp \(suffix): \(String(decoding: copy.errors, as: UTF8.self))")
        }
    }

    /// A backup (in `directory`) of a database holding one order, OLD-1.
    static func oneOrderBackup(in directory: TemporaryDirectory) async throws -> String {
        let small = try await SQLiteOrderStore.open(path: directory.path + "/small.sqlite")
        try await Fixture.create(Fixture.order("OLD-1"), in: small)
        await small.close()
        let backupPath = directory.path + "/small.backup"
        _ = try await SQLiteBackup.backup(database: directory.path + "/small.sqlite", to: backupPath)
        return backupPath
    }

    /// At `image`, the crash image of a store that wrote WAL-0…WAL-7, which only its WAL holds:
    /// the database file alone does not have them (checked on a copy).
    static func crashedWithEightOrders(_ directory: TemporaryDirectory, at image: String) async throws {
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        for index in 0..<8 { try await Fixture.create(Fixture.order("WAL-\(index)"), in: store) }
        try await crashImage(of: directory.databasePath, to: image)
        await store.close()
        let lone = directory.path + "/lone.sqlite"
        #expect(try await ChildProcess.run("cp", [image, lone], environment: path).status == 0)
        try #require(((try? SQLiteBackup.verify(lone).rows["orders"]) ?? 0) < 8, "the WAL was checkpointed; the test shows nothing")
        #expect(FileManager.default.fileExists(atPath: image + "-wal"))
    }

    @Test("The safety copy holds rows still only in the WAL, and the restored database has no -wal or -shm beside it")
    func theSafetyCopyHoldsTheWALAndNoWALIsLeft() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let backupPath = try await Self.oneOrderBackup(in: directory)
        let image = directory.path + "/crashed.sqlite"
        try await Self.crashedWithEightOrders(directory, at: image)

        let (restored, saved) = try await SQLiteBackup.restore(from: backupPath, to: image)
        #expect(restored.rows["orders"] == 1)
        // The safety copy is the database as SQLite saw it, WAL included: all eight orders.
        let kept = try #require(saved)
        #expect(try SQLiteBackup.verify(kept).rows["orders"] == 8)
        let keptStore = try await SQLiteOrderStore.open(path: kept)
        #expect(try await keptStore.order("WAL-7") != nil)
        await keptStore.close()
        // Nothing of the old database is left beside the new one for SQLite to replay over it.
        for suffix in ["-wal", "-shm", "-journal"] {
            #expect(!FileManager.default.fileExists(atPath: image + suffix), "\(image + suffix) was left")
        }
        #expect(!FileManager.default.fileExists(atPath: kept + ".partial"))
        // And the restored database is the backup, in the store's hands.
        let reopened = try await SQLiteOrderStore.open(path: image)
        #expect(try await reopened.order("OLD-1") != nil)
        #expect(try await reopened.order("WAL-0") == nil)
        try await Fixture.create(Fixture.order("NEW-1"), in: reopened)
        await reopened.close()
        #expect(try SQLiteBackup.verify(image).rows["orders"] == 2)
    }

    @Test("After a crash, a restore through a hard link is refused and changes nothing; through a symbolic link it restores the real file and keeps its WAL's rows")
    func aRestoreAfterACrashThroughAHardLinkIsRefusedAndThroughASymbolicLinkWorksOnTheRealFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let backupPath = try await Self.oneOrderBackup(in: directory)
        // What a killed gateway leaves in its data directory: the file, a WAL with eight orders, its index.
        let data = directory.path + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let crashed = data + "/gateway.sqlite"
        try await Self.crashedWithEightOrders(directory, at: crashed)

        // A hard link in another directory: refused, and not a byte of the crashed files changed.
        let elsewhere = directory.path + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        #expect(link(crashed, elsewhere + "/hard.sqlite") == 0)
        func image() throws -> [String: Data] {
            var files: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: data) {
                files[name] = try Data(contentsOf: URL(fileURLWithPath: data + "/" + name))
            }
            return files
        }
        let before = try image()
        #expect(before.keys.sorted() == ["gateway.sqlite", "gateway.sqlite-shm", "gateway.sqlite-wal"])
        do {
            _ = try await SQLiteBackup.restore(from: backupPath, to: elsewhere + "/hard.sqlite")
            Issue.record("a restore through a hard link went through")
        } catch {
            guard case .severalNames = error else { Issue.record("\(error)"); return }
        }
        #expect(try image() == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere) == ["hard.sqlite"])

        // A symbolic link instead: the restore is the real file's, its safety copy beside it.
        #expect(unlink(elsewhere + "/hard.sqlite") == 0)
        try FileManager.default.createSymbolicLink(atPath: elsewhere + "/soft.sqlite", withDestinationPath: crashed)
        let (restored, saved) = try await SQLiteBackup.restore(from: backupPath, to: elsewhere + "/soft.sqlite")
        #expect(restored.rows["orders"] == 1)
        let kept = try #require(saved)
        #expect((kept as NSString).deletingLastPathComponent == SQLiteDatabaseFile.resolved(data))
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere) == ["soft.sqlite"])
        for suffix in ["-wal", "-shm", "-journal"] {
            #expect(!FileManager.default.fileExists(atPath: crashed + suffix), "\(crashed + suffix) was left")
        }
        // The safety copy has the rows that were only in the WAL; the restored file is sound.
        #expect(try SQLiteBackup.verify(kept).rows["orders"] == 8)
        #expect(try SQLiteBackup.verify(crashed).rows["orders"] == 1)
        let reopened = try await SQLiteOrderStore.open(path: crashed)
        #expect(try await reopened.order("OLD-1") != nil)
        #expect(try await reopened.order("WAL-0") == nil)
        await reopened.close()
    }

    @Test("A backup of a database file with two names is refused and writes nothing")
    func aBackupOfADatabaseWithTwoNamesIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        await (try await SQLiteOrderStore.open(path: directory.databasePath)).close()
        #expect(link(directory.databasePath, directory.path + "/second.sqlite") == 0)
        do {
            _ = try await SQLiteBackup.backup(database: directory.path + "/second.sqlite", to: directory.path + "/b.backup")
            Issue.record("a backup of a database with two names was written")
        } catch {
            guard case .severalNames(let names) = error else { Issue.record("\(error)"); return }
            #expect(names.links == 2)
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/b.backup"))
    }

    @Test("A restore where there is no database is refused unless told it is a new one, which keeps no safety copy")
    func aRestoreWhereThereIsNoDatabaseNeedsNew() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        try await Fixture.create(Fixture.order("NEW-1"), in: store)
        await store.close()
        let backupPath = directory.path + "/n.backup"
        _ = try await SQLiteBackup.backup(database: directory.databasePath, to: backupPath)
        // A mistyped path, in a directory that does not exist: refused, nothing made.
        let typo = directory.path + "/typo/gateway.sqlite"
        do {
            _ = try await SQLiteBackup.restore(from: backupPath, to: typo)
            Issue.record("a restore into no database went through")
        } catch {
            guard case .noDatabase(let path) = error else { Issue.record("\(error)"); return }
            #expect(path == typo)
            #expect(error.description.contains("--new"))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/typo"))
        // An empty file is no database either.
        #expect(FileManager.default.createFile(atPath: directory.path + "/empty.sqlite", contents: nil))
        await #expect(throws: SQLiteBackup.RestoreRefusal.self) {
            _ = try await SQLiteBackup.restore(from: backupPath, to: directory.path + "/empty.sqlite")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.path + "/empty.sqlite")).isEmpty)
        // Told it is a new machine: restored, no safety copy (nothing to keep), the owner's only.
        let (restored, saved) = try await SQLiteBackup.restore(from: backupPath, to: typo, newDatabase: true)
        #expect(restored.rows["orders"] == 1)
        #expect(saved == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/typo") == ["gateway.sqlite"])
        #expect(try FileManager.default.attributesOfItem(atPath: typo)[.posixPermissions] as? Int == 0o600)
        // With --new where a database is: refused, it stays.
        do {
            _ = try await SQLiteBackup.restore(from: backupPath, to: directory.databasePath, newDatabase: true)
            Issue.record("--new replaced a database")
        } catch {
            guard case .databaseExists = error else { Issue.record("\(error)"); return }
        }
        #expect(try SQLiteBackup.verify(directory.databasePath).rows["orders"] == 1)
    }

    @Test("A WAL or journal left where the database is missing is never removed: the restore is refused, with --new too",
          arguments: ["-wal", "-journal"])
    func aLeftoverJournalWithoutItsDatabaseIsNeverRemoved(suffix: String) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        try await Fixture.create(Fixture.order("LEFT-1"), in: store)
        await store.close()
        let backupPath = directory.path + "/n.backup"
        _ = try await SQLiteBackup.backup(database: directory.databasePath, to: backupPath)
        // The database was moved aside after a crash, its WAL (the committed payments) left behind;
        // or an empty file stands where it was.
        let database = directory.path + "/moved/gateway.sqlite"
        try FileManager.default.createDirectory(atPath: directory.path + "/moved", withIntermediateDirectories: true)
        let journal = Data("committed payments".utf8)
        #expect(FileManager.default.createFile(atPath: database + suffix, contents: journal))
        for emptyFile in [false, true] {
            if emptyFile { #expect(FileManager.default.createFile(atPath: database, contents: nil)) }
            for newDatabase in [false, true] {
                do {
                    _ = try await SQLiteBackup.restore(from: backupPath, to: database, newDatabase: newDatabase)
                    Issue.record("a restore went through beside a leftover \(suffix) (new \(newDatabase))")
                } catch {
                    guard case .leftoverJournal(let path) = error else { Issue.record("\(error)"); continue }
                    #expect(path == database + suffix)
                    #expect(error.description.contains("never removes it"))
                }
                #expect(try Data(contentsOf: URL(fileURLWithPath: database + suffix)) == journal)
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/moved").sorted()
            == ["gateway.sqlite", "gateway.sqlite" + suffix])
    }

    @Test("A restore is refused while a program that takes no usage lock (a sqlite3 shell) has the database open")
    func aRestoreIsRefusedWhileASQLiteShellHasTheDatabaseOpen() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        try await Fixture.create(Fixture.order("SQ-1"), in: store)
        await store.close()
        let backupPath = directory.path + "/sq.backup"
        _ = try await SQLiteBackup.backup(database: directory.databasePath, to: backupPath)
        let store2 = try await SQLiteOrderStore.open(path: directory.databasePath)
        try await Fixture.create(Fixture.order("SQ-2"), in: store2)
        await store2.close()

        let output = directory.path + "/sqlite3.out"
        let shell = try ChildProcess("sqlite3", [directory.databasePath], environment: Self.path, input: .pipe,
                                     output: output, errors: directory.path + "/sqlite3.err")
        shell.write(Array("SELECT 'ready', count(*) FROM orders;\n".utf8))
        try #require(await eventually {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("ready|2")
        })
        let before = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        do {
            _ = try await SQLiteBackup.restore(from: backupPath, to: directory.databasePath)
            Issue.record("a restore replaced a database a sqlite3 shell has open")
        } catch {
            guard case .inUse(_, byOtherProgram: true) = error else { Issue.record("\(error)"); return }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == before)
        shell.write(Array("SELECT 'still', count(*) FROM orders;\n".utf8))
        #expect(await eventually { ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("still|2") })
        shell.closeInput()
        #expect(await shell.wait(timeout: .seconds(120)) == 0)
        let (restored, _) = try await SQLiteBackup.restore(from: backupPath, to: directory.databasePath)
        #expect(restored.rows["orders"] == 1)
    }

    @Test("A usage lock another process lets go of within moments does not refuse the restore; one kept does")
    func aLockLetGoOfWithinMomentsDoesNotRefuseTheRestore() async throws {
        // A child being started anywhere in a process holds a copy of its descriptors until its
        // program runs, so a store's lock can outlive the store's close by moments.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteOrderStore.open(path: directory.databasePath)
        try await Fixture.create(Fixture.order("LG-1"), in: store)
        await store.close()
        let backupPath = directory.path + "/lg.backup"
        _ = try await SQLiteBackup.backup(database: directory.databasePath, to: backupPath)

        let output = directory.path + "/flock.out"
        let holder = try ChildProcess("flock", ["--shared", directory.databasePath, "sh", "-c", "echo locked; exec cat"],
                                      environment: Self.path, input: .pipe, output: output,
                                      errors: directory.path + "/flock.err")
        try #require(await eventually {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("locked")
        })
        do {
            _ = try await SQLiteBackup.restore(from: backupPath, to: directory.databasePath)
            Issue.record("a restore replaced a database another process holds the usage lock of")
        } catch {
            guard case .inUse(_, byOtherProgram: false) = error else { Issue.record("\(error)"); return }
        }
        // Patience beyond the default 3 s: on a machine loaded by the whole suite, the holder's
        // exit after its input closes has taken longer than that.
        let restore = Task {
            try await SQLiteBackup.restore(from: backupPath, to: directory.databasePath, patience: .seconds(60))
        }
        try await Task.sleep(for: .milliseconds(500))
        holder.closeInput()
        let (restored, saved) = try await restore.value
        #expect(restored.rows["orders"] == 1)
        #expect(saved != nil)
        #expect(await holder.wait(timeout: .seconds(120)) == 0)
    }

    @Test("A backup is not restored onto the database it is")
    func aDatabaseIsNotRestoredOntoItself() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        await (try await SQLiteOrderStore.open(path: directory.databasePath)).close()
        do {
            _ = try await SQLiteBackup.restore(from: directory.databasePath, to: directory.databasePath)
            Issue.record("a database was restored onto itself")
        } catch {
            guard case .badBackup(let reason) = error else { Issue.record("\(error)"); return }
            #expect(reason.contains("the database itself"))
        }
    }
}
