// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresStore
import SQLiteStore
import StorageCore
import Testing

/// A store under test: every storage protocol both stores implement. A new storage responsibility
/// (its own protocol, implemented by both) joins here, so the shared suites can reach it.
public typealias TestStore = any OrderStore & RefundStore & IAPStore & ConsoleStore & AuditStore & EntitlementStore
    & BindingStore

/// The stores the behaviour suites run against: SQLite always, PostgreSQL whenever
/// `WXPAY_TEST_POSTGRES` names a server (`scripts/test` starts a throwaway one and sets it).
public enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    /// Every kind this run can test.
    public static var all: [StoreKind] { TestPostgres.url == nil ? [.sqlite] : [.sqlite, .postgres] }

    public var testDescription: String { rawValue }
}

/// The throwaway server of this test run.
public enum TestPostgres {
    /// A libpq URI of the server, from `WXPAY_TEST_POSTGRES`; nil when the run has none.
    public static var url: String? {
        guard let url = ProcessInfo.processInfo.environment["WXPAY_TEST_POSTGRES"], !url.isEmpty else { return nil }
        return url
    }

    /// `url` with a search path, so a store opened on it lives in `schema`, and the schema as
    /// `application_name`, so a test can find (and cut) exactly its own connections.
    public static func url(schema: String, base: String? = nil) -> String? {
        guard let url = base ?? url else { return nil }
        // connect_timeout: a shared machine at load 100+ took over the stores' default 5 s to start
        // a server process for a new connection, which a test then saw as database_unavailable.
        return url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D" + schema + "&application_name=" + schema
            + "&connect_timeout=60"
    }
}

/// A fresh, empty database of one kind, for one test: a SQLite file in a temporary directory, or a
/// schema of its own on the test server. `remove()` deletes it.
public final class TestDatabase: Sendable {
    public let kind: StoreKind
    /// The SQLite file, or the PostgreSQL URI (with the schema's search path).
    public let location: String
    private let directory: String?
    /// The PostgreSQL server's URI (without the schema).
    private let server: String?
    /// The PostgreSQL schema (and application_name of the store's connections).
    public let schema: String?

    public convenience init(_ kind: StoreKind) async throws {
        try await self.init(kind, server: TestPostgres.url)
    }

    /// A fresh schema on another PostgreSQL server (one a test starts and stops itself).
    public convenience init(postgresServer url: String) async throws {
        try await self.init(.postgres, server: url)
    }

    private init(_ kind: StoreKind, server: String?) async throws {
        self.kind = kind
        self.server = kind == .postgres ? server : nil
        switch kind {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("wxpay-store-tests-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            self.directory = directory
            schema = nil
            location = directory + "/orders.sqlite"
        case .postgres:
            guard let url = server else { throw TestDatabaseError.noServer }
            let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
            try await RawPostgres.execute("CREATE SCHEMA " + schema, url: url)
            self.schema = schema
            directory = nil
            location = TestPostgres.url(schema: schema, base: url)!
        }
    }

    /// The PostgreSQL settings of this database (nil for SQLite).
    public var postgresSettings: PostgresSettings? {
        kind == .postgres ? PostgresSettings(url: location, connectTimeout: 5) : nil
    }

    /// Ends every server connection of this database's stores, as a server restart would (PostgreSQL
    /// only). Returns how many were ended.
    @discardableResult
    public func terminateConnections() async throws -> Int {
        guard let schema, let url = server else { return 0 }
        let ended = try await RawPostgres.scalar(
            "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '\(schema)'", url: url)
        return Int(ended ?? "0") ?? 0
    }

    /// Opens a store on the database; a second store on it sees what the first wrote.
    public func open(poolSize: Int = 3) async throws -> TestStore {
        switch kind {
        case .sqlite: try await SQLiteOrderStore.open(path: location)
        case .postgres: try await PostgresOrderStore.open(postgresSettings!, configuration: .init(poolSize: poolSize))
        }
    }

    /// Runs SQL behind the store's back. Returns whether the database accepted it.
    @discardableResult
    public func execute(_ sql: String) async -> Bool {
        switch kind {
        case .sqlite:
            let raw = RawSQLite(path: location)
            defer { raw.close() }
            return raw.execute(sql) == 0
        case .postgres:
            return (try? await RawPostgres.execute(sql, url: location)) != nil
        }
    }

    /// The first column of the first row of a query behind the store's back, as text.
    public func scalar(_ sql: String) async -> String? {
        switch kind {
        case .sqlite:
            let raw = RawSQLite(path: location)
            defer { raw.close() }
            return raw.scalar(sql)
        case .postgres:
            return try? await RawPostgres.scalar(sql, url: location)
        }
    }

    public func remove() async {
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
        if let schema, let url = server {
            _ = try? await RawPostgres.execute("DROP SCHEMA " + schema + " CASCADE", url: url)
        }
    }
}

public enum TestDatabaseError: Error, CustomStringConvertible {
    case noServer
    case failed(String)

    public var description: String {
        switch self {
        case .noServer: "WXPAY_TEST_POSTGRES is not set (scripts/test starts a server and sets it)"
        case .failed(let message): message
        }
    }
}

/// Opens a store on a fresh database of `kind`, runs `body`, and closes the store and removes the
/// database whether or not `body` throws.
public func withStore(_ kind: StoreKind, poolSize: Int = 3, _ body: (TestStore, TestDatabase) async throws -> Void)
    async throws
{
    let database = try await TestDatabase(kind)
    do {
        let store = try await database.open(poolSize: poolSize)
        do {
            try await body(store, database)
            await store.close()
        } catch {
            await store.close()
            throw error
        }
    } catch {
        await database.remove()
        throw error
    }
    await database.remove()
}

extension TestDatabase {
    /// The number of rows of every table the store made (found in the schema, so a table a later
    /// migration adds is counted too), read behind the store's back.
    public func tableRowCounts() async -> [String: Int] {
        switch kind {
        case .sqlite:
            let raw = RawSQLite(path: location)
            defer { raw.close() }
            var counts: [String: Int] = [:]
            for table in raw.column("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") {
                let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                counts[table] = raw.scalar("SELECT COUNT(*) FROM \(quoted)").flatMap { Int($0) } ?? -1
            }
            return counts
        case .postgres:
            guard let schema,
                let tables = try? await RawPostgres.query(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = '\(schema)'", url: location)
            else { return [:] }
            var counts: [String: Int] = [:]
            for row in tables {
                guard let table = row.first ?? nil else { continue }
                let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                let count = try? await RawPostgres.scalar("SELECT COUNT(*) FROM \(quoted)", url: location)
                counts[table] = (count ?? nil).flatMap { Int($0) } ?? -1
            }
            return counts
        }
    }
}

extension OrderStore {
    /// The order's outbox events but `entitlement.changed`, which the doors write beside a paid
    /// or refunded order of a user's course or membership (EntitlementEventTests covers those):
    /// what a test of the order's own announcements counts.
    public func orderOutboxEvents(_ outTradeNo: String) async throws(StorageError) -> [OutboxEvent] {
        try await outboxEvents(outTradeNo).filter { $0.type != "entitlement.changed" }
    }
}
