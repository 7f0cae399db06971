// SPDX-License-Identifier: Apache-2.0
import Foundation

/// What the support console keeps in the database, so that several gateway instances on one
/// database share it: login sessions, failed-login counts (the lockout, by name and address), the addresses names
/// signed in from, and the order search.
///
/// The store keeps facts; the rules (how long a session lives, how many failures lock a name) are
/// the console's, passed in. Every method is atomic; writes return only once durable.
/// Implementations: `SQLiteOrderStore`, `PostgresOrderStore`.
public protocol ConsoleStore: Sendable {
    // MARK: Sessions

    /// Stores a new session. Throws `invalidArgument` if a session with its id exists.
    func createSession(_ session: ConsoleSession) async throws(StorageError)

    /// The session with this id (the SHA-256 of its token), or `nil`.
    func session(id: String) async throws(StorageError) -> ConsoleSession?

    /// Moves the session's `lastSeenAt` to `at` (never backwards). Returns whether it exists.
    func touchSession(id: String, at: Date) async throws(StorageError) -> Bool

    /// Ends a session (logout). Returns whether it existed.
    func deleteSession(id: String) async throws(StorageError) -> Bool

    /// Removes sessions past their absolute expiry at `now` or last seen before `idleBefore`.
    /// Returns how many went.
    func purgeSessions(now: Date, idleBefore: Date) async throws(StorageError) -> Int

    // MARK: Failed logins

    /// Where a login attempt for `username` from `address` stands at `at`: the lock on that name
    /// from that address, if any; how many failures the name had from every address after
    /// `failuresSince` and from how many addresses it is locked at `at` (a lock's own failures are
    /// forgotten when it is made); and whether the name signed in from this address after `knownSince`.
    func loginState(username: String, address: String, at: Date, failuresSince: Date, knownSince: Date)
        async throws(StorageError) -> LoginState

    /// Records a failed login for `username` from `address` at `at`. When this makes `threshold`
    /// failures of that name from that address within `window` seconds, the pair is locked until
    /// `at + lockFor` and its count starts again (other addresses are not). Failures older than
    /// `window` are forgotten. Returns the lock's end when the pair is locked.
    func recordLoginFailure(username: String, address: String, at: Date, window: TimeInterval, threshold: Int,
                            lockFor: TimeInterval) async throws(StorageError) -> Date?

    /// A successful login: forgets the failures of `username` from `address` and remembers the
    /// address as one the name signs in from (addresses last used before `forgetBefore` are
    /// forgotten).
    func recordLoginSuccess(username: String, address: String, at: Date, forgetBefore: Date) async throws(StorageError)

    // MARK: Search

    /// A page of the orders `search` matches, newest first (`createdAt` descending, then
    /// `outTradeNo` descending), after `after`: the same keyset pages as `orders(userID:…)`.
    func searchOrders(_ search: OrderSearch, limit: Int, after: OrderPageKey?) async throws(StorageError) -> OrderPage

    // MARK: The attention list

    /// Support marked the order's attention flags `flags` handled: in one transaction, each of
    /// them the order carries is replaced by its `handled.` marker (`OrderFlag.handled`), which
    /// takes the order off the attention list while keeping what it was, and `event` is appended.
    /// Returns the order afterwards and whether anything changed (nothing, and no event, when it
    /// carries none of `flags`), or nil for an unknown order.
    func handleAttention(_ outTradeNo: String, flags: Set<OrderFlag>, event: NewOrderEvent, at: Date)
        async throws(StorageError) -> (order: OrderRecord, changed: Bool)?
}

/// A console login session. The token the browser holds is never stored: `id` is its SHA-256, so
/// a copy of the database does not hand out live sessions.
public struct ConsoleSession: Sendable, Hashable {
    /// The lowercase hex SHA-256 of the session token.
    public var id: String
    public var username: String
    /// A digest of the user's password entry when the session began: a changed password (or a
    /// re-created user) no longer matches, and the session ends on every instance at once.
    public var credentialStamp: String
    /// The token every POST of this session must carry.
    public var csrfToken: String
    public var createdAt: Date
    public var lastSeenAt: Date
    /// The absolute end, whatever the activity.
    public var expiresAt: Date
    /// Where the login came from.
    public var address: String?

    public init(id: String, username: String, credentialStamp: String, csrfToken: String, createdAt: Date,
                lastSeenAt: Date, expiresAt: Date, address: String?) {
        self.id = id
        self.username = username
        self.credentialStamp = credentialStamp
        self.csrfToken = csrfToken
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.expiresAt = expiresAt
        self.address = address
    }
}

/// What the console's search box and filters ask for.
public struct OrderSearch: Sendable, Hashable {
    /// Matches an order by its out_trade_no, WeChat transaction_id, user_id, the out_refund_no
    /// of one of its refunds, or its App Store ids (apple_transaction_id, original_transaction_id,
    /// app_account_token). Nil: every order (within the filters).
    public var identifier: String?
    /// Only orders in these states; empty: any state.
    public var states: Set<OrderState>
    /// Only orders created at or after this time.
    public var createdFrom: Date?
    /// Only orders created before this time.
    public var createdBefore: Date?
    /// Only orders carrying at least one of these flags; empty: any. The attention list is
    /// `OrderSearch(flags: OrderFlag.needingAttention)`.
    public var flags: Set<OrderFlag>
    /// Only orders created through the merchant's app of this name (WXPAY_APPS); nil: any.
    public var app: String?
    /// Only WeChat orders of this trade type (`APP`, `JSAPI`, `NATIVE`, `MWEB`; `APP` includes the
    /// WeChat orders made before trade types were recorded); nil: any, iOS orders included.
    public var tradeType: String?
    /// Only orders of this app user (`user_id`, exactly): support's `user_id` look-up narrowed by
    /// the filters above, where `identifier` would also match the other identifiers; nil: any.
    public var userID: String?

    public init(identifier: String? = nil, states: Set<OrderState> = [], createdFrom: Date? = nil,
                createdBefore: Date? = nil, flags: Set<OrderFlag> = [], app: String? = nil, tradeType: String? = nil,
                userID: String? = nil) {
        self.identifier = identifier
        self.userID = userID
        self.states = states
        self.createdFrom = createdFrom
        self.createdBefore = createdBefore
        self.flags = flags
        self.app = app
        self.tradeType = tradeType
    }
}

/// What `ConsoleStore.loginState` found.
public struct LoginState: Sendable, Hashable {
    /// The end of the lock on the name from this address, if it is locked.
    public var lockedUntil: Date?
    /// The name's failures from every address in the window asked about (not those that made a lock).
    public var nameFailures: Int
    /// The addresses the name is locked from now.
    public var lockedAddresses: Int
    /// Whether the name signed in from this address recently.
    public var knownAddress: Bool

    public init(lockedUntil: Date?, nameFailures: Int, lockedAddresses: Int = 0, knownAddress: Bool) {
        self.lockedUntil = lockedUntil
        self.nameFailures = nameFailures
        self.lockedAddresses = lockedAddresses
        self.knownAddress = knownAddress
    }
}

// What both stores share: the column list, its decoder, and the text no store keeps.

extension ConsoleSession {
    package static let columns: SQL = "id, username, credential_stamp, csrf_token, created_at, last_seen_at, expires_at, address"

    package init(row: some StoreRow) throws(StorageError) {
        self.init(
            id: try row.text(0), username: try row.text(1), credentialStamp: try row.text(2), csrfToken: try row.text(3),
            createdAt: try row.date(4), lastSeenAt: try row.date(5), expiresAt: try row.date(6),
            address: try row.optionalText(7))
    }

    package func validate() throws(StorageError) {
        try StoreText.validate(id, username, credentialStamp, csrfToken, address)
    }
}

extension OrderSearch {
    package func validate() throws(StorageError) {
        try StoreText.validate(identifier, app, tradeType, userID)
    }

    /// Whether `order` passes the app and trade-type filters, as the stores' search statement
    /// decides (for look-ups that find a handful of orders by other means and narrow them after).
    package func matchesChannel(_ order: OrderRecord) -> Bool {
        if let app, order.app != app { return false }
        guard let tradeType else { return true }
        return order.tradeType == tradeType || (tradeType == "APP" && order.tradeType == nil && order.channel == .wechat)
    }

    /// The states searched: the ones asked for, or every state.
    package var statesSearched: Set<OrderState> { states.isEmpty ? Set(OrderState.allCases) : states }
}

extension OrderStore where Self: ConsoleStore {
    /// The attention list is a search, so the stores' one search statement serves it.
    public func orders(flagged flags: Set<OrderFlag>, limit: Int, after: OrderPageKey?) async throws(StorageError)
        -> OrderPage
    {
        try await searchOrders(OrderSearch(flags: flags), limit: limit, after: after)
    }
}
