// SPDX-License-Identifier: Apache-2.0
public import HTTP
import Synchronization
public import WeChatPay

/// The production ``WeChatPayTransport``: HTTPS POSTs through ``HTTPClient``, with the official
/// SDK's failover to WeChat's cross-city backup domain.
///
/// ```swift
/// let client = try HTTPClient()
/// let transport = WeChatPayHTTPTransport(client: client, configuration: .init(
///     clientIdentity: .pkcs12(file: "/etc/wxpay/apiclient_cert.p12", password: mchID)))
/// let response = try await transport.send(TransportRequest(path: "/pay/orderquery", body: xml))
/// ```
///
/// Each call goes to the host ``DomainFailover`` picks; its outcome is reported back, so repeated
/// DNS or connect failures on the primary move later calls to the backup, and the primary gets
/// another chance three minutes later. A failed call is not retried here: retrying is the
/// pipeline's decision, and ``TransportError/mayHaveBeenDelivered`` tells it whether that is safe.
///
/// The client is borrowed: shut it down yourself after the last call.
public final class WeChatPayHTTPTransport: WeChatPayTransport {
    /// Where and how to reach WeChat Pay; every parameter has a default.
    public struct Configuration: Sendable {
        /// The primary base URL, without a trailing path. Default `https://api.mch.weixin.qq.com`.
        public var primaryBaseURL: String
        /// The backup base URL; `nil` disables failover. Default `https://api2.mch.weixin.qq.com`.
        public var backupBaseURL: String?
        /// The merchant API certificate, presented only on requests with
        /// `needsClientCertificate` (the `/secapi/` endpoints). Default `nil`: such requests fail
        /// with a `.tls` error without being sent.
        public var clientIdentity: TLSClientIdentity?
        /// Overrides the client's timeouts for WeChat calls; `nil` (default) keeps the client's.
        public var timeouts: HTTPClient.Timeouts?
        /// The failover thresholds; default: the official SDK's (2 connect / 2 DNS failures, 3 minutes).
        public var failover: DomainFailover.Policy

        /// Every parameter is optional; the defaults are listed on each property.
        public init(
            primaryBaseURL: String = "https://api.mch.weixin.qq.com",
            backupBaseURL: String? = "https://api2.mch.weixin.qq.com",
            clientIdentity: TLSClientIdentity? = nil,
            timeouts: HTTPClient.Timeouts? = nil,
            failover: DomainFailover.Policy = .init()
        ) {
            self.primaryBaseURL = primaryBaseURL
            self.backupBaseURL = backupBaseURL
            self.clientIdentity = clientIdentity
            self.timeouts = timeouts
            self.failover = failover
        }
    }

    /// The settings this transport was made with.
    public let configuration: Configuration
    let client: HTTPClient
    private let now: @Sendable () -> ContinuousClock.Instant
    private let failover: Mutex<DomainFailover>

    /// - Parameters:
    ///   - client: the HTTP client to send through; it stays owned by the caller.
    ///   - configuration: hosts, client certificate, timeouts and failover policy.
    ///   - now: the clock for the failover's three-minute rule; tests inject one that jumps.
    public init(
        client: HTTPClient,
        configuration: Configuration = .init(),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.client = client
        self.configuration = configuration
        self.now = now
        failover = Mutex(DomainFailover(policy: configuration.failover))
    }

    /// The host the next call would use, without counting as a call (for status pages and tests).
    public var currentHost: DomainFailover.Host {
        var copy = failover.withLock { $0 }
        return configuration.backupBaseURL == nil ? .primary : copy.chooseHost(now: now())
    }

    /// POSTs the signed XML to the chosen host.
    /// - Throws: `TransportError` for every failure below HTTP; any HTTP status is a response.
    public func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        var identity: TLSClientIdentity?
        if request.needsClientCertificate {
            guard let configured = configuration.clientIdentity else {
                throw TransportError(kind: .tls, mayHaveBeenDelivered: false)
            }
            identity = configured
        }
        let host = configuration.backupBaseURL == nil ? .primary : chooseHost()
        let baseURL = host == .backup ? configuration.backupBaseURL ?? configuration.primaryBaseURL : configuration.primaryBaseURL
        let httpRequest = HTTPClientRequest(
            method: .post,
            url: Self.join(baseURL, request.path),
            headers: ["Content-Type": "text/xml; charset=utf-8"],
            body: request.body,
            timeouts: configuration.timeouts,
            clientIdentity: identity)
        do {
            let response = try await client.execute(httpRequest)
            record(.success, on: host)
            return TransportResponse(status: response.status, body: response.body)
        } catch {
            if let outcome = DomainFailover.Outcome(error) { record(outcome, on: host) }
            throw TransportError(error)
        }
    }

    /// The host for the next call, v2's or v3's: one failover for both.
    func chooseHost() -> DomainFailover.Host { failover.withLock { $0.chooseHost(now: now()) } }

    func record(_ outcome: DomainFailover.Outcome, on host: DomainFailover.Host) {
        failover.withLock { $0.record(outcome, on: host) }
    }

    static func join(_ baseURL: String, _ path: String) -> String {
        var base = Substring(baseURL)
        while base.last == "/" { base = base.dropLast() }
        return path.hasPrefix("/") ? base + path : base + "/" + path
    }
}
