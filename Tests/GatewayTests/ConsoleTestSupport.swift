// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
@testable import GatewayConsole
import HTTP
import StorageCore
import StoreTestSupport
import Synchronization
import WeChatPaySimulator

/// A gateway rig with refunds (the embedded simulator), the audit log and the support console,
/// whose user file holds one user of each role. Passwords are hashed once per test process:
/// scrypt at the console's cost is most of a second each.
final class ConsoleRig: Sendable {
    let rig: GatewayRig
    let console: Console
    let audit: AuditLog
    let refunds: RefundService
    let usersFile: String

    static let password = "correct horse battery"
    static let hashes = Mutex<[String: PasswordHash]>([:])

    static func hash(_ password: String) -> PasswordHash {
        if let known = hashes.withLock({ $0[password] }) { return known }
        let made = PasswordHash.make(password)!
        hashes.withLock { $0[password] = made }
        return made
    }

    static let users: [(String, ConsoleRole)] = [("vera", .viewer), ("rita", .refunder), ("adam", .admin)]

    /// - Parameter console: false leaves the console off (no user file).
    static func start(_ mode: GatewayRig.Mode = .inProcess, store: StoreKind = .sqlite, refundsOn: Bool = true,
                      secureCookie: Bool = false, environment: [String: String] = [:], pace: LoginPace = LoginPace())
        async throws -> ConsoleRig
    {
        var variables = environment
        if secureCookie { variables["GATEWAY_CONSOLE_SECURE_COOKIE"] = "on" }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("console-users-\(UUID().uuidString)").path
        let hash = Self.hash(password)
        try ConsoleUserFile.update(path: file) { users in
            users = Self.users.map { ConsoleUser(name: $0.0, role: $0.1, password: hash) }
        }
        let rig = try await GatewayRig.start(mode, store: store, environment: variables, composition: GatewayRig.Composition(
            refundMode: refundsOn ? .embedded : .off, consoleUsers: file, consolePace: pace))
        return ConsoleRig(rig: rig, console: rig.console!, audit: rig.services.audit, refunds: rig.services.refunds, usersFile: file)
    }

    private init(rig: GatewayRig, console: Console, audit: AuditLog, refunds: RefundService, usersFile: String) {
        self.rig = rig
        self.console = console
        self.audit = audit
        self.refunds = refunds
        self.usersFile = usersFile
    }

    func stop() async {
        await rig.stop()
        try? FileManager.default.removeItem(atPath: usersFile)
        try? FileManager.default.removeItem(atPath: usersFile + ".lock")
    }

    /// A paid order of `amount` fen for user `u-42` (created, paid in the simulator, settled).
    func paidOrder(_ outTradeNo: String, amount: Int = 990) async throws {
        _ = try await rig.createOrder(outTradeNo, amount: amount)
        try rig.simulator.pay(outTradeNo: outTradeNo)
        for _ in 0..<3000 {
            if try await rig.store.order(outTradeNo)?.state == .success { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw ConsoleTestFailure("order \(outTradeNo) was not settled")
    }

    func auditEntries(_ query: AuditQuery = AuditQuery()) async throws -> [NewAuditEntry] {
        try await rig.store.auditEntries(query, limit: 1000, before: nil).entries.map(\.entry)
    }

    func browser(language: String? = nil) -> ConsoleBrowser { ConsoleBrowser(rig: rig, language: language) }
}

struct ConsoleTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// What a browser does with the console, over the rig's path (in process or sockets): keeps the
/// cookies it is given, sends them back, and posts forms with the CSRF token the page carries.
final class ConsoleBrowser: @unchecked Sendable {
    // Used by one test at a time, one request after another.
    let rig: GatewayRig
    var cookies: [String: String] = [:]
    var language: String?
    /// The last page's HTML.
    var page = ""

    init(rig: GatewayRig, language: String?) {
        self.rig = rig
        self.language = language
    }

    @discardableResult
    func get(_ path: String) async throws -> GatewayRig.Response {
        try await send(.get, path, form: nil)
    }

    /// Which CSRF token a POST carries.
    enum CSRF: Sendable, CustomStringConvertible {
        /// The one in the last page's form.
        case page
        /// None at all.
        case none
        case value(String)
        var description: String {
            switch self {
            case .page: "the page's token"
            case .none: "no token"
            case .value(let token): "token '\(token)'"
            }
        }
    }

    /// POSTs `fields` (form-encoded) with the page's CSRF token unless told otherwise.
    @discardableResult
    func post(_ path: String, _ fields: [(String, String)] = [], csrf: CSRF = .page) async throws -> GatewayRig.Response {
        var all = fields
        switch csrf {
        case .page: if let token { all.append(("csrf", token)) }
        case .value(let token): all.append(("csrf", token))
        case .none: break
        }
        return try await send(.post, path, form: all)
    }

    /// The page's CSRF token (the first hidden `csrf` field).
    var token: String? { field("csrf") }

    /// The value of the first input named `name` on the last page.
    func field(_ name: String) -> String? {
        guard let range = page.range(of: "name=\"\(name)\" value=\"") else { return nil }
        let rest = page[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    /// Signs in (the form first, for its token); returns the POST's answer.
    @discardableResult
    func signIn(_ name: String, password: String = ConsoleRig.password) async throws -> GatewayRig.Response {
        try await get("/console/login")
        return try await post("/console/login", [("username", name), ("password", password)])
    }

    private func send(_ method: HTTPMethod, _ path: String, form: [(String, String)]?) async throws -> GatewayRig.Response {
        var headers: [String: String] = [:]
        if !cookies.isEmpty { headers["Cookie"] = cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ") }
        if let language { headers["Accept-Language"] = language }
        var body: String?
        if let form {
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            body = form.map { "\(HTML.queryValue($0.0))=\(HTML.queryValue($0.1))" }.joined(separator: "&")
        }
        let response = try await rig.send(method, path, token: nil, body: body, headers: headers)
        for cookie in response.setCookies {
            let pair = cookie.split(separator: ";").first.map(String.init) ?? ""
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2 else { continue }
            if cookie.contains("Max-Age=0") { cookies[parts[0]] = nil } else { cookies[parts[0]] = parts[1] }
        }
        page = String(decoding: response.body, as: UTF8.self)
        return response
    }
}
