// SPDX-License-Identifier: Apache-2.0

/// The Android app as a direct client: app tokens, the catalog, per-user limits and the trusted
/// proxies that may say which address a request came from (README, "The app as a client").
public struct AppConfiguration: Sendable {
    /// GATEWAY_APP_TOKEN_SECRETS: HS256 secrets, each at least 32 bytes; the first mints (the CLI,
    /// demo mode), all verify (rotation). Empty: app tokens are off (demo mode: the demo secret).
    public var tokenSecrets: [String] = []
    /// GATEWAY_APP_CREATE_RATE: creates per minute per app user (default 20).
    public var createRate = 20
    /// GATEWAY_APP_REPORT_RATE: iOS transaction reports per minute per app user (default 30): a
    /// StoreKit queue redelivers a handful; more is someone guessing transaction ids.
    public var reportRate = 30
    /// GATEWAY_APP_MAX_WAITS: `wait` queries one app user may hold open at once (default 4).
    public var maxWaits = 4
    /// GATEWAY_TRUSTED_PROXIES: CIDRs of the proxies whose X-Forwarded-For is believed.
    public var trustedProxies: [IPNetwork] = []
    /// GATEWAY_CATALOG: the catalog file, re-read on SIGHUP; nil for the built-in one.
    public var catalogPath: String?
    /// The catalog as read and validated at start (demo mode without a file: `Catalog.demo`).
    public var catalog = Catalog.empty

    /// Demo mode's published secret and user: `serve --demo` prints a token for them at start.
    public static let demoTokenSecret = "demo-app-token-secret-simulator-only-0001"
    public static let demoUser = "demo-user"

    public init() {}

    /// Demo defaults, and the catalog file read and validated: a bad file stops start-up with a
    /// problem naming the product and the rule.
    mutating func complete(demo: Bool) -> [ConfigurationProblem] {
        if tokenSecrets.isEmpty && demo { tokenSecrets = [Self.demoTokenSecret] }
        guard let catalogPath else {
            if demo { catalog = .demo }
            return []
        }
        do {
            catalog = try Catalog.load(path: catalogPath)
            return []
        } catch {
            return [ConfigurationProblem("GATEWAY_CATALOG", .malformed, expected: "a valid catalog file (\(error))")]
        }
    }
}

extension GatewayConfiguration {
    static let appVariables: [ConfigurationVariable] = [
        ConfigurationVariable("GATEWAY_APP_TOKEN_SECRETS", \.app.tokenSecrets,
                              expecting: "HS256 secrets of app tokens, comma-separated, at least "
                                  + "\(AppTokenVerifier.minimumSecretBytes) bytes each",
                              parse: ConfigurationVariable.tokens(minimumLength: AppTokenVerifier.minimumSecretBytes)),
        ConfigurationVariable("GATEWAY_APP_CREATE_RATE", \.app.createRate, expecting: "creates per minute from 1 to 1000000",
                              parse: ConfigurationVariable.integer(1...1_000_000)),
        ConfigurationVariable("GATEWAY_APP_REPORT_RATE", \.app.reportRate,
                              expecting: "iOS transaction reports per minute from 1 to 1000000",
                              parse: ConfigurationVariable.integer(1...1_000_000)),
        ConfigurationVariable("GATEWAY_APP_MAX_WAITS", \.app.maxWaits, expecting: "an integer from 1 to 10000",
                              parse: ConfigurationVariable.integer(1...10_000)),
        ConfigurationVariable("GATEWAY_TRUSTED_PROXIES", \.app.trustedProxies,
                              expecting: "CIDRs, comma-separated, such as 10.0.0.0/8 or 2001:db8::/32") { text in
            let networks = text.split(separator: ",").map { IPNetwork(String($0).trimmingWhitespace()) }
            guard !networks.isEmpty, networks.allSatisfy({ $0 != nil }) else { return nil }
            return networks.compactMap { $0 }
        },
        .optional("GATEWAY_CATALOG", \.app.catalogPath, expecting: "the path of the catalog JSON file",
                  parse: ConfigurationVariable.text),
    ]
}
