// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore: ConsoleStore {
    /// Migration 4, with the audit log (SQLiteOrderStore+Audit.swift): console sessions, failed
    /// logins and locks, and the index the console's date-ordered search walks.
    static let consoleSchema: SQL = """
        CREATE TABLE console_sessions (
            id TEXT PRIMARY KEY NOT NULL,
            username TEXT NOT NULL,
            credential_stamp TEXT NOT NULL,
            csrf_token TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            last_seen_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            address TEXT
        ) STRICT;
        CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);
        CREATE INDEX console_sessions_by_last_seen ON console_sessions (last_seen_at);

        CREATE TABLE console_login_failures (
            username TEXT NOT NULL,
            at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX console_login_failures_by_user ON console_login_failures (username, at);
        CREATE INDEX console_login_failures_by_time ON console_login_failures (at);

        CREATE TABLE console_login_locks (
            username TEXT PRIMARY KEY NOT NULL,
            locked_until INTEGER NOT NULL
        ) STRICT;

        CREATE INDEX orders_by_created_at ON orders (created_at, out_trade_no);
        """

    public func createSession(_ session: ConsoleSession) async throws(StorageError) {
        try session.validate()
        try await write { db throws(StorageError) in
            let inserted = try db.run(
                "INSERT INTO console_sessions (" + ConsoleSession.columns
                    + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING", session.id, session.username, session.credentialStamp, session.csrfToken, session.createdAt,
                session.lastSeenAt, session.expiresAt, session.address)
            guard inserted == 1 else { throw .invalidArgument("a session with this id exists") }
        }
    }

    public func session(id: String) async throws(StorageError) -> ConsoleSession? {
        try StoreText.validate(id)
        return try await read { db throws(StorageError) in
            try db.row("SELECT " + ConsoleSession.columns + " FROM console_sessions WHERE id = ?", id,
                       decode: ConsoleSession.init(row:))
        }
    }

    public func touchSession(id: String, at: Date) async throws(StorageError) -> Bool {
        try StoreText.validate(id)
        return try await write { db throws(StorageError) in
            try db.run("UPDATE console_sessions SET last_seen_at = MAX(last_seen_at, ?1) WHERE id = ?2", at, id) == 1
        }
    }

    public func deleteSession(id: String) async throws(StorageError) -> Bool {
        try StoreText.validate(id)
        return try await write { db throws(StorageError) in
            try db.run("DELETE FROM console_sessions WHERE id = ?", id) == 1
        }
    }

    public func purgeSessions(now: Date, idleBefore: Date) async throws(StorageError) -> Int {
        try await write { db throws(StorageError) in
            try db.run("DELETE FROM console_sessions WHERE expires_at <= ?1 OR last_seen_at < ?2", now, idleBefore)
        }
    }

    /// Migration 6: failed logins and locks by name and address (a flood from one address no longer
    /// locks the name everywhere), and the addresses each name signed in from. The old tables hold
    /// at most 15 minutes of failures and locks, so they are replaced, not converted.
    static let consoleLoginsByAddressSchema: SQL = """
        DROP TABLE console_login_failures;
        DROP TABLE console_login_locks;

        CREATE TABLE console_login_failures (
            username TEXT NOT NULL,
            address TEXT NOT NULL,
            at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX console_login_failures_by_user ON console_login_failures (username, at);
        CREATE INDEX console_login_failures_by_source ON console_login_failures (username, address, at);
        CREATE INDEX console_login_failures_by_time ON console_login_failures (at);

        CREATE TABLE console_login_locks (
            username TEXT NOT NULL,
            address TEXT NOT NULL,
            locked_until INTEGER NOT NULL,
            PRIMARY KEY (username, address)
        ) STRICT;

        CREATE TABLE console_login_addresses (
            username TEXT NOT NULL,
            address TEXT NOT NULL,
            last_success_at INTEGER NOT NULL,
            PRIMARY KEY (username, address)
        ) STRICT;
        CREATE INDEX console_login_addresses_by_time ON console_login_addresses (last_success_at);
        """

    public func loginState(username: String, address: String, at: Date, failuresSince: Date, knownSince: Date)
        async throws(StorageError) -> LoginState
    {
        try StoreText.validate(username, address)
        return try await read { db throws(StorageError) in
            let lockedUntil = try db.row(
                "SELECT locked_until FROM console_login_locks WHERE username = ? AND address = ? AND locked_until > ?",
                username, address, at, decode: { row throws(StorageError) in try row.date(0) })
            let failures = try db.row(
                "SELECT COUNT(*) FROM console_login_failures WHERE username = ? AND at > ?", username, failuresSince,
                decode: { row throws(StorageError) in try row.int(0) }) ?? 0
            let locks = try db.row(
                "SELECT COUNT(*) FROM console_login_locks WHERE username = ? AND locked_until > ?", username, at,
                decode: { row throws(StorageError) in try row.int(0) }) ?? 0
            let known = try db.row(
                "SELECT 1 FROM console_login_addresses WHERE username = ? AND address = ? AND last_success_at > ?",
                username, address, knownSince, decode: { row throws(StorageError) in try row.int(0) }) != nil
            return LoginState(lockedUntil: lockedUntil, nameFailures: failures, lockedAddresses: locks, knownAddress: known)
        }
    }

    public func recordLoginFailure(username: String, address: String, at: Date, window: TimeInterval, threshold: Int,
                                   lockFor: TimeInterval) async throws(StorageError) -> Date? {
        try StoreText.validate(username, address)
        let windowStart = at.addingTimeInterval(-window)
        return try await write { db throws(StorageError) in
            // Old failures of every name go here, so the table holds one window's worth at most.
            try db.run("DELETE FROM console_login_failures WHERE at <= ?", windowStart)
            try db.run("DELETE FROM console_login_locks WHERE locked_until <= ?", at)
            try db.run("INSERT INTO console_login_failures (username, address, at) VALUES (?, ?, ?)", username, address, at)
            let failures = try db.row(
                "SELECT COUNT(*) FROM console_login_failures WHERE username = ? AND address = ? AND at > ?", username,
                address, windowStart, decode: { row throws(StorageError) in try row.int(0) }) ?? 0
            guard failures >= threshold else { return nil }
            let until = at.addingTimeInterval(lockFor)
            try db.run(
                """
                INSERT INTO console_login_locks (username, address, locked_until) VALUES (?1, ?2, ?3)
                ON CONFLICT (username, address) DO UPDATE SET locked_until = MAX(locked_until, ?3)
                """, username, address, until)
            // The pair's count starts again; the name's other failures still count towards its pace.
            try db.run("DELETE FROM console_login_failures WHERE username = ? AND address = ?", username, address)
            return until
        }
    }

    public func recordLoginSuccess(username: String, address: String, at: Date, forgetBefore: Date)
        async throws(StorageError)
    {
        try StoreText.validate(username, address)
        _ = try await write { db throws(StorageError) in
            try db.run("DELETE FROM console_login_failures WHERE username = ? AND address = ?", username, address)
            try db.run("DELETE FROM console_login_addresses WHERE last_success_at <= ?", forgetBefore)
            try db.run(
                """
                INSERT INTO console_login_addresses (username, address, last_success_at) VALUES (?1, ?2, ?3)
                ON CONFLICT (username, address) DO UPDATE SET last_success_at = MAX(last_success_at, ?3)
                """, username, address, at)
        }
    }

    public func searchOrders(_ search: OrderSearch, limit: Int, after: OrderPageKey?) async throws(StorageError)
        -> OrderPage
    {
        guard limit > 0 else { return OrderPage(orders: [], next: nil) }
        try search.validate()
        // No filter is a NULL test: the bounds default to the widest ones, so the created_at
        // index serves the range and the order, and a page stops after `limit + 1` rows.
        let states = search.statesSearched.jsonArray
        let from = search.createdFrom ?? Date(timeIntervalSince1970: 0)
        let before = search.createdBefore ?? Date.distantFuture
        let cursorTime = after?.createdAt ?? Date.distantFuture
        let cursorNumber = after?.outTradeNo ?? ""
        // `(created_at, out_trade_no) < (t, o)` with the default cursor (far future, "") holds for
        // every row with created_at before the far future: all of them.
        let flags = search.flags.isEmpty ? nil : "[" + search.flags.map { "\"\($0.rawValue)\"" }.sorted().joined(separator: ",") + "]"
        // Flags are stored sorted and comma-separated: a flag matches when ",<flag>," is in ",<flags>,".
        let flagged: SQL = " AND flags <> '' AND EXISTS (SELECT 1 FROM json_each(?8) WHERE instr(',' || flags || ',', ',' || value || ',') > 0)"
        let filters: SQL = """
             AND state IN (SELECT value FROM json_each(?2)) AND created_at >= ?3 AND created_at < ?4
             AND (created_at < ?5 OR (created_at = ?5 AND out_trade_no < ?6))
             AND (?9 IS NULL OR app = ?9)
             AND (?10 IS NULL OR trade_type = ?10 OR (?10 = 'APP' AND trade_type IS NULL AND channel = 'wechat'))
             AND (?11 IS NULL OR user_id = ?11)
            """
        let order: SQL = " ORDER BY created_at DESC, out_trade_no DESC LIMIT ?7"
        let rows = try await read { db throws(StorageError) in
            if let identifier = search.identifier {
                // Each identifier has its own index; the union is a handful of rows for any but a
                // user with many orders, and those come out paged like every other search.
                try db.rows(
                    "SELECT " + OrderRecord.columns + """
                         FROM orders WHERE out_trade_no IN (
                            SELECT out_trade_no FROM orders WHERE out_trade_no = ?1
                            UNION SELECT out_trade_no FROM orders WHERE transaction_id = ?1
                            UNION SELECT out_trade_no FROM orders WHERE user_id = ?1
                            UNION SELECT out_trade_no FROM refunds WHERE out_refund_no = ?1
                            UNION SELECT out_trade_no FROM orders WHERE apple_transaction_id = ?1
                            UNION SELECT out_trade_no FROM orders WHERE original_transaction_id = ?1
                            UNION SELECT out_trade_no FROM orders WHERE app_account_token = lower(?1))
                        """ + filters + (flags == nil ? " AND ?8 IS NULL" : flagged) + order,
                    identifier, states, from, before, cursorTime, cursorNumber, limit + 1, flags, search.app, search.tradeType,
                    search.userID, decode: OrderRecord.init(row:))
            } else if let userID = search.userID {
                // The user's own index serves a user's orders narrowed by the filters.
                try db.rows(
                    "SELECT " + OrderRecord.columns + " FROM orders WHERE user_id = ?11 AND ?1 IS NULL"
                        + (flags == nil ? " AND ?8 IS NULL" : flagged) + filters + order,
                    Optional<String>.none, states, from, before, cursorTime, cursorNumber, limit + 1, flags,
                    search.app, search.tradeType, userID, decode: OrderRecord.init(row:))
            } else if let flags {
                // The flagged orders' own partial index serves the attention list.
                try db.rows(
                    "SELECT " + OrderRecord.columns + " FROM orders WHERE ?1 IS NULL" + flagged + filters + order,
                    Optional<String>.none, states, from, before, cursorTime, cursorNumber, limit + 1, flags,
                    search.app, search.tradeType, search.userID, decode: OrderRecord.init(row:))
            } else {
                try db.rows(
                    "SELECT " + OrderRecord.columns + " FROM orders WHERE ?1 IS NULL AND ?8 IS NULL" + filters + order,
                    Optional<String>.none, states, from, before, cursorTime, cursorNumber, limit + 1, flags,
                    search.app, search.tradeType, search.userID, decode: OrderRecord.init(row:))
            }
        }
        return OrderPage(rows: rows, limit: limit)
    }

    public func handleAttention(_ outTradeNo: String, flags: Set<OrderFlag>, event: NewOrderEvent, at: Date)
        async throws(StorageError) -> (order: OrderRecord, changed: Bool)?
    {
        try StoreText.validate(outTradeNo)
        try event.validate()
        return try await write { db throws(StorageError) in
            guard let order = try Self.order(outTradeNo, on: db) else { return nil }
            guard let handled = OrderRecord.flags(order.flags, handling: flags) else { return (order, false) }
            let updated = try Self.setFlags(handled, of: outTradeNo, at: at, on: db)
            try Self.appendEvent(event, to: outTradeNo, on: db)
            return (updated, true)
        }
    }
}
