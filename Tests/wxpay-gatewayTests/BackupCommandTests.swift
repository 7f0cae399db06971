// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import HTTP
import HTTPClientTestSupport
import Synchronization
import Testing

/// `wxpay-gateway backup` and `restore` as an operator runs them beside a serving gateway.
@Suite(.serialized)
struct BackupCommandTests {
    static let token = "demo-client-token"

    /// Runs `wxpay-gateway` with only GATEWAY_DATABASE (what backup and restore read) to its end.
    static func command(_ arguments: [String], database: String) async throws -> (status: Int32?, stdout: String, stderr: String) {
        let process = try CommandProcess(arguments, environment: ["GATEWAY_DATABASE": "sqlite:" + database])
        let status = await process.exitStatus(within: 180)
        let result = (status, process.stdout, process.stderr)
        await process.stop()
        return result
    }

    /// `serve --demo` on `database`, the reconciler off.
    static func serve(_ database: String, on started: StartedGateway) async throws {
        _ = try #require(try await started.start({ port in
            ["GATEWAY_LISTEN": "127.0.0.1:\(port)", "GATEWAY_DATABASE": "sqlite:" + database, "GATEWAY_RECONCILE_INTERVAL": "0"]
        }, demo: true))
    }

    static func sqlite(_ database: String, _ sql: String) async throws -> String {
        let run = try await Operations.tool("sqlite3", ["-readonly", database, sql])
        #expect(run.status == 0, "sqlite3: \(run.errors)")
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(.timeLimit(.minutes(10)))
    func aBackupTakenDuringANotifyStormIsSoundAndHoldsEveryOrderAcknowledgedBeforeIt() async throws {
        let directory = try Operations.temporaryDirectory("wxpay-backup")
        let database = directory + "/gateway.sqlite"
        let started = StartedGateway()
        try await Self.serve(database, on: started)
        let base = started.base
        let client = try HTTPClient()
        do {
            // Orders created and paid before the storm; their SUCCESS was read back (acknowledged).
            var paidBefore: [String] = []
            for index in 0..<20 {
                let number = "bk-paid-\(index)"
                #expect(try await client.createAndPay(number, base: base, wechat: base, token: Self.token) == "SUCCESS")
                paidBefore.append(number)
            }
            // The storm: creates and payments (each a notify to the gateway) from eight tasks at once.
            let ledger = StormLedger()
            let storm = Task {
                await withTaskGroup(of: Void.self) { group in
                    for worker in 0..<8 {
                        group.addTask {
                            for index in 0..<40 {
                                let number = "bk-storm-\(worker)-\(index)"
                                guard let created = try? await client.send(.post, base + "/v1/orders", token: Self.token, body:
                                    #"{"amount":100,"description":"x","client_ip":"203.0.113.7","out_trade_no":"\#(number)"}"#),
                                    created.status == 201 else { continue }
                                // Acknowledged: the 201 arrived. Before or after the backup began?
                                ledger.acknowledge(number)
                                _ = try? await client.send(.post, base + "/simulator/orders/\(number)/pay")
                            }
                        }
                    }
                }
            }
            // Let the storm get going, then back up in the middle of it.
            while ledger.count < 60 && !storm.isCancelled {
                try await Task.sleep(for: .milliseconds(20))
            }
            let before = ledger.backupBegins()
            let backupFile = directory + "/backup.sqlite"
            let backup = try await Self.command(["backup", "--to", backupFile], database: database)
            let stormStillRunning = ledger.count < 320
            await storm.value
            #expect(backup.status == 0, "backup: \(backup.stderr)")
            #expect(backup.stdout.contains("integrity_check ok"), "\(backup.stdout)")
            // docs/operations.md's examples (backup, doctor) show the schema version this binary prints.
            let printed = try #require(backup.stdout.firstMatch(of: /schema version (\d+)/)?.output.1)
            let operations = try String(contentsOfFile: Operations.path("docs/operations.md"), encoding: .utf8)
            let documented = operations.matches(of: /schema version (\d+)( of (\d+))?/)
            #expect(documented.count >= 2)
            for match in documented {
                #expect(match.output.1 == printed && (match.output.3 ?? printed) == printed,
                        "docs/operations.md says \(match.output.0), the binary \(printed)")
            }
            #expect(stormStillRunning || ledger.count == 320)

            // The copy is sound on its own, and holds everything acknowledged before it began.
            #expect(try await Self.sqlite(backupFile, "PRAGMA integrity_check") == "ok")
            let orders = Set(try await Self.sqlite(backupFile, "SELECT out_trade_no FROM orders").split(separator: "\n").map(String.init))
            for number in paidBefore + before {
                #expect(orders.contains(number), "\(number) was acknowledged before the backup began but is not in it")
            }
            let paid = Set(try await Self.sqlite(backupFile, "SELECT out_trade_no FROM orders WHERE state = 'SUCCESS'")
                .split(separator: "\n").map(String.init))
            for number in paidBefore { #expect(paid.contains(number), "\(number) was paid before the backup but is not SUCCESS in it") }
            // The count it printed is the copy's.
            let count = try await Self.sqlite(backupFile, "SELECT count(*) FROM orders")
            #expect(backup.stdout.contains("orders \(count)"), "\(backup.stdout)")
            // No WAL or partial file is left beside the backup: it is one file.
            let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("backup.sqlite") }
            #expect(files == ["backup.sqlite"], "\(files)")
            // An existing file is never overwritten.
            let again = try await Self.command(["backup", "--to", backupFile], database: database)
            #expect(again.status == 74 && again.stderr.contains("exists already"))
            // Into a directory that is not there: said so, and nothing made.
            let nowhere = try await Self.command(["backup", "--to", directory + "/missing/backup.sqlite"], database: database)
            #expect(nowhere.status == 74 && nowhere.stderr.contains("no directory"), "\(nowhere.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/missing"))
            // Into a directory, named as the destination: the message says to name a file in it.
            let intoDirectory = try await Self.command(["backup", "--to", directory + "/"], database: database)
            #expect(intoDirectory.status == 74 && intoDirectory.stderr.contains("is a directory: name the new backup file, e.g. "
                + directory + "/gateway-backup.sqlite"), "\(intoDirectory.stderr)")
            #expect(!intoDirectory.stderr.contains("invalid storage request"))
            let slashed = try await Self.command(["backup", "--to", directory + "/new.sqlite/"], database: database)
            #expect(slashed.status == 74 && slashed.stderr.contains("ends in / but is no directory"), "\(slashed.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/new.sqlite"))
            // A symbolic link to nothing is a name that exists: never replaced.
            try FileManager.default.createSymbolicLink(atPath: directory + "/dangling.sqlite", withDestinationPath: directory + "/nowhere")
            let dangling = try await Self.command(["backup", "--to", directory + "/dangling.sqlite"], database: database)
            #expect(dangling.status == 74 && dangling.stderr.contains("exists already"), "\(dangling.stderr)")
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: directory + "/dangling.sqlite") == directory + "/nowhere")
            // A GATEWAY_DATABASE naming an empty file or a file that is not SQLite: nothing to back up.
            #expect(FileManager.default.createFile(atPath: directory + "/empty.sqlite", contents: Data()))
            let empty = try await Self.command(["backup", "--to", directory + "/from-empty.sqlite"], database: directory + "/empty.sqlite")
            #expect(empty.status == 74 && empty.stderr.contains("is not a wxpay-gateway database"), "\(empty.stderr)")
            #expect(FileManager.default.createFile(atPath: directory + "/text.sqlite", contents: Data(String(repeating: "not sqlite\n", count: 100).utf8)))
            let text = try await Self.command(["backup", "--to", directory + "/from-text.sqlite"], database: directory + "/text.sqlite")
            #expect(text.status == 74 && text.stderr.contains("is not a SQLite database"), "\(text.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/from-empty.sqlite"))
            #expect(!FileManager.default.fileExists(atPath: directory + "/from-text.sqlite"))

            // While the gateway serves, a restore is refused and changes nothing, whatever name
            // of the database it is given: the path, a hard link in another directory (the same
            // file by another name), a symbolic link.
            let ordersNow = try await Self.sqlite(database, "SELECT count(*) FROM orders")
            let elsewhere = directory + "/elsewhere"
            try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
            #expect(link(database, elsewhere + "/hard.sqlite") == 0)
            try FileManager.default.createSymbolicLink(atPath: elsewhere + "/soft.sqlite", withDestinationPath: database)
            for name in [database, elsewhere + "/hard.sqlite", elsewhere + "/soft.sqlite"] {
                let refused = try await Self.command(["restore", "--from", backupFile], database: name)
                #expect(refused.status == 75, "restore to \(name) while serving: \(refused.stderr)")
                #expect(refused.stderr.contains("in use by a running gateway"), "\(refused.stderr)")
            }
            #expect(try await Self.sqlite(database, "SELECT count(*) FROM orders") == ordersNow)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).allSatisfy { !$0.contains("before-restore") })
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).sorted() == ["hard.sqlite", "soft.sqlite"])

            // Stopped, a restore through the hard link is refused (78: the file has two names, and
            // the WAL beside the one a gateway used cannot be found from the other), as is a
            // backup; nothing changes.
            #expect(await started.gateway?.stop() == 0)
            let stopped = try Data(contentsOf: URL(fileURLWithPath: database))
            let twoNames = try await Self.command(["restore", "--from", backupFile], database: elsewhere + "/hard.sqlite")
            #expect(twoNames.status == 78, "restore through a hard link: \(twoNames.stderr)")
            #expect(twoNames.stderr.contains("has 2 names (hard links)") && twoNames.stderr.contains("find / -samefile"),
                    "\(twoNames.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: database)) == stopped)
            let twoNamesBackup = try await Self.command(["backup", "--to", directory + "/second.sqlite"], database: database)
            #expect(twoNamesBackup.status == 78, "backup of a file with two names: \(twoNamesBackup.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/second.sqlite"))
            // One name again: the restore through the symbolic link puts the backup in place of
            // the real file (the replaced database kept beside it), leaves no WAL of the old
            // database beside it, and a gateway serves the restored orders.
            #expect(unlink(elsewhere + "/hard.sqlite") == 0)
            let restored = try await Self.command(["restore", "--from", backupFile], database: elsewhere + "/soft.sqlite")
            #expect(restored.status == 0, "restore: \(restored.stderr)")
            #expect(restored.stdout.contains("the database it replaced is kept as \(database).before-restore-"), "\(restored.stdout)")
            #expect(try await Self.sqlite(database, "SELECT count(*) FROM orders") == count)
            for suffix in ["-wal", "-shm", "-journal"] {
                #expect(!FileManager.default.fileExists(atPath: database + suffix), "\(suffix) left beside the restored database")
            }
            // A gateway serving a file with a second name says so in its log.
            #expect(link(database, elsewhere + "/again.sqlite") == 0)
            let again2 = StartedGateway()
            try await Self.serve(database, on: again2)
            let order = try await client.send(.get, again2.base + "/v1/orders/" + paidBefore[0], token: Self.token)
            #expect(order.json["state"] as? String == "SUCCESS")
            let log = (again2.gateway?.stdout ?? "") + (again2.gateway?.stderr ?? "")
            #expect(log.contains("the database file has more than one name"), "\(log)")
            await again2.gateway?.stop()
        } catch {
            Issue.record("\(error)")
        }
        await started.gateway?.stop()
        await client.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    @Test("A gateway killed with SIGKILL holds the database no longer, and the restore's safety copy has every order it acknowledged",
          .timeLimit(.minutes(10)))
    func aKilledGatewayLeavesNoLockAndItsWALIsSaved() async throws {
        let directory = try Operations.temporaryDirectory("wxpay-killed")
        let database = directory + "/gateway.sqlite"
        let started = StartedGateway()
        try await Self.serve(database, on: started)
        let client = try HTTPClient()
        do {
            #expect(try await client.createAndPay("killed-0", base: started.base, wechat: started.base, token: Self.token) == "SUCCESS")
            let backupFile = directory + "/early.sqlite"
            #expect(try await Self.command(["backup", "--to", backupFile], database: database).status == 0)
            for index in 1..<6 {
                #expect(try await client.createAndPay("killed-\(index)", base: started.base, wechat: started.base, token: Self.token) == "SUCCESS")
            }
            await started.gateway?.kill()
            #expect(FileManager.default.fileExists(atPath: database + "-wal"), "the killed gateway left no WAL")
            // A hard link in another directory (the outside tester's sequence): the restore through
            // it is refused, 78, and not a byte of the database, its WAL or its index changes.
            let elsewhere = directory + "/elsewhere"
            try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
            #expect(link(database, elsewhere + "/alias.sqlite") == 0)
            func crashed() throws -> [Data] {
                try ["", "-wal", "-shm"].map { try Data(contentsOf: URL(fileURLWithPath: database + $0)) }
            }
            let before = try crashed()
            let refused = try await Self.command(["restore", "--from", backupFile], database: elsewhere + "/alias.sqlite")
            #expect(refused.status == 78, "restore through a hard link after a crash: \(refused.stderr)")
            #expect(refused.stderr.contains("SQLite keeps the WAL beside the name a program opened"), "\(refused.stderr)")
            #expect(try crashed() == before)
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere) == ["alias.sqlite"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).allSatisfy { !$0.contains("before-restore") })
            // Through a symbolic link instead: the kernel let go of the killed gateway's lock, so
            // the restore goes through, on the real file.
            #expect(unlink(elsewhere + "/alias.sqlite") == 0)
            try FileManager.default.createSymbolicLink(atPath: elsewhere + "/soft.sqlite", withDestinationPath: database)
            let restored = try await Self.command(["restore", "--from", backupFile], database: elsewhere + "/soft.sqlite")
            #expect(restored.status == 0, "restore after a crash: \(restored.stderr)")
            let saved = try #require(restored.stdout.split(separator: "\n").first { $0.contains("is kept as") }
                .map { String($0.split(separator: " ").last ?? "") })
            // The safety copy is beside the real file, and nothing but the link is beside the link.
            #expect(saved.hasPrefix(database + ".before-restore-"), "\(saved)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere) == ["soft.sqlite"])
            // What the killed gateway had written (WAL included) is in the safety copy, paid.
            #expect(try await Self.sqlite(saved, "SELECT count(*) FROM orders WHERE out_trade_no LIKE 'killed-%' AND state = 'SUCCESS'") == "6")
            #expect(try await Self.sqlite(database, "SELECT count(*) FROM orders WHERE out_trade_no LIKE 'killed-%'") == "1")
            for suffix in ["-wal", "-shm", "-journal"] {
                #expect(!FileManager.default.fileExists(atPath: database + suffix), "\(suffix) left beside the restored database")
            }
            #expect(try await Self.sqlite(database, "PRAGMA integrity_check") == "ok")
        } catch {
            Issue.record("\(error)")
        }
        await started.gateway?.stop()
        await client.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    @Test("The folders serve and restore --new make for a database are 0700, and the database 0600, under umask 000; a folder that existed keeps its mode")
    func theFoldersMadeForADatabaseAreTheOwnersAloneWhateverTheUmask() async throws {
        let directory = try Operations.temporaryDirectory("wxpay-folders")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(chmod(directory, 0o755) == 0)
        func mode(_ path: String) -> Int? {
            (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int
        }
        // The process's umask is the shell's: set in a child, never in this test process, whose
        // other tests make files meanwhile.
        let database = directory + "/a/b/gateway.sqlite"
        var gateway: CommandProcess?
        for _ in 0..<5 where gateway == nil {
            let port = closedLoopbackPort()
            let attempt = try CommandProcess(
                ["serve", "--demo"],
                environment: ["GATEWAY_LISTEN": "127.0.0.1:\(port)", "GATEWAY_DATABASE": "sqlite:" + database,
                              "GATEWAY_RECONCILE_INTERVAL": "0"],
                shellFirst: "umask 000")
            if await attempt.line(startingWith: "listening on ") != nil { gateway = attempt } else { await attempt.stop() }
        }
        let started = try #require(gateway)
        await started.stop()
        #expect(mode(directory + "/a") == 0o700)
        #expect(mode(directory + "/a/b") == 0o700)
        #expect(mode(database) == 0o600)
        #expect(mode(directory) == 0o755)

        let backup = directory + "/gateway.backup"
        #expect(try await Self.command(["backup", "--to", backup], database: database).status == 0)
        let restored = directory + "/c/d/gateway.sqlite"
        let restore = try CommandProcess(["restore", "--from", backup, "--new"], environment: ["GATEWAY_DATABASE": "sqlite:" + restored],
                                         shellFirst: "umask 000")
        #expect(await restore.exitStatus(within: 180) == 0, "\(restore.stderr)")
        await restore.stop()
        #expect(mode(directory + "/c") == 0o700)
        #expect(mode(directory + "/c/d") == 0o700)
        #expect(mode(restored) == 0o600)
    }

    @Test func aBackupThatIsNotADatabaseIsRefusedAndPostgreSQLIsPointedToItsOwnTools() async throws {
        let directory = try Operations.temporaryDirectory("wxpay-restore")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "not a database".write(toFile: directory + "/junk.sqlite", atomically: true, encoding: .utf8)
        let refused = try await Self.command(["restore", "--from", directory + "/junk.sqlite"], database: directory + "/g.sqlite")
        #expect(refused.status == 65, "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/g.sqlite"))
        // A sound backup into a path with no database (a mistyped GATEWAY_DATABASE): refused, 74,
        // naming the path, nothing made; with --new (a new machine) restored, and no safety copy.
        #expect(try await Operations.tool("sqlite3", [directory + "/src.sqlite",
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at INTEGER); INSERT INTO schema_migrations VALUES (1, 'one', 0);"]).status == 0)
        let typo = directory + "/typo/g.sqlite"
        let none = try await Self.command(["restore", "--from", directory + "/src.sqlite"], database: typo)
        #expect(none.status == 74, "\(none.stderr)")
        #expect(none.stderr.contains("no database at \(typo)") && none.stderr.contains("--new"), "\(none.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/typo"))
        let new = try await Self.command(["restore", "--from", directory + "/src.sqlite", "--new"], database: typo)
        #expect(new.status == 0, "\(new.stderr)")
        #expect(new.stdout.contains("no safety copy was made"), "\(new.stdout)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/typo") == ["g.sqlite"])
        let again = try await Self.command(["restore", "--from", directory + "/src.sqlite", "--new"], database: typo)
        #expect(again.status == 74 && again.stderr.contains("leave out --new"), "\(again.stderr)")
        let process = try CommandProcess(["backup", "--to", directory + "/b.sqlite"],
                                         environment: ["GATEWAY_DATABASE": "postgres://wxpay@127.0.0.1:9/wxpay"])
        #expect(await process.exitStatus() == 2)
        #expect(process.stderr.contains("pg_dump"))
        await process.stop()
        // Only GATEWAY_DATABASE is needed: no merchant, no tokens.
        #expect(try await Self.command(["backup"], database: directory + "/g.sqlite").status == 64)
        // Only the database is read: settings it does not use, however wrong, stop nothing.
        let unrelated = try CommandProcess(["backup", "--to", directory + "/unrelated.sqlite"],
                                           environment: ["GATEWAY_DATABASE": "sqlite:" + directory + "/typo/g.sqlite",
                                                         "GATEWAY_LISTEN": "bogus", "WXPAY_API_KEY": "short", "APPSTORE_ISSUER_ID": "1"])
        #expect(await unrelated.exitStatus() == 0, "\(unrelated.stderr)")
        #expect(FileManager.default.fileExists(atPath: directory + "/unrelated.sqlite"))
        await unrelated.stop()
        // A malformed GATEWAY_DATABASE is refused, naming it.
        let malformed = try CommandProcess(["backup", "--to", directory + "/m.sqlite"], environment: ["GATEWAY_DATABASE": "bogus://x"])
        #expect(await malformed.exitStatus() == 2)
        #expect(malformed.stderr.contains("GATEWAY_DATABASE"), "\(malformed.stderr)")
        await malformed.stop()
        // A misspelt GATEWAY_DATABASE leaves the default in force: said before anything is done.
        let misspelt = try CommandProcess(["restore", "--from", directory + "/src.sqlite"],
                                          environment: ["GATEWAY_DATABASE": "sqlite:" + directory + "/none/g.sqlite",
                                                        "GATEWAY_DATABSE": "sqlite:" + directory + "/g.sqlite"])
        #expect(await misspelt.exitStatus() == 74)
        #expect(misspelt.stderr.contains("restore: warning: GATEWAY_DATABSE is set but is not a variable the gateway knows"),
                "\(misspelt.stderr)")
        #expect(misspelt.stderr.contains("did you mean GATEWAY_DATABASE?"), "\(misspelt.stderr)")
        await misspelt.stop()
    }
}

/// Which orders the storm saw acknowledged (201), and which of them before the backup began.
private final class StormLedger: Sendable {
    private let state = Mutex<(acknowledged: [String], beforeBackup: [String]?)>(([], nil))

    func acknowledge(_ number: String) { state.withLock { $0.acknowledged.append(number) } }

    var count: Int { state.withLock { $0.acknowledged.count } }

    /// Marks the backup's start; the orders acknowledged until now.
    func backupBegins() -> [String] {
        state.withLock { state in
            state.beforeBackup = state.acknowledged
            return state.acknowledged
        }
    }
}
