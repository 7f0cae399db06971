// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import Synchronization
import WeChatPay
import WeChatPayV3

/// Every storage protocol the gateway's flows use; both stores implement all of them.
public typealias GatewayStore = OrderStore & RefundStore & IAPStore & ConsoleStore & AuditStore & EntitlementStore
    & BindingStore

/// What every flow of the gateway shares, made once by whoever composes the gateway
/// (`GatewayServices`): the configuration, the store, the one door (`Settlement`), the way to
/// WeChat (`Upstream`), the clock, the waits' signals, the metrics and the logger, the catalog and
/// the app users' limits. The flows take it as a value; none of them reaches another flow through
/// it — what a flow needs of another is passed to it explicitly.
public struct GatewayContext: Sendable {
    public let configuration: GatewayConfiguration
    public let store: any GatewayStore
    /// The registry `/metrics` exposes.
    public let metrics: MetricsRegistry
    public let logger: Logger
    /// The clock; tests move it.
    public let now: @Sendable () -> Date
    /// The clock app tokens' lifetimes and the console's sessions are checked against: `now`,
    /// except in demo mode, where `now` can be moved (the simulators' `clock/advance`) and tokens
    /// minted by the wall clock, and support signed in, must keep working.
    public let tokenClock: @Sendable () -> Date
    /// The catalog in force (re-read on SIGHUP).
    public let catalog: CatalogSource
    /// Where WeChat sends its notifies: the configured URLs, or the address a server bound to
    /// port 0 reports once it listens (demo mode and tests).
    public let callbacks: CallbackURLs
    let userLimits: UserLimits
    let signals: OrderSignals
    let instruments: OrderInstruments
    let settlement: Settlement
    let upstream: Upstream
    /// The merchant key's signer, made once (its HMAC-SHA256 key schedule is two SHA-256 blocks),
    /// for the v2 payment notifies; nil without the v2 key (they are then refused).
    let signer: Signer?
    /// How refunds reach WeChat (`GatewayConfiguration.refundMode` unless the composer says otherwise).
    public let refundMode: GatewayConfiguration.RefundMode
    /// API v3's keys and verifier, shared by the upstream and the v3 notify routes; nil while v3 is
    /// not configured (its notifies are then refused).
    public let v3: V3Keys?
    /// API v3's side of the seam, for the platform certificates' refresh (certificate mode).
    let v3Upstream: WeChatPayV3Upstream?
    /// Paces the certificate refreshes notifies with unknown serials ask for.
    let certificateRefreshes = CertificateRefreshes()

    /// A context whose flows speak WeChat Pay API v2 (`WeChatPayV2Upstream`) and, when v3 is
    /// configured, v3 (`WeChatPayV3Upstream`), each order in the version it was created with.
    /// - Parameters:
    ///   - transport: how requests reach WeChat (libcurl in production, the simulator in demo mode
    ///     and tests); both carry v3 too, unless `v3Transport` says otherwise.
    ///   - refundMode: how refunds reach WeChat; default the configuration's (`refundMode`).
    ///   - now: the clock; tests move it. v3's signature timestamps are always wall time.
    public init(configuration: GatewayConfiguration, store: any GatewayStore, transport: any WeChatPayTransport,
                v3Transport: (any WeChatPayV3Transport)? = nil, refundMode: GatewayConfiguration.RefundMode? = nil,
                metrics: MetricsRegistry = MetricsRegistry(), logger: Logger = .disabled,
                nonces: any NonceSource = RandomNonceSource(), now: @escaping @Sendable () -> Date = { Date() },
                tokenClock: (@Sendable () -> Date)? = nil) {
        let keys = configuration.v3.credentials.map { V3Keys(credentials: $0, mchID: configuration.mchID) }
        let v3 = keys.flatMap { keys in
            (v3Transport ?? transport as? any WeChatPayV3Transport).map {
                WeChatPayV3Upstream(configuration: configuration, keys: keys, transport: $0, nonces: nonces)
            }
        }
        let refundMode = refundMode ?? configuration.refundMode
        let v2 = configuration.apiKey.map { key in
            WeChatPayV2Upstream(configuration: configuration, key: key, transport: transport, nonces: nonces)
        }
        self.init(configuration: configuration, store: store,
                  upstream: VersionedUpstream(v2: v2, v2Refunds: refundMode != .off, v3: v3, newOrders: configuration.v3.apiVersion),
                  v3: keys, v3Upstream: v3, refundMode: refundMode, metrics: metrics, logger: logger, now: now,
                  tokenClock: tokenClock)
    }

    /// - Parameters:
    ///   - upstream: how the order flows reach WeChat Pay (the seam).
    ///   - v3: API v3's keys, for its notifies; `v3Upstream` its side of the seam, for the refresh.
    ///   - refundMode: how refunds reach WeChat; default the configuration's (`refundMode`).
    public init(configuration: GatewayConfiguration, store: any GatewayStore, upstream: any WeChatPayUpstream,
                v3: V3Keys? = nil, v3Upstream: WeChatPayV3Upstream? = nil, refundMode: GatewayConfiguration.RefundMode? = nil,
                metrics: MetricsRegistry = MetricsRegistry(), logger: Logger = .disabled,
                now: @escaping @Sendable () -> Date = { Date() }, tokenClock: (@Sendable () -> Date)? = nil) {
        self.v3 = v3
        self.v3Upstream = v3Upstream
        self.refundMode = refundMode ?? configuration.refundMode
        self.configuration = configuration
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.now = now
        self.tokenClock = tokenClock ?? now
        catalog = CatalogSource(configuration.app.catalog, path: configuration.app.catalogPath)
        callbacks = CallbackURLs(configuration)
        userLimits = UserLimits(createsPerMinute: configuration.app.createRate, reportsPerMinute: configuration.app.reportRate,
                                maximumWaits: configuration.app.maxWaits)
        signals = OrderSignals()
        instruments = OrderInstruments(metrics, channels: Set(configuration.apps.all.map(\.kind)))
        let versions: [WeChatPayAPIVersion] = (configuration.apiKey != nil ? [.v2] : [])
            + (v3 != nil || configuration.v3.credentials != nil ? [.v3] : [])
        instruments.publishUpstreamCalls(apis: versions.flatMap { version in UpstreamCall.allCases.map { $0.metricLabel(version) } })
        settlement = Settlement(store: store, catalog: catalog, signals: signals, instruments: instruments, logger: logger, now: now)
        self.upstream = Upstream(upstream, instruments: instruments, logger: logger)
        signer = configuration.apiKey.map { Signer(key: $0) }
    }

    /// Runs a store operation, turning a storage failure into an API error without leaking its
    /// details: 503 `database_unavailable` while the database cannot be reached, else 500.
    public func storage<T>(_ operation: () async throws(StorageError) -> T) async throws(APIError) -> T {
        do {
            return try await operation()
        } catch {
            throw apiError(for: error)
        }
    }

    /// The answer for a storage failure, logged and counted.
    func apiError(for error: StorageError) -> APIError {
        if error == .termsChanged {
            // Not the database failing: this instance's catalog is behind the one bound there.
            logger.warning("create refused: the product's terms in the database are not this gateway's catalog's "
                + "(an order, or an App Store purchase's, would be made under them); reload its catalog (SIGHUP) from the "
                + "file the other instances have")
            return .catalogChanged
        }
        logger.error("storage failure", ["error": error.shortDescription])
        countStorageError(error)
        return error == .unavailable ? .databaseUnavailable : .internalError
    }

    /// Counts a storage failure a request was answered with (a 5xx, or a notify's FAIL) by its
    /// error: WxpayDatabaseWritesFailing reads this counter, and a disk that fails only notifies
    /// must show there too.
    func countStorageError(_ error: StorageError) {
        instruments.storageErrors.labelled(error.shortDescription).increment()
    }
}

/// The `notify_url`s sent to WeChat: the configured ones (`WXPAY_NOTIFY_URL`,
/// `WXPAY_REFUND_NOTIFY_URL`), or the ones a gateway whose address is known only once it listens
/// (bound to port 0: demo mode and tests) gives with `use(base:)`. An order or a refund keeps the
/// one it was sent with.
///
/// Each API version has its own routes (`/wechat/notify`, `/wechat/v3/notify`; the refund ones
/// alike): a configured URL ending in one version's path gives the other version's by swapping
/// the path, so orders of both versions in flight reach the route that reads them.
public final class CallbackURLs: Sendable {
    private let configured: (payment: String, refund: String)
    private let bound = Mutex<String?>(nil)

    init(_ configuration: GatewayConfiguration) {
        configured = (configuration.notifyURL, configuration.refundNotifyURL)
    }

    /// Sends `base` + `/wechat/notify` and `/wechat/refund-notify` from now on; a configured URL
    /// should not be overridden.
    public func use(base: String) {
        bound.withLock { $0 = base }
    }

    var payment: String { payment(for: "v2") }
    var refund: String { refund(for: "v2") }

    /// The payment notify URL of an order made with `apiVersion`.
    func payment(for apiVersion: String) -> String {
        let (v2, v3) = ("/wechat/notify", "/wechat/v3/notify")
        let path = apiVersion == "v3" ? v3 : v2
        return bound.withLock { $0 }.map { $0 + path } ?? Self.swap(configured.payment, to: path, among: [v2, v3])
    }

    /// The refund notify URL of a refund of an order made with `apiVersion`.
    func refund(for apiVersion: String) -> String {
        let (v2, v3) = ("/wechat/refund-notify", "/wechat/v3/refund-notify")
        let path = apiVersion == "v3" ? v3 : v2
        return bound.withLock { $0 }.map { $0 + path } ?? Self.swap(configured.refund, to: path, among: [v2, v3])
    }

    /// `url` with its ending among `paths` replaced by `path`; unchanged when it ends in none of them.
    static func swap(_ url: String, to path: String, among paths: [String]) -> String {
        guard let current = paths.first(where: { url.hasSuffix($0) }) else { return url }
        return String(url.dropLast(current.count)) + path
    }
}
