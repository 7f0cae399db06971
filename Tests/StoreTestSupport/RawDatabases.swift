// SPDX-License-Identifier: Apache-2.0
import CLibPQ
import CSQLite
import Foundation

/// A second, independent connection to a SQLite file: to look behind the store's back.
public final class RawSQLite {
    private var handle: OpaquePointer?

    public init(path: String) {
        sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, nil)
        sqlite3_busy_timeout(handle, 5000)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// The primary result code of running `sql`.
    @discardableResult
    public func execute(_ sql: String) -> Int32 {
        sqlite3_exec(handle, sql, nil, nil, nil) & 0xFF
    }

    /// The first column of the first row, as text.
    public func scalar(_ sql: String) -> String? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else { return nil }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return nil }
        return String(cString: text)
    }

    /// The first column of every row, as text.
    public func column(_ sql: String) -> [String] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else { return [] }
        defer { sqlite3_finalize(statement) }
        var values: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            if let text = sqlite3_column_text(statement, 0) { values.append(String(cString: text)) }
        }
        return values
    }

    public func close() {
        sqlite3_close_v2(handle)
        handle = nil
    }
}

/// One-off SQL on the test server, behind the store's back, with blocking libpq on a thread of its
/// own (never on the cooperative pool).
public enum RawPostgres {
    /// Runs `sql` (one or more statements, text protocol); throws the server's message on failure.
    public static func execute(_ sql: String, url: String) async throws {
        _ = try await query(sql, url: url)
    }

    /// The first column of the first row of the last statement, as text.
    public static func scalar(_ sql: String, url: String) async throws -> String? {
        try await query(sql, url: url).first?.first ?? nil
    }

    /// Every row of the last statement, as text (nil for NULL).
    public static func query(_ sql: String, url: String) async throws -> [[String?]] {
        let result: Result<[[String?]], TestDatabaseError> = await onThread {
            guard let connection = PQconnectdb(url) else { return .failure(.failed("no connection")) }
            defer { PQfinish(connection) }
            PQsetNoticeProcessor(connection, { _, _ in }, nil)
            guard PQstatus(connection) == CONNECTION_OK else {
                return .failure(.failed(String(cString: PQerrorMessage(connection))))
            }
            guard let result = PQexec(connection, sql) else { return .failure(.failed("no result")) }
            defer { PQclear(result) }
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
                var rows: [[String?]] = []
                for row in 0..<PQntuples(result) {
                    rows.append((0..<PQnfields(result)).map { column in
                        PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
                    })
                }
                return .success(rows)
            default:
                return .failure(.failed(String(cString: PQresultErrorMessage(result))))
            }
        }
        return try result.get()
    }
}

/// Runs blocking work on a thread of its own and returns its result.
public func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: work()) }
    }
}
