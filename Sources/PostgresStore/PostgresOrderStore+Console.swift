// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

/// The console's sessions, failed logins and order search on PostgreSQL: what several instances
/// behind one load balancer share, so a browser signed in on one is signed in on all, and five
/// failures spread over them lock the name as surely as five on one.
///
/// Each group-committed write locks rows of one session (`s:`) or one name (`l:`) only, as the
/// pool's ordering asks; the sweeps that delete many rows (old failures, ended sessions) run in
/// transactions of their own.
extension PostgresOrderStore: ConsoleStore {
    /// Part of migration 3, with the audit log (PostgresOrderStore+Audit.swift).
    static let consoleSchema: [SQL] = [
        """
        CREATE TABLE console_sessions (
            id text PRIMARY KEY,
            username text NOT NULL,
            credential_stamp text NOT NULL,
            csrf_token text NOT NULL,
            created_at timestamptz NOT NULL,
            last_seen_at timestamptz NOT NULL,
            expires_at timestamptz NOT NULL,
            address text
        )
        """,
        "CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at)",
        "CREATE INDEX console_sessions_by_last_seen ON console_sessions (last_seen_at)",
        """
        CREATE TABLE console_login_failures (
            username text NOT NULL,
            at timestamptz NOT NULL
        )
        """,
        "CREATE INDEX console_login_failures_by_user ON console_login_failures (username, at)",
        "CREATE INDEX console_login_failures_by_time ON console_login_failures (at)",
        """
        CREATE TABLE console_login_locks (
            username text PRIMARY KEY,
            locked_until timestamptz NOT NULL
        )
        """,
        // The console's search walks every order newest first (orders_by_state_created_at serves
        // a state filter; this one the search without).
        "CREATE INDEX orders_by_created_at ON orders (created_at, out_trade_no COLLATE \"C\")",
    ]

    static func sessionKey(_ id: String) -> String { "s:" + id }
    static func loginKey(_ username: String) -> String { "l:" + username }

    public func createSession(_ session: ConsoleSession) async throws(StorageError) {
        try session.validate()
        try await write(key: Self.sessionKey(session.id)) { db throws(StorageError) in
            let inserted = try db.run(PGQuery(
                "INSERT INTO console_sessions (" + ConsoleSession.columns + """
                    ) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING
                    """,
                session.id, session.username, session.credentialStamp, session.csrfToken, session.createdAt,
                session.lastSeenAt, session.expiresAt, session.address)).affectedRows
            guard inserted == 1 else { throw .invalidArgument("a session with this id exists") }
            return ((), nil)
        }
    }

    public func session(id: String) async throws(StorageError) -> ConsoleSession? {
        try StoreText.validate(id)
        return try await read { db throws(StorageError) in
            try db.run(PGQuery("SELECT " + ConsoleSession.columns + " FROM console_sessions WHERE id = $1", id))
                .first(ConsoleSession.init(row:))
        }
    }

    public func touchSession(id: String, at: Date) async throws(StorageError) -> Bool {
        try StoreText.validate(id)
        return try await write(key: Self.sessionKey(id)) { db throws(StorageError) in
            let touched = try db.run(PGQuery(
                "UPDATE console_sessions SET last_seen_at = GREATEST(last_seen_at, $1) WHERE id = $2", at, id)).affectedRows
            return (touched == 1, nil)
        }
    }

    public func deleteSession(id: String) async throws(StorageError) -> Bool {
        try StoreText.validate(id)
        return try await write(key: Self.sessionKey(id)) { db throws(StorageError) in
            (try db.run(PGQuery("DELETE FROM console_sessions WHERE id = $1", id)).affectedRows == 1, nil)
        }
    }

    public func purgeSessions(now: Date, idleBefore: Date) async throws(StorageError) -> Int {
        try await exclusive { db throws(StorageError) in
            try db.run(PGQuery("DELETE FROM console_sessions WHERE expires_at <= $1 OR last_seen_at < $2", now, idleBefore))
                .affectedRows
        }
    }

    /// Migration 7: failed logins and locks by name and address, and the addresses each name
    /// signed in from (SQLiteOrderStore+Console.swift says why); amcheck covers the new table.
    static let consoleLoginsByAddressSchema: [SQL] = [
        "DROP TABLE console_login_failures",
        "DROP TABLE console_login_locks",
        """
        CREATE TABLE console_login_failures (
            username text NOT NULL,
            address text NOT NULL,
            at timestamptz NOT NULL
        )
        """,
        "CREATE INDEX console_login_failures_by_user ON console_login_failures (username, at)",
        "CREATE INDEX console_login_failures_by_source ON console_login_failures (username, address, at)",
        "CREATE INDEX console_login_failures_by_time ON console_login_failures (at)",
        """
        CREATE TABLE console_login_locks (
            username text NOT NULL,
            address text NOT NULL,
            locked_until timestamptz NOT NULL,
            PRIMARY KEY (username, address)
        )
        """,
        """
        CREATE TABLE console_login_addresses (
            username text NOT NULL,
            address text NOT NULL,
            last_success_at timestamptz NOT NULL,
            PRIMARY KEY (username, address)
        )
        """,
        "CREATE INDEX console_login_addresses_by_time ON console_login_addresses (last_success_at)",
    ]

    public func loginState(username: String, address: String, at: Date, failuresSince: Date, knownSince: Date)
        async throws(StorageError) -> LoginState
    {
        try StoreText.validate(username, address)
        return try await read { db throws(StorageError) in
            let results = try db.run([
                PGQuery("""
                    SELECT locked_until FROM console_login_locks WHERE username = $1 AND address = $2 AND locked_until > $3
                    """, username, address, at),
                PGQuery("SELECT COUNT(*) FROM console_login_failures WHERE username = $1 AND at > $2", username, failuresSince),
                PGQuery("""
                    SELECT 1 FROM console_login_addresses WHERE username = $1 AND address = $2 AND last_success_at > $3
                    """, username, address, knownSince),
                PGQuery("SELECT COUNT(*) FROM console_login_locks WHERE username = $1 AND locked_until > $2", username, at),
            ])
            return LoginState(
                lockedUntil: try results[0].first { row throws(StorageError) in try row.date(0) },
                nameFailures: try results[1].first { row throws(StorageError) in try row.int(0) } ?? 0,
                lockedAddresses: try results[3].first { row throws(StorageError) in try row.int(0) } ?? 0,
                knownAddress: try results[2].first { _ throws(StorageError) in true } ?? false)
        }
    }

    public func recordLoginFailure(username: String, address: String, at: Date, window: TimeInterval, threshold: Int,
                                   lockFor: TimeInterval) async throws(StorageError) -> Date? {
        try StoreText.validate(username, address)
        let windowStart = at.addingTimeInterval(-window)
        let until = at.addingTimeInterval(lockFor)
        let locked = try await transaction { db throws(StorageError) in
            // The pair's lock row, made if need be and locked first: attempts at one name from one
            // address, on every instance, are counted one after the other, so the fifth is seen
            // as the fifth once.
            let results = try db.run([
                PGQuery("""
                    INSERT INTO console_login_locks (username, address, locked_until) VALUES ($1, $2, '-infinity')
                    ON CONFLICT (username, address) DO UPDATE SET username = EXCLUDED.username
                    """, username, address),
                PGQuery("DELETE FROM console_login_failures WHERE username = $1 AND address = $2 AND at <= $3",
                        username, address, windowStart),
                PGQuery("INSERT INTO console_login_failures (username, address, at) VALUES ($1, $2, $3)", username, address, at),
                PGQuery("SELECT COUNT(*) FROM console_login_failures WHERE username = $1 AND address = $2 AND at > $3",
                        username, address, windowStart),
            ])
            let failures = try results[3].first { row throws(StorageError) in try row.int(0) } ?? 0
            guard failures >= threshold else { return (nil as Date?, nil) }
            _ = try db.run([
                PGQuery("""
                    UPDATE console_login_locks SET locked_until = GREATEST(locked_until, $3)
                    WHERE username = $1 AND address = $2
                    """, username, address, until),
                // The pair's count starts again; the name's other failures still count towards its pace.
                PGQuery("DELETE FROM console_login_failures WHERE username = $1 AND address = $2", username, address),
            ])
            return (until, nil)
        }
        // Every name's old failures and ended locks, so the tables hold one window's worth at most.
        try await exclusive { db throws(StorageError) in
            _ = try db.run([
                PGQuery("DELETE FROM console_login_failures WHERE at <= $1", windowStart),
                PGQuery("DELETE FROM console_login_locks WHERE locked_until <= $1", at),
            ])
        }
        return locked
    }

    public func recordLoginSuccess(username: String, address: String, at: Date, forgetBefore: Date)
        async throws(StorageError)
    {
        try StoreText.validate(username, address)
        try await write(key: Self.loginKey(username)) { db throws(StorageError) in
            _ = try db.run([
                PGQuery("DELETE FROM console_login_failures WHERE username = $1 AND address = $2", username, address),
                PGQuery("""
                    INSERT INTO console_login_addresses (username, address, last_success_at) VALUES ($1, $2, $3)
                    ON CONFLICT (username, address) DO UPDATE
                        SET last_success_at = GREATEST(console_login_addresses.last_success_at, $3)
                    """, username, address, at),
            ])
            return ((), nil)
        }
        // Addresses of every name not used for a long time, in a transaction of its own.
        try await exclusive { db throws(StorageError) in
            _ = try db.run(PGQuery("DELETE FROM console_login_addresses WHERE last_success_at <= $1", forgetBefore))
        }
    }

    public func searchOrders(_ search: OrderSearch, limit: Int, after: OrderPageKey?) async throws(StorageError)
        -> OrderPage
    {
        guard limit > 0 else { return OrderPage(orders: [], next: nil) }
        try search.validate()
        let states = search.statesSearched
        // Absent bounds and cursor are NULL tests, so one statement serves every search; the order
        // is the one `orders(userID:…)` pages by (out_trade_no compared bytewise, as SQLite does).
        let flags: [String]? = search.flags.isEmpty ? nil : search.flags.map(\.rawValue).sorted()
        let filters: SQL = """
             AND state = ANY ($2) AND ($3::timestamptz IS NULL OR created_at >= $3)
             AND ($4::timestamptz IS NULL OR created_at < $4)
             AND ($5::timestamptz IS NULL OR created_at < $5 OR (created_at = $5 AND out_trade_no COLLATE "C" < $6))
             AND ($8::text[] IS NULL OR (flags <> '' AND string_to_array(flags, ',') && $8::text[]))
             AND ($9::text IS NULL OR app = $9)
             AND ($10::text IS NULL OR trade_type = $10 OR ($10 = 'APP' AND trade_type IS NULL AND channel = 'wechat'))
             AND ($11::text IS NULL OR user_id = $11)
             ORDER BY created_at DESC, out_trade_no COLLATE "C" DESC LIMIT $7
            """
        let rows = try await read { db throws(StorageError) in
            if let identifier = search.identifier {
                try db.run(PGQuery(
                    "SELECT " + OrderRecord.columns + """
                         FROM orders WHERE out_trade_no IN (
                            SELECT out_trade_no FROM orders WHERE out_trade_no = $1
                            UNION SELECT out_trade_no FROM orders WHERE transaction_id = $1
                            UNION SELECT out_trade_no FROM orders WHERE user_id = $1
                            UNION SELECT out_trade_no FROM refunds WHERE out_refund_no = $1
                            UNION SELECT out_trade_no FROM orders WHERE apple_transaction_id = $1
                            UNION SELECT out_trade_no FROM orders WHERE original_transaction_id = $1
                            UNION SELECT out_trade_no FROM orders WHERE app_account_token = lower($1))
                        """ + filters,
                    identifier, states, search.createdFrom, search.createdBefore, after?.createdAt, after?.outTradeNo ?? "",
                    limit + 1, flags, search.app, search.tradeType, search.userID)).rows(OrderRecord.init(row:))
            } else {
                // With flags, `flags <> ''` lets the flagged orders' partial index serve the attention list.
                try db.run(PGQuery(
                    "SELECT " + OrderRecord.columns + " FROM orders WHERE $1::text IS NULL"
                        + (flags == nil ? "" : " AND flags <> ''") + (search.userID == nil ? "" : " AND user_id = $11") + filters,
                    Optional<String>.none, states, search.createdFrom, search.createdBefore, after?.createdAt,
                    after?.outTradeNo ?? "", limit + 1, flags, search.app, search.tradeType, search.userID)).rows(OrderRecord.init(row:))
            }
        }
        return OrderPage(rows: rows, limit: limit)
    }

    public func handleAttention(_ outTradeNo: String, flags: Set<OrderFlag>, event: NewOrderEvent, at: Date)
        async throws(StorageError) -> (order: OrderRecord, changed: Bool)?
    {
        try StoreText.validate(outTradeNo)
        try event.validate()
        return try await write(key: Self.orderKey(outTradeNo)) { db throws(StorageError) in
            guard let order = try db.run(Self.lockOrder(outTradeNo)).first(OrderRecord.init(row:)) else { return (nil, nil) }
            guard let handled = OrderRecord.flags(order.flags, handling: flags) else { return ((order, false), nil) }
            let updated = try Self.setFlags(handled, of: outTradeNo, at: at, on: db)
            _ = try db.run(Self.insertEvent(event, of: outTradeNo))
            return ((updated, true), nil)
        }
    }
}
