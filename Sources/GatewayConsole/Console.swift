// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Gateway
import Observability
import StorageCore
import Synchronization

/// The support console: accounts from the user file, sessions and failed logins in the database
/// (so several instances share them), and the pages (`GatewayAPI+Console.swift` routes them,
/// `ConsoleHandlers.swift` answers them, `ConsolePages.swift` renders them).
///
/// The rules: a session lasts 30 minutes without a request and 12 hours at most. Five failed
/// logins for one name from one address within 15 minutes lock that name *from that address* for
/// 15 minutes, whether or not the name exists: anyone can lock themselves out, nobody can lock out
/// `admin` at their desk. A name failing 20 times within 15 minutes from all addresses together is
/// paced (`LoginPace`: one password check every 3 s, the others waiting their turn), which slows a
/// campaign spread over many addresses without locking anyone: an address the name signed in from
/// within 30 days is not paced. An unknown name costs the same password check as a wrong
/// password, so neither the answer nor its time says which names exist.
public final class Console: Sendable {
    public static let idleTimeout: TimeInterval = 30 * 60
    public static let absoluteTimeout: TimeInterval = 12 * 3600
    public static let lockThreshold = 5
    public static let lockWindow: TimeInterval = 15 * 60
    public static let lockDuration: TimeInterval = 15 * 60
    /// Failures of one name from every address within `lockWindow` after which it is paced (an
    /// address locked from it counts as the `lockThreshold` failures that locked it).
    public static let paceThreshold = 20
    /// How long an address a name signed in from stays exempt from the pace.
    public static let knownAddressLifetime: TimeInterval = 30 * 86400
    /// A session's last-seen time is written at most this often (one write per request otherwise).
    static let touchInterval: TimeInterval = 30

    static let sessionCookie = "wxpay_console_session"
    static let loginCookie = "wxpay_console_login"
    static let languageCookie = "wxpay_console_lang"

    public let users: ConsoleUserDirectory
    let store: any ConsoleStore
    /// The flows the console is one more door to (recheck, redrive, refunds, the audit log).
    let services: GatewayServices
    let secureCookie: Bool
    let passwords: PasswordChecks
    let addresses: ClientAddressResolver
    let pace: LoginPace
    /// Checked instead of a real hash for a name nobody has: the same scrypt work, never a match.
    private let absentUser: PasswordHash
    let instruments: ConsoleInstruments

    public init(services: GatewayServices, users: ConsoleUserDirectory, passwords: PasswordChecks = PasswordChecks(),
                pace: LoginPace = LoginPace()) {
        self.users = users
        self.pace = pace
        store = services.context.store
        self.services = services
        secureCookie = services.configuration.console.secureCookie
        self.passwords = passwords
        addresses = ClientAddressResolver(trustedProxies: services.configuration.app.trustedProxies)
        absentUser = PasswordHash(unmatchable: .standard)
        instruments = ConsoleInstruments(services.metrics)
    }

    var now: Date { services.context.now() }
    /// The clock of sign-ins, sessions and lock-outs: the wall clock in demo mode, whose `now` can
    /// be moved (a moved clock must not sign support out); `now` everywhere else.
    var sessionNow: Date { services.context.tokenClock() }
    var logger: Logger { services.context.logger }

    // MARK: - Login

    enum LoginOutcome: Sendable {
        /// The browser gets `token` as its session cookie.
        case success(token: String, session: ConsoleSession, user: ConsoleUser)
        /// A wrong name or password: one answer for both.
        case refused
        /// Locked from this address until then (after `lockThreshold` failures in `lockWindow`);
        /// `now` when this attempt's failure started the lock (it was a password check; the ones
        /// after are not).
        case locked(until: Date, now: Bool)
        /// The name is paced and no turn came soon enough: try again after `retryAfter` seconds.
        case paced(retryAfter: Int)
        /// Too many password checks queued: try again shortly.
        case busy
    }

    func login(name rawName: String, password: String, address: String?) async throws(APIError) -> LoginOutcome {
        let name = Self.normalizedName(rawName)
        let source = address ?? "unknown"
        let at = sessionNow
        let state = try await storage { () throws(StorageError) in
            try await self.store.loginState(username: name, address: source, at: at,
                                            failuresSince: at.addingTimeInterval(-Self.lockWindow),
                                            knownSince: at.addingTimeInterval(-Self.knownAddressLifetime))
        }
        if let until = state.lockedUntil {
            instruments.locked.increment()
            return .locked(until: until, now: false)
        }
        // A lock forgets the failures that made it, so each one counts as those failures here.
        let nameFailures = state.nameFailures + state.lockedAddresses * Self.lockThreshold
        if nameFailures >= Self.paceThreshold && !state.knownAddress {
            switch pace.take(name) {
            case .wait(let wait):
                instruments.waitedTurn.increment()
                if wait > .zero { try? await Task.sleep(for: wait) }
            case .later(let seconds):
                instruments.paced.increment()
                return .paced(retryAfter: seconds)
            }
        }
        let user = ConsoleUser.isValidName(name) ? users.user(name) : nil
        guard let matched = await passwords.check(password, against: user?.password ?? absentUser) else {
            instruments.busy.increment()
            return .busy
        }
        instruments.passwordChecks.increment()
        guard matched, let user else {
            instruments.refused.increment()
            let until = try await storage { () throws(StorageError) in
                try await self.store.recordLoginFailure(username: name, address: source, at: self.sessionNow, window: Self.lockWindow,
                                                        threshold: Self.lockThreshold, lockFor: Self.lockDuration)
            }
            if let until {
                logger.warning("console login locked from one address after repeated failures",
                               ["username": name, "address": source])
                return .locked(until: until, now: true)
            }
            return .refused
        }
        let started = sessionNow
        let token = Base64.encode(RandomBytes.take(32), .urlUnpadded)
        let session = ConsoleSession(
            id: Self.sessionID(token), username: user.name, credentialStamp: user.credentialStamp,
            csrfToken: Base64.encode(RandomBytes.take(32), .urlUnpadded), createdAt: started, lastSeenAt: started,
            expiresAt: started.addingTimeInterval(Self.absoluteTimeout), address: address)
        try await storage { () throws(StorageError) in
            try await self.store.recordLoginSuccess(username: name, address: source, at: started,
                                                    forgetBefore: started.addingTimeInterval(-Self.knownAddressLifetime))
            _ = try await self.store.purgeSessions(now: started, idleBefore: started.addingTimeInterval(-Self.idleTimeout))
            try await self.store.createSession(session)
        }
        instruments.signedIn.increment()
        return .success(token: token, session: session, user: user)
    }

    // MARK: - Sessions

    /// A signed-in request: its session and the user as the file says now.
    struct SignedIn: Sendable {
        var session: ConsoleSession
        var user: ConsoleUser
        var address: String?
    }

    /// The session the request's cookie names, if it is still good: not past 12 hours, not idle
    /// for 30 minutes, and its user still in the file with the same password. With `writing`, a
    /// session that is no longer good is deleted and a good one's last-seen time kept current;
    /// without (a POST before its CSRF token is checked), nothing is written.
    func signedIn(_ cookies: [String: String], address: String?, writing: Bool) async throws(APIError) -> SignedIn? {
        guard let token = cookies[Self.sessionCookie], !token.isEmpty, token.utf8.count <= 128 else { return nil }
        let id = Self.sessionID(token)
        guard let session = try await storage({ () throws(StorageError) in try await self.store.session(id: id) }) else {
            return nil
        }
        let at = sessionNow
        let user = users.user(session.username)
        guard at < session.expiresAt, at.timeIntervalSince(session.lastSeenAt) < Self.idleTimeout, let user,
              user.credentialStamp == session.credentialStamp
        else {
            if writing { _ = try? await store.deleteSession(id: id) }
            return nil
        }
        let signedIn = SignedIn(session: session, user: user, address: address)
        return writing ? try await touch(signedIn) : signedIn
    }

    /// Keeps the session's last-seen time current (written at most every `touchInterval`, and
    /// never past the session's absolute end: the integrity check counts a session seen after it
    /// as one honoured too long).
    @discardableResult
    func touch(_ signedIn: SignedIn) async throws(APIError) -> SignedIn {
        let at = sessionNow
        guard at.timeIntervalSince(signedIn.session.lastSeenAt) >= Self.touchInterval, at < signedIn.session.expiresAt
        else { return signedIn }
        let id = signedIn.session.id
        _ = try await storage { () throws(StorageError) in try await self.store.touchSession(id: id, at: at) }
        var touched = signedIn
        touched.session.lastSeenAt = at
        return touched
    }

    func logout(_ session: ConsoleSession) async throws(APIError) {
        _ = try await storage { () throws(StorageError) in try await self.store.deleteSession(id: session.id) }
    }

    // MARK: - Helpers

    /// What the login form's name becomes: trimmed, lowercased, without control characters (no
    /// user name has one, and no store keeps U+0000), at most 64 bytes.
    static func normalizedName(_ name: String) -> String {
        let printable = String(String.UnicodeScalarView(name.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
        return firstBytes(64, of: printable.trimmingWhitespace().lowercased())
    }

    /// The name as typed, for the audit log of a refused login: not trimmed, not lowercased, its
    /// control characters kept for the log to show as U+FFFD (as every character free text
    /// refuses), so `admin\nroot` does not read `adminroot` nor `\u{85}admin` `admin`; at most 64
    /// bytes, with `…` where it was cut.
    static func typedName(_ name: String) -> String {
        name.utf8.count > 64 ? firstBytes(64, of: name) + "…" : name
    }

    /// At most `count` bytes of `text`, cut between characters.
    private static func firstBytes(_ count: Int, of text: String) -> String {
        var bytes = Array(text.utf8.prefix(count))
        while !bytes.isEmpty, String(bytes: bytes, encoding: .utf8) == nil { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The database's id of a session: the SHA-256 of its token, in hex.
    static func sessionID(_ token: String) -> String { Hex.encode(SHA256.hash(token)) }

    func storage<T>(_ operation: () async throws(StorageError) -> T) async throws(APIError) -> T {
        try await services.context.storage(operation)
    }

}

/// The console's metrics: sign-ins by outcome, the password checks they cost, and refusals.
struct ConsoleInstruments: Sendable {
    static let logins = Metric<Counter>(
        "wxpay_console_logins_total", help: "Console login attempts by outcome (ok, refused, locked, paced, busy).")
    static let loginsPaced = Metric<Counter>(
        "wxpay_console_logins_paced_total",
        help: "Console login attempts that waited their turn: their name failed too often from many addresses.")
    static let passwordChecks = Metric<Counter>(
        "wxpay_console_password_checks_total", help: "scrypt password checks of console logins (an unknown name costs one too).")
    static let refusals = Metric<Counter>(
        "wxpay_console_refusals_total", help: "Console requests refused, by reason (csrf, form, role, session).")

    let signedIn: Counter
    let refused: Counter
    let locked: Counter
    let paced: Counter
    let busy: Counter
    /// Attempts that waited their turn and then were checked.
    let waitedTurn: Counter
    let passwordChecks: Counter
    let noSession: Counter
    let csrfRefused: Counter
    /// POSTs whose body is no console form (`ConsoleHTTP.FormRefusal`).
    let formRefused: Counter
    let roleRefused: Counter

    init(_ registry: MetricsRegistry) {
        registry.describe(Self.logins, Self.loginsPaced, Self.passwordChecks, Self.refusals)
        signedIn = registry.makeCounter(Self.logins, ["outcome": "ok"])
        refused = registry.makeCounter(Self.logins, ["outcome": "refused"])
        locked = registry.makeCounter(Self.logins, ["outcome": "locked"])
        paced = registry.makeCounter(Self.logins, ["outcome": "paced"])
        busy = registry.makeCounter(Self.logins, ["outcome": "busy"])
        waitedTurn = registry.makeCounter(Self.loginsPaced)
        passwordChecks = registry.makeCounter(Self.passwordChecks)
        noSession = registry.makeCounter(Self.refusals, ["reason": "session"])
        csrfRefused = registry.makeCounter(Self.refusals, ["reason": "csrf"])
        formRefused = registry.makeCounter(Self.refusals, ["reason": "form"])
        roleRefused = registry.makeCounter(Self.refusals, ["reason": "role"])
    }
}
