// SPDX-License-Identifier: Apache-2.0

/// The Android app as a direct client: app tokens, the catalog, per-user limits and the trusted
/// proxies that may say which address a request came from (README, "The app as a client").
public struct AppConfiguration: Sendable {
    /// GATEWAY_APP_TOKEN_SECRETS: HS256 secrets, each at least 32 bytes; the first mints (the CLI,
    /// demo mode), all verify (rotation). Empty: app tokens are off.
    public var tokenSecrets: [String] = []
    /// GATEWAY_APP_CREATE_RATE: creates per minute per app user (default 20).
    public var createRate: Int = 20
    /// GATEWAY_APP_MAX_WAITS: `wait` queries one app user may hold open at once (default 4).
    public var maxWaits: Int = 4
    /// GATEWAY_TRUSTED_PROXIES: CIDRs of the proxies whose X-Forwarded-For is believed.
    public var trustedProxies: [IPNetwork] = []
    /// GATEWAY_CATALOG: the catalog file, re-read on SIGHUP; nil for the built-in one.
    public var catalogPath: String?
    /// The catalog as read and validated at start.
    public var catalog: Catalog = .empty

    /// Demo mode's published secret and user: `serve` prints a token for them at start.
    public static let demoTokenSecret = "demo-app-token-secret-simulator-only-0001"
    public static let demoUser = "demo-user"

    /// Every variable this part reads, for the known-variable list.
    public static let variables = [
        "GATEWAY_APP_TOKEN_SECRETS", "GATEWAY_APP_CREATE_RATE", "GATEWAY_APP_MAX_WAITS", "GATEWAY_TRUSTED_PROXIES",
        "GATEWAY_CATALOG",
    ]

    public init() {}

    /// Reads the variables; a bad catalog file stops start-up naming the product and the rule.
    public init(_ environment: Environment, demo: Bool) throws(ConfigurationError) {
        tokenSecrets = environment.list("GATEWAY_APP_TOKEN_SECRETS")
        if tokenSecrets.isEmpty && demo { tokenSecrets = [Self.demoTokenSecret] }
        if tokenSecrets.contains(where: { $0.utf8.count < AppTokenVerifier.minimumSecretBytes }) {
            throw ConfigurationError(variable: "GATEWAY_APP_TOKEN_SECRETS",
                                     expected: "comma-separated secrets of at least \(AppTokenVerifier.minimumSecretBytes) bytes each")
        }
        createRate = try environment.get("GATEWAY_APP_CREATE_RATE", default: 20, expecting: "creates per minute from 1 to 1000000") {
            guard let value = Int($0), (1...1_000_000).contains(value) else { return nil }
            return value
        }
        maxWaits = try environment.get("GATEWAY_APP_MAX_WAITS", default: 4, expecting: "an integer from 1 to 10000") {
            guard let value = Int($0), (1...10_000).contains(value) else { return nil }
            return value
        }
        var proxies: [IPNetwork] = []
        for entry in environment.list("GATEWAY_TRUSTED_PROXIES") {
            guard let network = IPNetwork(entry) else {
                throw ConfigurationError(variable: "GATEWAY_TRUSTED_PROXIES",
                                         expected: "comma-separated CIDRs such as 10.0.0.0/8 or 2001:db8::/32")
            }
            proxies.append(network)
        }
        trustedProxies = proxies
        catalogPath = environment.get("GATEWAY_CATALOG")
        if let catalogPath {
            do {
                catalog = try Catalog.load(path: catalogPath)
            } catch {
                throw ConfigurationError(variable: "GATEWAY_CATALOG", expected: "a valid catalog file (\(error))")
            }
        } else if demo {
            catalog = .demo
        }
    }
}
