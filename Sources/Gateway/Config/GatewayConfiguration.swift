// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import Observability
import StorageCore
import WeChatPay

/// Everything the gateway is configured with, read from the environment (the README's table).
///
/// A start is exactly what the operator meant or it is refused: production (the default) needs
/// its merchant, key, notify URL and client tokens; demo mode is chosen explicitly (`serve --demo`),
/// plays WeChat with the embedded simulator and its published test merchant, takes no `WXPAY_*`
/// variable but `WXPAY_API_VERSION` and listens on loopback only. Every missing, malformed or conflicting variable is
/// reported in one `ConfigurationError`.
///
/// Adding a variable: give it a property (in a nested struct in your own
/// `GatewayConfiguration+<Feature>.swift` for a new component), list it in a `[ConfigurationVariable]`
/// of that file, add that list to `variables` below and, for a rule between variables, a function
/// to `checks`. Missing-variable messages and unknown-variable warnings follow from the list.
public struct GatewayConfiguration: Sendable {
    /// Where the order store lives.
    public enum Database: Sendable, Hashable {
        case sqlite(path: String)
        /// Several instances may share one PostgreSQL database (GatewayConfiguration+Database.swift).
        case postgres(PostgresSettings)
    }

    /// A numeric host and a port (0 picks one).
    public struct Listen: Sendable, Hashable {
        public var host: String
        public var port: Int

        /// `http://host:port` as a URL's beginning (an IPv6 host in brackets): demo mode's own URLs.
        public var httpOrigin: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
    }

    /// Demo mode: the embedded simulator plays WeChat. Chosen by the caller, never guessed.
    public var demo: Bool

    /// The merchant as WeChat knows it (WXPAY_APP_ID, WXPAY_MCH_ID, WXPAY_API_KEY). `appID` is the
    /// default app's (`apps.defaultApp`).
    public var appID = ""
    public var mchID = ""
    /// The v2 API key; nil only under WXPAY_API_VERSION=v3 without it: v2 then signs and verifies
    /// nothing (its notifies are refused, its orders still open are finished through v3:
    /// `VersionedUpstream`).
    public var apiKey: APIKey?
    /// The algorithm new orders are signed with (WXPAY_SIGN_TYPE, default HMAC-SHA256); each order
    /// keeps the one it was created with, and its notifies are verified with that one.
    public var signType = SignType.hmacSHA256
    /// WeChat's API base URL (WXPAY_API_BASE).
    public var apiBase = "https://api.mch.weixin.qq.com"
    /// The cross-city backup (WXPAY_API_BACKUP_BASE).
    public var apiBackupBase = "https://api2.mch.weixin.qq.com"
    /// The public URL WeChat posts notifies to (WXPAY_NOTIFY_URL); in demo mode, the address the
    /// server reports once it listens.
    public var notifyURL = ""
    /// Where to listen (GATEWAY_LISTEN, default 127.0.0.1:8080).
    public var listen = Listen(host: "127.0.0.1", port: 8080)
    public var listenHost: String { listen.host }
    public var listenPort: Int { listen.port }
    /// Where `/metrics`, `/healthz`, `/readyz` and the console are served instead of `listen`
    /// (GATEWAY_ADMIN_LISTEN); nil: everything on `listen` (GatewayConfiguration+Listeners.swift).
    public var adminListen: Listen?
    /// HTTPS on both addresses: GATEWAY_TLS_CERT and GATEWAY_TLS_KEY, loaded and checked at start.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    public var tls: HTTPServerConfiguration.TLS?
    /// GATEWAY_DATABASE, default `sqlite:data/gateway.sqlite`.
    public var database = Self.defaultDatabase
    /// Connections per instance to PostgreSQL (GATEWAY_DATABASE_POOL, default 8).
    public var databasePool = 8
    /// Whether GATEWAY_DATABASE_POOL was given (it is refused with SQLite rather than ignored).
    var databasePoolIsSet = false
    /// Bearer tokens for the app backend (create, query, close) and for support staff (read, look
    /// up, recheck, redrive): GATEWAY_CLIENT_TOKENS, GATEWAY_SUPPORT_TOKENS.
    public var clientTokens: [String] = []
    public var supportTokens: [String] = []
    /// Seconds between orderquery calls while a `wait` query is open (GATEWAY_POLL_INTERVAL, default 5).
    public var pollInterval = 5.0
    /// The lowest level written to the log (GATEWAY_LOG_LEVEL, default info).
    public var logLevel = Logger.Level.info
    /// Connections open at once (GATEWAY_MAX_CONNECTIONS); nil: 16,384, shrunk to fit the
    /// open-file limit (`serve` decides, it owns the limit).
    public var maxConnections: Int?
    /// GATEWAY_MAX_CONNECTIONS_PER_ADDRESS: the public address's connections from one client
    /// address at once; nil: no such limit (behind a proxy, whose address every connection has).
    public var maxConnectionsPerAddress: Int?
    /// The battery's crash points (GATEWAY_CRASH_POINT); always empty in a production build.
    public var crashPoints: [String: Double] = [:]
    /// The battery's clock offset file (GATEWAY_TEST_CLOCK_FILE, `TestClock`); always nil in a
    /// production build.
    public var testClockFile: String?

    // Recovery: the reconciler and the daily bill comparison (the webhook: GatewayConfiguration+Fulfilment).

    /// Seconds between reconciler sweeps (GATEWAY_RECONCILE_INTERVAL, default 30; 0 turns the reconciler off).
    public var reconcileInterval = 30.0
    /// Seconds without a notify before an open order is asked about (GATEWAY_RECONCILE_AFTER, default 60).
    public var reconcileAfter = 60.0
    /// Calls to WeChat one sweeper makes at once (GATEWAY_RECONCILE_CONCURRENCY, default 8).
    public var reconcileConcurrency = 8
    /// Calls to WeChat per second one sweeper makes at most (GATEWAY_RECONCILE_RATE, default 50).
    public var reconcileRate = 50.0
    /// Whether the previous Beijing day's bill is compared every day after 10:00 Beijing time
    /// (GATEWAY_BILL_RECONCILE=on, default off).
    public var billReconcile = false
    /// The fulfilment webhook (GATEWAY_FULFILMENT_*).
    public var fulfilment = Fulfilment()
    /// Refunds: the merchant certificate, the refund notify URL, recovery (GatewayConfiguration+Refunds).
    public var refunds = Refunds()
    /// App tokens, the catalog, per-user limits, trusted proxies (GatewayConfiguration+App.swift).
    public var app = AppConfiguration()
    /// Apple In-App Purchase: the iOS app's purchases (GatewayConfiguration+AppStore.swift).
    public var appStore = AppStoreConfiguration()
    /// The support console: its user file and cookie (GatewayConfiguration+Console.swift).
    public var console = Console()
    /// WeChat Pay API v3: the version new orders use, the keys (GatewayConfiguration+V3.swift).
    public var v3 = V3()
    /// The merchant's apps, one per channel (WXPAY_APPS, WXPAY_H5_SITE_*: GatewayConfiguration+Apps.swift).
    public var apps = WeChatApps()

    /// The test merchant of WeChat's own documentation, used in demo mode.
    public static let demoAppID = "wxd930ea5d5a258f4f"
    public static let demoMchID = "10000100"
    public static let demoKey = "192006250b4c09247ec02edce69f6a2d"
    public static let demoClientToken = "demo-client-token"
    public static let demoSupportToken = "demo-support-token"

    /// The prefixes of the gateway's variables. A set variable with one of them that is not in
    /// `variables` is named in a warning at start (a misspelt variable silently keeping its default
    /// is how a gateway ends up not doing what its operator thinks). `APPSTORE_` is reserved for the
    /// App Store's settings, so a variable set before its component exists is reported too.
    public static let variablePrefixes = ["WXPAY_", "GATEWAY_", "APPSTORE_"]

    /// Every variable the gateway reads.
    public static let variables: [ConfigurationVariable] = merchantVariables + serverVariables + listenerVariables + databaseVariables
        + recoveryVariables + fulfilmentVariables + appVariables + refundVariables + appStoreVariables + consoleVariables
        + v3Variables + appsVariables

    /// The rules between variables (and between a variable and the mode), each returning its problems.
    static let checks: [@Sendable (GatewayConfiguration, Environment) -> [ConfigurationProblem]] = [
        demoChecks, fulfilmentChecks, refundChecks, databaseChecks, consoleChecks, tokenRoleChecks,
    ]

    /// A token is one role's: one listed as both the app backend's and support's would give the
    /// backend support's look-ups and support the backend's creates and closes, whichever was
    /// meant. Named by the variables that share it, never by value.
    static func tokenRoleChecks(_ configuration: GatewayConfiguration, _ environment: Environment) -> [ConfigurationProblem] {
        guard environment.get("GATEWAY_CLIENT_TOKENS") != nil, environment.get("GATEWAY_SUPPORT_TOKENS") != nil,
              !Set(configuration.clientTokens).isDisjoint(with: configuration.supportTokens)
        else { return [] }
        return [ConfigurationProblem("GATEWAY_SUPPORT_TOKENS", .conflict,
                                     expected: "shares a token with GATEWAY_CLIENT_TOKENS: give each role tokens of its own")]
    }

    /// Reads the configuration for a production start (`demo` false) or a demo start, or throws
    /// every problem found at once. `command` says which of the variables production requires
    /// this command actually uses (`serve` all of them; `backup` none): every set variable is still
    /// read and checked.
    public init(environment: Environment, demo: Bool, command: Command = .serve) throws(ConfigurationError) {
        self.demo = demo
        var problems: [ConfigurationProblem] = []
        // Read before the rest: whether new orders use v2 decides whether the v2 key is required.
        let newOrdersUseV2 = environment.get("WXPAY_API_VERSION").flatMap { WeChatPayAPIVersion(rawValue: $0.lowercased()) } != .v3
        for variable in Self.variables {
            guard let text = environment.get(variable.name) else {
                let required = variable.requirement == .requiredOutsideDemo
                    || (variable.requirement == .requiredOutsideDemoWithV2 && newOrdersUseV2)
                if required && !demo && command.requires(variable.name)
                    && variable.alternative.map({ environment.get($0) == nil }) ?? true {
                    problems.append(ConfigurationProblem(variable.name, .missing, expected: variable.expected))
                }
                continue
            }
            if !variable.apply(text, to: &self) {
                problems.append(ConfigurationProblem(variable.name, .malformed, expected: variable.expected))
            }
        }
        if demo {
            appID = Self.demoAppID
            mchID = Self.demoMchID
            apiKey = APIKey(Self.demoKey)
            if clientTokens.isEmpty { clientTokens = [Self.demoClientToken] }
            if supportTokens.isEmpty { supportTokens = [Self.demoSupportToken] }
            // Until the server reports the address it bound (port 0 picks one).
            notifyURL = listen.httpOrigin + "/wechat/notify"
        }
        // Before anything reads a file: a FIFO at a file variable's path would block the read
        // (GatewayConfiguration+Files.swift).
        let fileProblems = Self.fileChecks(environment)
        // The merchant's apps and the H5 site, read and checked (GatewayConfiguration+Apps.swift).
        problems += Self.appsChecks(&self, environment)
        // Demo defaults and the catalog file, read and validated (GatewayConfiguration+App.swift).
        problems += app.complete(demo: demo)
        // The App Store's root and key, loaded and checked (GatewayConfiguration+AppStore.swift).
        problems += Self.appStoreChecks(&self, environment, command: command)
        // The admin address and the TLS pair, loaded and checked (GatewayConfiguration+Listeners.swift).
        problems += Self.listenerChecks(&self, environment)
        // v3's keys, loaded and checked; demo mode's made (GatewayConfiguration+V3.swift).
        problems += Self.v3Checks(&self, environment)
        for check in Self.checks { problems += check(self, environment) }
        // A server answering requests with demo mode's published secrets (GatewayConfiguration+PublishedSecrets.swift),
        // and `doctor`, which checks a server's configuration; the other commands take no requests
        // (`app-token` may mint a demo gateway's tokens).
        if command == .serve || command == .doctor { problems += Self.publishedSecretsChecks(self, environment) }
        // A file that is not a regular one is said once, in those words, not again as unreadable.
        let notRegular = Set(fileProblems.map(\.variable))
        problems = problems.filter { !notRegular.contains($0.variable) } + fileProblems
        guard problems.isEmpty else { throw ConfigurationError(problems) }
    }

    /// What a command needs of the variables production requires: a command that never reaches
    /// WeChat or the clients does not refuse to start for want of their settings.
    public struct Command: Sendable, Hashable {
        /// The required variables this command uses; nil: all of them.
        let required: Set<String>?

        public func requires(_ name: String) -> Bool { required?.contains(name) ?? true }

        /// `serve`: every required variable.
        public static let serve = Command(required: nil)
        /// `reconcile`: the merchant and its key (orderquery, downloadbill, refundquery); no notify
        /// URL (nothing is created) and no client tokens (nobody calls it).
        public static let reconcile = Command(required: ["WXPAY_APP_ID", "WXPAY_MCH_ID", "WXPAY_API_KEY"])
        /// `doctor`: the merchant, its key and the notify URL it checks; no client tokens.
        /// The receipt root too (what `serve` would refuse, doctor does).
        public static let doctor = Command(required: ["WXPAY_APP_ID", "WXPAY_MCH_ID", "WXPAY_API_KEY", "WXPAY_NOTIFY_URL",
                                                      "APPSTORE_RECEIPT_ROOT_CA_FILE"])
    }

    /// A demo configuration with no variables set: the tests' and benchmarks' usual start.
    public static func demo() -> GatewayConfiguration {
        // Cannot fail: nothing is set, and demo mode needs nothing.
        (try? GatewayConfiguration(environment: Environment([:]), demo: true))!
    }

    // MARK: - The variables

    static let merchantVariables: [ConfigurationVariable] = [
        ConfigurationVariable("WXPAY_APP_ID", \.appID, .requiredOutsideDemo,
                              expecting: "the Open Platform mobile-app AppID (letters and digits), or WXPAY_APPS",
                              parse: asciiWord).satisfied(by: "WXPAY_APPS"),
        ConfigurationVariable("WXPAY_MCH_ID", \.mchID, .requiredOutsideDemo,
                              expecting: "the merchant number (digits)", parse: digits),
        .optional("WXPAY_API_KEY", \.apiKey, .requiredOutsideDemoWithV2,
                  expecting: "the merchant's v2 API key (32 characters; not needed with WXPAY_API_VERSION=v3)") {
            $0.utf8.count == 32 ? APIKey($0) : nil
        },
        ConfigurationVariable("WXPAY_NOTIFY_URL", \.notifyURL, .requiredOutsideDemo,
                              expecting: "the public http(s) URL WeChat posts notifies to, without a query string",
                              parse: ConfigurationVariable.url(query: false)),
        ConfigurationVariable("WXPAY_SIGN_TYPE", \.signType, expecting: "MD5 or HMAC-SHA256") {
            SignType(rawValue: $0.uppercased())
        },
        ConfigurationVariable("WXPAY_API_BASE", \.apiBase, expecting: "an http(s) URL without a path", parse: parseBase),
        ConfigurationVariable("WXPAY_API_BACKUP_BASE", \.apiBackupBase, expecting: "an http(s) URL without a path",
                              parse: parseBase),
    ]

    static let serverVariables: [ConfigurationVariable] = [
        ConfigurationVariable("GATEWAY_LISTEN", \.listen,
                              expecting: "a numeric host and a port, e.g. 127.0.0.1:8080 or [::1]:8080", parse: parseListen),
        ConfigurationVariable("GATEWAY_CLIENT_TOKENS", \.clientTokens, .requiredOutsideDemo,
                              expecting: "the app backend's bearer tokens, comma-separated, at least 8 characters each",
                              parse: ConfigurationVariable.tokens(minimumLength: 8)),
        ConfigurationVariable("GATEWAY_SUPPORT_TOKENS", \.supportTokens,
                              expecting: "support staff's bearer tokens, comma-separated, at least 8 characters each",
                              parse: ConfigurationVariable.tokens(minimumLength: 8)),
        ConfigurationVariable("GATEWAY_POLL_INTERVAL", \.pollInterval, expecting: "seconds from 0.05 to 60",
                              parse: ConfigurationVariable.seconds(0.05...60)),
        ConfigurationVariable("GATEWAY_LOG_LEVEL", \.logLevel, expecting: "debug, info, notice, warning or error",
                              parse: ConfigurationVariable.oneOf([
                                  "debug": Logger.Level.debug, "info": .info, "notice": .notice, "warning": .warning,
                                  "error": .error,
                              ])),
        .optional("GATEWAY_MAX_CONNECTIONS", \.maxConnections, expecting: "a number from 16 to 1000000",
                  parse: ConfigurationVariable.integer(16...1_000_000)),
        .optional("GATEWAY_MAX_CONNECTIONS_PER_ADDRESS", \.maxConnectionsPerAddress, expecting: "a number from 1 to 1000000",
                  parse: ConfigurationVariable.integer(1...1_000_000)),
        ConfigurationVariable("GATEWAY_CRASH_POINT", \.crashPoints,
                              expecting: "name:probability pairs, comma-separated (\(CrashPoint.names.joined(separator: ", ")); probabilities 0 to 1)",
                              parse: CrashPoint.configured),
        ConfigurationVariable("GATEWAY_TEST_CLOCK_FILE", \.testClockFile, expecting: "a file path") { text -> String?? in
            // Ignored (and warned about) in a build without the hook, whatever it says.
            guard TestClock.isCompiledIn else { return .some(nil) }
            return text.isEmpty ? nil : .some(text)
        },
    ]

    static let recoveryVariables: [ConfigurationVariable] = [
        ConfigurationVariable("GATEWAY_RECONCILE_INTERVAL", \.reconcileInterval,
                              expecting: "seconds from 0.05 to 3600, or 0 for off") {
            $0 == "0" ? 0 : ConfigurationVariable.seconds(0.05...3600)($0)
        },
        ConfigurationVariable("GATEWAY_RECONCILE_AFTER", \.reconcileAfter, expecting: "seconds from 0 to 86400",
                              parse: ConfigurationVariable.seconds(0...86400)),
        ConfigurationVariable("GATEWAY_RECONCILE_CONCURRENCY", \.reconcileConcurrency, expecting: "an integer from 1 to 256",
                              parse: ConfigurationVariable.integer(1...256)),
        ConfigurationVariable("GATEWAY_RECONCILE_RATE", \.reconcileRate, expecting: "calls per second from 0.1 to 10000",
                              parse: ConfigurationVariable.seconds(0.1...10000)),
        ConfigurationVariable("GATEWAY_BILL_RECONCILE", \.billReconcile, expecting: "on or off",
                              parse: ConfigurationVariable.flag),
    ]

    // MARK: - Rules between variables

    /// Demo mode is the simulator's test merchant on loopback, nothing else: a `WXPAY_*` variable
    /// with `--demo` would be half a production start, and the simulator's pay route takes no
    /// authentication, so it must not be reachable from another machine.
    static func demoChecks(_ configuration: GatewayConfiguration, _ environment: Environment) -> [ConfigurationProblem] {
        guard configuration.demo else { return [] }
        // WXPAY_API_VERSION is no merchant setting: demo mode plays v3 too (with keys of its own).
        // WXPAY_H5_REDIRECT_HOSTS neither: a demo's H5 pages may return to a page served elsewhere.
        let demoSettings: Set<String> = ["WXPAY_API_VERSION", "WXPAY_H5_REDIRECT_HOSTS"]
        var problems = environment.names(withPrefixes: ["WXPAY_"]).filter { environment.get($0) != nil && !demoSettings.contains($0) }.map {
            ConfigurationProblem($0, .conflict, expected: "not allowed with --demo (demo mode uses the simulator's test "
                                 + "merchant; unset it, or start without --demo for production)")
        }
        let listen = configuration.listen
        if let address = HTTPServerSocketAddress(host: listen.host, port: UInt16(listen.port)), !address.isLoopback {
            problems.append(ConfigurationProblem(
                "GATEWAY_LISTEN", .conflict,
                expected: "demo mode listens on loopback only (127.0.0.0/8 or ::1): its simulator pays orders for "
                    + "anyone who asks"))
        }
        return problems
    }

    // MARK: - Parsers

    static func parseListen(_ text: String) -> Listen? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port),
              HTTPServerSocketAddress(host: host, port: UInt16(port)) != nil else { return nil }
        return Listen(host: host, port: port)
    }

    static func parseBase(_ text: String) -> String? {
        guard let (url, text) = ConfigurationVariable.httpURL(text), url.path.isEmpty || url.path == "/", url.query == nil
        else { return nil }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    static func digits(_ text: String) -> String? {
        text.utf8.count <= 32 && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } ? text : nil
    }

    static func asciiWord(_ text: String) -> String? {
        text.utf8.count <= 32 && text.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
            ? text : nil
    }
}
