// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

/// Everything the gateway is configured with, read from the environment (see the README's table).
///
/// With no `WXPAY_MCH_ID` the gateway runs in demo mode: the embedded WeChat Pay simulator answers
/// WeChat's side in the same process with a published test merchant.
public struct GatewayConfiguration: Sendable {
    /// Where the order store lives.
    public enum Database: Sendable, Hashable {
        case sqlite(path: String)
    }

    /// The merchant as WeChat knows it.
    public var appID: String
    public var mchID: String
    public var apiKey: APIKey
    /// The algorithm new orders are signed with (default HMAC-SHA256); each order keeps the one it was
    /// created with, and its notifies are verified with that one.
    public var signType: SignType
    /// WeChat's API base URL (default https://api.mch.weixin.qq.com).
    public var apiBase: String
    /// The cross-city backup (default https://api2.mch.weixin.qq.com).
    public var apiBackupBase: String
    /// The public URL WeChat posts payment notifies to.
    public var notifyURL: String
    /// host:port to listen on (default 127.0.0.1:8080).
    public var listenHost: String
    public var listenPort: Int
    public var database: Database
    /// Bearer tokens for the app backend (create, query, close) and for support staff (read, recheck).
    public var clientTokens: [String]
    public var supportTokens: [String]
    /// Seconds between orderquery calls while a `wait` query is open (default 5).
    public var pollInterval: Double
    /// Demo mode: the embedded simulator plays WeChat.
    public var demo: Bool

    // Recovery: the reconciler, the fulfilment webhook and the daily bill comparison.

    /// Seconds between reconciler sweeps (GATEWAY_RECONCILE_INTERVAL, default 30; 0 turns the reconciler off).
    public var reconcileInterval: Double = 30
    /// Seconds without a notify before an open order is asked about (GATEWAY_RECONCILE_AFTER, default 60).
    public var reconcileAfter: Double = 60
    /// Calls to WeChat one sweeper makes at once (GATEWAY_RECONCILE_CONCURRENCY, default 8).
    public var reconcileConcurrency: Int = 8
    /// Calls to WeChat per second one sweeper makes at most (GATEWAY_RECONCILE_RATE, default 50).
    public var reconcileRate: Double = 50
    /// Where `order.paid` events are POSTed (GATEWAY_FULFILMENT_URL); nil turns the dispatcher off.
    public var fulfilmentURL: String?
    /// The HMAC-SHA256 key of the `Gateway-Signature` header (GATEWAY_FULFILMENT_SECRET).
    public var fulfilmentSecret: String?
    /// Whether the previous Beijing day's bill is compared every day after 10:00 Beijing time
    /// (GATEWAY_BILL_RECONCILE=on, default off).
    public var billReconcile: Bool = false
    /// App tokens, the catalog and per-user limits (GatewayConfiguration+App.swift).
    public var app = AppConfiguration()

    /// The test merchant of WeChat's own documentation, used in demo mode.
    public static let demoAppID = "wxd930ea5d5a258f4f"
    public static let demoMchID = "10000100"
    public static let demoKey = "192006250b4c09247ec02edce69f6a2d"
    public static let demoClientToken = "demo-client-token"
    public static let demoSupportToken = "demo-support-token"

    /// Reads the configuration; the first malformed variable stops start-up with its name.
    public init(environment: Environment) throws(ConfigurationError) {
        let listen = try environment.get("GATEWAY_LISTEN", default: ("127.0.0.1", 8080), expecting: "host:port",
                                         Self.parseListen)
        listenHost = listen.0
        listenPort = listen.1
        database = try environment.get("GATEWAY_DATABASE", default: .sqlite(path: "data/gateway.sqlite"),
                                       expecting: "sqlite:PATH (PostgreSQL support is not built yet)", Self.parseDatabase)
        signType = try environment.get("WXPAY_SIGN_TYPE", default: .hmacSHA256, expecting: "MD5 or HMAC-SHA256") {
            SignType(rawValue: $0.uppercased())
        }
        pollInterval = try environment.get("GATEWAY_POLL_INTERVAL", default: 5, expecting: "seconds between 0.05 and 60") {
            guard let value = Double($0), value >= 0.05, value <= 60 else { return nil }
            return value
        }
        apiBase = try environment.get("WXPAY_API_BASE", default: "https://api.mch.weixin.qq.com",
                                      expecting: "an http(s) URL without a path", Self.parseBase)
        apiBackupBase = try environment.get("WXPAY_API_BACKUP_BASE", default: "https://api2.mch.weixin.qq.com",
                                            expecting: "an http(s) URL without a path", Self.parseBase)

        demo = environment.get("WXPAY_MCH_ID") == nil
        if demo {
            appID = environment.get("WXPAY_APP_ID") ?? Self.demoAppID
            mchID = Self.demoMchID
            apiKey = APIKey(environment.get("WXPAY_API_KEY") ?? Self.demoKey)
        } else {
            guard let appID = environment.get("WXPAY_APP_ID") else {
                throw ConfigurationError(variable: "WXPAY_APP_ID", expected: "the Open Platform app id (set with WXPAY_MCH_ID)")
            }
            guard let key = environment.get("WXPAY_API_KEY") else {
                throw ConfigurationError(variable: "WXPAY_API_KEY", expected: "the merchant's v2 API key (set with WXPAY_MCH_ID)")
            }
            self.appID = appID
            mchID = environment.get("WXPAY_MCH_ID")!
            apiKey = APIKey(key)
            guard mchID.allSatisfy(\.isNumber) else {
                throw ConfigurationError(variable: "WXPAY_MCH_ID", expected: "the merchant number (digits)")
            }
            guard key.utf8.count == 32 else {
                throw ConfigurationError(variable: "WXPAY_API_KEY", expected: "32 characters")
            }
        }

        let defaultNotify = "http://\(listenHost == "0.0.0.0" ? "127.0.0.1" : listenHost):\(listenPort)/wechat/notify"
        notifyURL = try environment.get("WXPAY_NOTIFY_URL", default: defaultNotify,
                                        expecting: "an http(s) URL without a query string") { text in
            guard let url = URL(string: text), url.scheme == "https" || url.scheme == "http", url.host != nil,
                  url.query == nil else { return nil }
            return text
        }
        if !demo && environment.get("WXPAY_NOTIFY_URL") == nil {
            throw ConfigurationError(variable: "WXPAY_NOTIFY_URL", expected: "the public URL WeChat posts notifies to")
        }

        clientTokens = environment.list("GATEWAY_CLIENT_TOKENS")
        supportTokens = environment.list("GATEWAY_SUPPORT_TOKENS")
        if demo {
            if clientTokens.isEmpty { clientTokens = [Self.demoClientToken] }
            if supportTokens.isEmpty { supportTokens = [Self.demoSupportToken] }
        } else if clientTokens.isEmpty {
            throw ConfigurationError(variable: "GATEWAY_CLIENT_TOKENS", expected: "at least one bearer token")
        }
        for token in clientTokens + supportTokens where token.utf8.count < 8 {
            let variable = clientTokens.contains(token) ? "GATEWAY_CLIENT_TOKENS" : "GATEWAY_SUPPORT_TOKENS"
            throw ConfigurationError(variable: variable, expected: "tokens of at least 8 characters")
        }
        try readRecovery(environment)
        app = try AppConfiguration(environment, demo: demo)
    }

    /// The reconciler's, the dispatcher's and the bill job's variables.
    private mutating func readRecovery(_ environment: Environment) throws(ConfigurationError) {
        reconcileInterval = try environment.get("GATEWAY_RECONCILE_INTERVAL", default: 30,
                                                expecting: "seconds between 0.05 and 3600, or 0 for off") {
            guard let value = Double($0), value == 0 || (value >= 0.05 && value <= 3600) else { return nil }
            return value
        }
        reconcileAfter = try environment.get("GATEWAY_RECONCILE_AFTER", default: 60, expecting: "seconds from 0 to 86400") {
            guard let value = Double($0), value >= 0, value <= 86400 else { return nil }
            return value
        }
        reconcileConcurrency = try environment.get("GATEWAY_RECONCILE_CONCURRENCY", default: 8,
                                                   expecting: "an integer from 1 to 256") {
            guard let value = Int($0), (1...256).contains(value) else { return nil }
            return value
        }
        reconcileRate = try environment.get("GATEWAY_RECONCILE_RATE", default: 50, expecting: "calls per second from 0.1 to 10000") {
            guard let value = Double($0), value >= 0.1, value <= 10000 else { return nil }
            return value
        }
        fulfilmentURL = try environment.get("GATEWAY_FULFILMENT_URL", default: nil, expecting: "an http(s) URL") { text in
            guard let url = URL(string: text), url.scheme == "https" || url.scheme == "http", url.host != nil else { return nil }
            return text
        }
        fulfilmentSecret = environment.get("GATEWAY_FULFILMENT_SECRET")
        if fulfilmentURL != nil && (fulfilmentSecret?.utf8.count ?? 0) < 16 {
            throw ConfigurationError(variable: "GATEWAY_FULFILMENT_SECRET",
                                     expected: "at least 16 characters (set with GATEWAY_FULFILMENT_URL)")
        }
        billReconcile = try environment.get("GATEWAY_BILL_RECONCILE", default: false, expecting: "on or off") {
            switch $0.lowercased() {
            case "on", "true", "1", "yes": true
            case "off", "false", "0", "no": false
            default: nil
            }
        }
    }

    static func parseListen(_ text: String) -> (String, Int)? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            return nil
        }
        return (host, port)
    }

    static func parseDatabase(_ text: String) -> Database? {
        guard text.hasPrefix("sqlite:") else { return nil }
        let path = String(text.dropFirst("sqlite:".count))
        return path.isEmpty ? nil : .sqlite(path: path)
    }

    static func parseBase(_ text: String) -> String? {
        guard let url = URL(string: text), url.scheme == "https" || url.scheme == "http", url.host != nil,
              url.path.isEmpty || url.path == "/", url.query == nil else { return nil }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }
}
