// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import Synchronization
import WeChatPay

/// Every storage protocol the gateway's flows use; both stores implement all of them.
public typealias GatewayStore = OrderStore & RefundStore & IAPStore & ConsoleStore & AuditStore

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
    /// for the v2 payment notifies.
    let signer: Signer

    /// A context whose flows speak WeChat Pay API v2 (`WeChatPayV2Upstream`).
    /// - Parameters:
    ///   - transport: how requests reach WeChat (libcurl in production, the simulator in demo mode and tests).
    ///   - now: the clock; tests move it.
    public init(configuration: GatewayConfiguration, store: any GatewayStore, transport: any WeChatPayTransport,
                metrics: MetricsRegistry = MetricsRegistry(), logger: Logger = .disabled,
                nonces: any NonceSource = RandomNonceSource(), now: @escaping @Sendable () -> Date = { Date() }) {
        self.init(configuration: configuration, store: store,
                  upstream: WeChatPayV2Upstream(configuration: configuration, transport: transport, nonces: nonces),
                  metrics: metrics, logger: logger, now: now)
    }

    /// - Parameter upstream: how the order flows reach WeChat Pay (the seam).
    public init(configuration: GatewayConfiguration, store: any GatewayStore, upstream: any WeChatPayUpstream,
                metrics: MetricsRegistry = MetricsRegistry(), logger: Logger = .disabled,
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.configuration = configuration
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.now = now
        catalog = CatalogSource(configuration.app.catalog, path: configuration.app.catalogPath)
        callbacks = CallbackURLs(configuration)
        userLimits = UserLimits(createsPerMinute: configuration.app.createRate, reportsPerMinute: configuration.app.reportRate,
                                maximumWaits: configuration.app.maxWaits)
        signals = OrderSignals()
        instruments = OrderInstruments(metrics)
        settlement = Settlement(store: store, signals: signals, instruments: instruments, logger: logger, now: now)
        self.upstream = Upstream(upstream, instruments: instruments, logger: logger)
        signer = Signer(key: configuration.apiKey)
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
        logger.error("storage failure", ["error": error.shortDescription])
        instruments.storageErrors.labelled(error.shortDescription).increment()
        return error == .unavailable ? .databaseUnavailable : .internalError
    }
}

/// The `notify_url`s sent to WeChat: the configured ones (`WXPAY_NOTIFY_URL`,
/// `WXPAY_REFUND_NOTIFY_URL`), or the ones a gateway whose address is known only once it listens
/// (bound to port 0: demo mode and tests) gives with `use(base:)`. An order or a refund keeps the
/// one it was sent with.
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

    var payment: String { bound.withLock { $0 }.map { $0 + "/wechat/notify" } ?? configured.payment }
    var refund: String { bound.withLock { $0 }.map { $0 + "/wechat/refund-notify" } ?? configured.refund }
}
