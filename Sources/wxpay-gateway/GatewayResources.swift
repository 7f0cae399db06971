// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import Observability
import PostgresStore
import SQLiteStore
import StorageCore

/// What `serve` and `reconcile` both start from: the configuration read from the environment, the
/// logger it asks for, the order store it names, and an HTTP client. Opening them prints why it
/// failed, with the command's name, and gives the exit status (`ExitStatus`).
struct GatewayResources {
    let configuration: GatewayConfiguration
    let logger: Logger
    /// Every storage protocol both stores implement.
    let store: any GatewayStore
    let client: HTTPClient
    /// `serve`'s hold on a SQLite database, for the process's life.
    let serveLock: ServeLock?

    /// An exit status with its message already printed.
    struct Failure: Error {
        let status: Int32
    }

    /// - Parameter demo: whether the command was asked for demo mode (`serve --demo`).
    static func open(for command: String, demo: Bool, needs: GatewayConfiguration.Command = .serve) async
        -> Result<GatewayResources, Failure>
    {
        func fail(_ message: String, _ status: Int32) -> Result<GatewayResources, Failure> {
            FileHandle.standardError.write(Data("\(command): \(message)\n".utf8))
            return .failure(Failure(status: status))
        }
        let environment = Environment(ProcessInfo.processInfo.environment)
        let configuration: GatewayConfiguration
        do {
            configuration = try GatewayConfiguration(environment: environment, demo: demo, command: needs)
        } catch {
            return fail(refusal(error, command: command, demo: demo, environment: environment), ExitStatus.configuration)
        }
        // Only `serve` makes a database: an operator's command on a mistyped path must not create
        // one (and its directories) and report work done into it.
        if command != "serve", case .sqlite(let path) = configuration.database, !FileManager.default.fileExists(atPath: path) {
            return fail("no database at \(path) (GATEWAY_DATABASE): this command works on the database a gateway made; "
                        + "check the path, or start `wxpay-gateway serve` once to create it", ExitStatus.database)
        }
        let logger = Logger(label: "wxpay-gateway", level: configuration.logLevel, handler: JSONLinesLogHandler(timestamp: Timestamp.rfc3339))
        for warning in GatewayConfiguration.warnings(for: environment) { logger.warning(warning) }
        // Every storage protocol both stores implement.
        let store: any GatewayStore
        do {
            let upgrade: SchemaUpgrade?
            (store, upgrade) = try await openStore(configuration)
            if let upgrade { log(upgrade, of: configuration, to: logger) }
        } catch {
            // The description names the database without its password, and the error no value.
            return fail("cannot open the database \(configuration.databaseDescription): \(error)", ExitStatus.database)
        }
        // One `serve` per SQLite database (ServeLock.swift says why); taken once the store has
        // made the file, so its real path names the lock.
        var serveLock: ServeLock?
        if command == "serve", case .sqlite(let path) = configuration.database {
            switch ServeLock.take(for: SQLiteDatabaseFile.resolved(path) ?? path) {
            case .taken(let lock):
                serveLock = lock
            case .held:
                await store.close()
                return fail("another `wxpay-gateway serve` is serving \(path): one gateway serves a SQLite database "
                            + "(several instances need PostgreSQL); stop the other first", ExitStatus.inUse)
            case .failed(let reason):
                await store.close()
                return fail(reason, ExitStatus.database)
            }
        }
        // Served as it is (the gateway uses one name consistently), but a backup, a restore or a
        // program opening another name would not see this name's WAL.
        if case .sqlite(let path) = configuration.database {
            do throws(SQLiteDatabaseFile.SeveralNames) {
                try SQLiteDatabaseFile.requireOneName(SQLiteDatabaseFile.resolved(path) ?? path)
            } catch {
                logger.warning("the database file has more than one name; backup and restore refuse it until it has one",
                               ["problem": error.description])
            }
        }
        do {
            return .success(GatewayResources(configuration: configuration, logger: logger, store: store,
                                             client: try HTTPClient(), serveLock: serveLock))
        } catch {
            await store.close()
            return fail("cannot start the HTTP client: \(error)", ExitStatus.internal)
        }
    }

    /// The store, and the migrations opening it applied.
    static func openStore(_ configuration: GatewayConfiguration) async throws(StorageError)
        -> (any GatewayStore, SchemaUpgrade?)
    {
        switch configuration.database {
        case .sqlite(let path):
            let store = try await SQLiteOrderStore.open(path: path)
            return (store, store.schemaUpgrade)
        case .postgres(let settings):
            let store = try await PostgresOrderStore.open(settings, configuration: .init(poolSize: configuration.databasePool))
            return (store, store.schemaUpgrade)
        }
    }

    /// A new database's schema, or an upgrade: an upgrade may have rebuilt an index over every
    /// order, which is why the start took its time.
    private static func log(_ upgrade: SchemaUpgrade, of configuration: GatewayConfiguration, to logger: Logger) {
        let metadata = ["database": configuration.databaseDescription, "schema_version": String(upgrade.to),
                        "seconds": upgrade.seconds]
        if upgrade.from == 0 {
            logger.notice("made the database's schema", metadata)
        } else {
            logger.notice("upgraded the database's schema", metadata.merging([
                "from_version": String(upgrade.from), "migrations": upgrade.applied.joined(separator: "; "),
            ]) { current, _ in current })
        }
    }

    /// The refusal: every problem on its own line, then what a start would have warned about (a
    /// misspelt variable's "did you mean": often the missing one), and the way to the demo when
    /// production variables are missing and the command has one.
    static func refusal(_ error: ConfigurationError, command: String, demo: Bool, environment: Environment? = nil) -> String {
        var text = "refusing to start, the configuration is incomplete or wrong:\n  "
            + error.description.split(separator: "\n").joined(separator: "\n  ")
        for warning in environment.map(GatewayConfiguration.warnings(for:)) ?? [] { text += "\n  also: " + warning }
        if !demo && !error.missing.isEmpty && command == "serve" {
            text += "\n  (to try the gateway without a merchant account: wxpay-gateway serve --demo)"
        }
        return text
    }

    /// Releases the client, then the store (the last writes finish first).
    func close() async {
        await client.shutdown()
        await store.close()
        // Let go only once the store is closed (and not before: the lock lives as long as this).
        withExtendedLifetime(serveLock) {}
    }
}

/// The exit statuses of `serve` and `reconcile` (documented in the README).
enum ExitStatus {
    /// The start was refused: a variable is missing, malformed or conflicts with the mode.
    static let configuration: Int32 = 2
    /// The command line itself is wrong.
    static let usage: Int32 = 64
    /// The listening address could not be bound, or WeChat or the bill failed (reconcile).
    static let unavailable: Int32 = 69
    static let `internal`: Int32 = 70
    /// The database could not be opened.
    static let database: Int32 = 74
    /// Another `serve` is serving the SQLite database.
    static let inUse: Int32 = 75
}
