// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import SQLiteStore
import StorageCore

/// `wxpay-gateway backup --to FILE` and `wxpay-gateway restore --from FILE`: the SQLite database
/// of `GATEWAY_DATABASE` (the only variable they read) copied while gateways serve from it, and put
/// back while none does (SQLiteStore/SQLiteBackup.swift). PostgreSQL has its own tools
/// (docs/operations.md). Exit status: 0 done and verified; 2 configuration; 64 usage; 65 the
/// backup to restore is unsound; 74 the database or the file failed (restore: no database there
/// without --new, or one there with it); 75 the database is in use; 78 the database file has more
/// than one name (hard links), whose WAL cannot be found.
enum BackupCommand {
    static let inUse: Int32 = 75
    static let badBackup: Int32 = 65
    /// sysexits' EX_CONFIG: the file is set up in a way the command cannot work with safely.
    static let severalNames: Int32 = 78

    static func backup(_ arguments: [String]) async -> Int32 {
        guard arguments.count == 2, arguments[0] == "--to", !arguments[1].isEmpty else {
            return usage("usage: wxpay-gateway backup --to FILE (a new file; GATEWAY_DATABASE names the database)")
        }
        guard let database = sqliteDatabase(command: "backup") else { return ExitStatus.configuration }
        do {
            let report = try await SQLiteBackup.backup(database: database, to: arguments[1])
            print("backup: \(database) -> \(arguments[1]): \(describe(report))")
            return 0
        } catch {
            FileHandle.standardError.write(Data("backup: failed, no backup was written: \(error)\n".utf8))
            switch error {
            case .severalNames: return severalNames
            case .refused, .failed: return ExitStatus.database
            }
        }
    }

    static func restore(_ arguments: [String]) async -> Int32 {
        let newDatabase = arguments.last == "--new"
        let options = newDatabase ? Array(arguments.dropLast()) : arguments
        guard options.count == 2, options[0] == "--from", !options[1].isEmpty else {
            return usage("usage: wxpay-gateway restore --from FILE [--new] (stop every gateway on GATEWAY_DATABASE first; "
                         + "--new: no database is there yet, a new machine)")
        }
        guard let database = sqliteDatabase(command: "restore") else { return ExitStatus.configuration }
        do {
            let (report, saved) = try await SQLiteBackup.restore(from: options[1], to: database, newDatabase: newDatabase)
            let real = SQLiteDatabaseFile.resolved(database) ?? database
            print("restore: \(options[1]) -> \(database)\(real == database ? "" : " (\(real))"): \(describe(report))")
            if report.endedSessions > 0 {
                print("restore: the backup's \(report.endedSessions) console session(s) ended: support staff sign in again")
            }
            if let saved {
                print("restore: the database it replaced is kept as \(saved)")
            } else {
                print("restore: there was no database before (--new), so no safety copy was made")
            }
            return 0
        } catch {
            FileHandle.standardError.write(Data("restore: refused, nothing was changed: \(error)\n".utf8))
            switch error {
            case .inUse: return inUse
            case .badBackup: return badBackup
            case .severalNames: return severalNames
            case .noDatabase, .databaseExists, .leftoverJournal, .failed: return ExitStatus.database
            }
        }
    }

    /// The SQLite path of GATEWAY_DATABASE, or nil with the refusal printed.
    private static func sqliteDatabase(command: String) -> String? {
        let database: GatewayConfiguration.Database
        let environment = Environment(ProcessInfo.processInfo.environment)
        do {
            database = try GatewayConfiguration.database(in: environment)
        } catch {
            FileHandle.standardError.write(Data(
                (GatewayResources.refusal(error, command: command, demo: false, environment: environment) + "\n").utf8))
            return nil
        }
        // A misspelt GATEWAY_DATABASE leaves the default path in force: where a backup or a restore
        // goes, the hint must be said before it does (`restore --new` would make that database).
        for warning in GatewayConfiguration.warnings(for: environment) {
            FileHandle.standardError.write(Data("\(command): warning: \(warning)\n".utf8))
        }
        guard case .sqlite(let path) = database else {
            FileHandle.standardError.write(Data(
                "\(command): GATEWAY_DATABASE is PostgreSQL; back it up with pg_dump or point-in-time recovery (docs/operations.md)\n".utf8))
            return nil
        }
        return path
    }

    private static func describe(_ report: SQLiteBackup.Report) -> String {
        let rows = report.rows.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        var text = "integrity_check ok, schema version \(report.schemaVersion), \(report.bytes) bytes; rows: \(rows)"
        if !report.uncounted.isEmpty { text += "; not counted (unknown tables): \(report.uncounted.joined(separator: ", "))" }
        return text
    }

    private static func usage(_ text: String) -> Int32 {
        FileHandle.standardError.write(Data((text + "\n").utf8))
        return ExitStatus.usage
    }
}
