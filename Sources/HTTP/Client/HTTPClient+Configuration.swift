// SPDX-License-Identifier: Apache-2.0

extension HTTPClient {
    /// How long a request may take. Both limits are enforced by libcurl
    /// (`CURLOPT_CONNECTTIMEOUT_MS`, `CURLOPT_TIMEOUT_MS`) and, as a backstop, by the client's own
    /// watchdog, so a peer that hangs cannot hold a caller past `total` plus a small slack.
    ///
    /// The defaults (connect 5 s, total 10 s) sit close to the official WeChat Pay SDK's 6 s connect /
    /// 8 s read: long enough for a slow cross-city link, short enough that an app user still waits.
    public struct Timeouts: Sendable, Hashable {
        /// Name resolution, TCP connect and the TLS handshake together. Default 5 seconds.
        public var connect: Duration
        /// The whole request, from submission to the last response byte. Default 10 seconds.
        public var total: Duration

        /// - Parameters:
        ///   - connect: resolve + connect + TLS handshake limit; default 5 seconds.
        ///   - total: whole-request limit; default 10 seconds.
        public init(connect: Duration = .seconds(5), total: Duration = .seconds(10)) {
            self.connect = connect
            self.total = total
        }
    }

    /// Server verification. Client certificates are per request (``HTTPClientRequest/clientIdentity``),
    /// so one client and its connection cache serve plain and mutual-TLS endpoints alike; libcurl only
    /// reuses a connection for a request with the same client certificate.
    public struct TLS: Sendable, Hashable {
        /// A PEM file of CA certificates to trust instead of the system store; `nil` (the default)
        /// trusts the system store. Peer and host-name verification are always on.
        public var caFile: String?

        /// - Parameter caFile: a PEM bundle of trusted CAs; `nil` (default) uses the system store.
        public init(caFile: String? = nil) {
            self.caFile = caFile
        }
    }

    /// Client-wide settings; every parameter has a default.
    ///
    /// ```swift
    /// let client = try HTTPClient(configuration: .init(
    ///     timeouts: .init(connect: .seconds(3), total: .seconds(8)),
    ///     maxResponseBodyBytes: 1 << 20))
    /// ```
    public struct Configuration: Sendable, Hashable {
        /// Default timeouts; a request may override them. Default connect 5 s, total 10 s.
        public var timeouts: Timeouts
        /// The largest response body accepted; larger ones fail with
        /// ``HTTPClientError/responseTooLarge``. A request may override it. Default 4 MiB (WeChat Pay's
        /// XML answers are a few KiB; daily bills of large merchants are bigger and should override).
        public var maxResponseBodyBytes: Int
        /// Server verification. Default: the system trust store.
        public var tls: TLS
        /// How many idle keep-alive connections the shared cache keeps (`CURLMOPT_MAXCONNECTS`).
        /// Default 64.
        public var connectionCacheSize: Int
        /// Sent as `User-Agent` unless a request sets its own. Default `wxpay-gateway`.
        public var userAgent: String
        /// An egress proxy URL (`http://proxy.internal:3128`), for networks that reach WeChat only
        /// through one. Default `nil`: direct connections; proxy environment variables are ignored.
        public var proxy: String?
        /// How long past its total timeout the watchdog lets a transfer run before failing it, in case
        /// libcurl did not. Default 1 second.
        public var watchdogSlack: Duration

        /// Test hook: `false` leaves the timeouts to the watchdog alone, to prove the backstop works.
        var curlEnforcesTimeouts = true
        /// Test hook: how long the idle transfer thread sleeps when nothing wakes it. A test makes it
        /// long, so that a lost wake-up costs minutes, which no loaded machine can be mistaken for.
        var idleSleep: Duration = .seconds(5)

        /// Every parameter is optional; the defaults are listed on each property.
        public init(
            timeouts: Timeouts = .init(),
            maxResponseBodyBytes: Int = 4 << 20,
            tls: TLS = .init(),
            connectionCacheSize: Int = 64,
            userAgent: String = "wxpay-gateway",
            proxy: String? = nil,
            watchdogSlack: Duration = .seconds(1)
        ) {
            self.timeouts = timeouts
            self.maxResponseBodyBytes = maxResponseBodyBytes
            self.tls = tls
            self.connectionCacheSize = connectionCacheSize
            self.userAgent = userAgent
            self.proxy = proxy
            self.watchdogSlack = watchdogSlack
        }
    }
}
