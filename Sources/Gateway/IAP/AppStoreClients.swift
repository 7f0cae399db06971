// SPDX-License-Identifier: Apache-2.0
public import AppStore
import Foundation

/// How the gateway speaks with the App Store: the verifier of signed data (the app's bundle id, the
/// configured root, the environments accepted), the Server API client when its key is configured,
/// and the verifyReceipt client, all over one transport and clock.
///
/// Production makes it from the configuration (`production(_:transport:clock:)`); demo mode and the
/// tests from the embedded App Store simulator's root and key (`init`).
public struct AppStoreClients: Sendable {
    public let bundleID: String
    /// Whether sandbox purchases are credited (marked `Sandbox`); off: refused as not creditable.
    public let acceptSandbox: Bool
    public let verifier: SignedDataVerifier
    /// Nil without the In-App Purchase key: `transaction_id` reports, the reconciler's history
    /// look-ups, refund history and recheck then have nothing to ask.
    public let serverAPI: AppStoreServerAPIClient?
    public let receipts: ReceiptClient
    /// Nil without a configured receipt root (`APPSTORE_RECEIPT_ROOT_CA_FILE`): a receipt read
    /// locally (with the Server API key) is then only a list of ids to ask about, not the device's
    /// evidence, and cannot credit a purchase nothing ties to its reporter.
    public let receiptVerifier: ReceiptSignatureVerifier?
    /// The longest a report waits for Apple before it answers 503 `appstore_unavailable`.
    public let deadline: Duration

    /// A few tries within a report's deadline: 0.5 s, then 1 s between them; a 429 waits at most 3 s.
    public static let retry = AppStoreRetryPolicy(maximumAttempts: 3, initialBackoff: .milliseconds(500),
                                                  maximumBackoff: .seconds(2), maximumRetryAfter: .seconds(3))

    /// - Parameters:
    ///   - roots: what signed data must chain to (Apple Root CA - G3 in production).
    ///   - credentials: the Server API's key, or nil for none.
    ///   - apiBases, receiptURLs: production and sandbox (the simulator's in demo mode and tests).
    ///   - sharedSecret: verifyReceipt's `password`, for auto-renewable subscriptions.
    ///   - receiptRoots: what app receipts read locally must chain to (Apple Root CA), or nil.
    public init(bundleID: String, appAppleID: Int64?, roots: TrustedRoots, receiptRoots: TrustedRoots? = nil, acceptSandbox: Bool,
                credentials: ServerAPICredentials?, apiBases: (production: String, sandbox: String),
                receiptURLs: (production: String, sandbox: String), sharedSecret: String? = nil,
                transport: any AppStoreTransport, clock: any AppStoreClock,
                deadline: Duration = .seconds(10)) throws(AppStoreConfigurationError) {
        self.bundleID = bundleID
        self.acceptSandbox = acceptSandbox
        self.deadline = deadline
        verifier = try SignedDataVerifier(roots: roots, bundleID: bundleID, environment: acceptSandbox ? nil : .production,
                                          appAppleID: appAppleID)
        receiptVerifier = try receiptRoots.map { roots throws(AppStoreConfigurationError) in try ReceiptSignatureVerifier(roots: roots) }
        serverAPI = credentials.map {
            AppStoreServerAPIClient(
                credentials: $0,
                configuration: .init(productionBaseURL: apiBases.production, sandboxBaseURL: apiBases.sandbox,
                                     sandboxFallback: acceptSandbox, retry: Self.retry),
                transport: transport, clock: clock)
        }
        receipts = ReceiptClient(
            configuration: .init(bundleID: bundleID, sharedSecret: sharedSecret, productionURL: receiptURLs.production,
                                 sandboxURL: receiptURLs.sandbox, allowsSandbox: acceptSandbox, retry: Self.retry),
            transport: transport, clock: clock)
    }

    /// The clients of a production configuration (its root and key loaded at start).
    public static func production(_ configuration: AppStoreConfiguration, transport: any AppStoreTransport,
                                  clock: any AppStoreClock) throws(AppStoreConfigurationError) -> AppStoreClients {
        guard let bundleID = configuration.bundleID, let roots = configuration.roots else {
            throw AppStoreConfigurationError("App Store purchases need APPSTORE_BUNDLE_ID and APPSTORE_ROOT_CA_FILE")
        }
        return try AppStoreClients(
            bundleID: bundleID, appAppleID: configuration.appAppleID, roots: roots, receiptRoots: configuration.receiptRoots,
            acceptSandbox: configuration.acceptSandbox,
            credentials: configuration.serverAPICredentials,
            apiBases: (configuration.apiBase, configuration.sandboxAPIBase),
            receiptURLs: (configuration.receiptURL, configuration.sandboxReceiptURL), sharedSecret: configuration.sharedSecret,
            transport: transport, clock: clock)
    }
}
