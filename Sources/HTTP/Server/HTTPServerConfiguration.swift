// SPDX-License-Identifier: Apache-2.0

/// How the server listens and what it tolerates. Every value has a default suited to the gateway;
/// tests shrink the limits.
///
/// ```swift
/// let configuration = HTTPServerConfiguration(host: "0.0.0.0", port: 8080)
///     .with { $0.connectionTimeout = .seconds(10) }
/// ```
public struct HTTPServerConfiguration: Sendable {
    /// TLS, optionally with client certificates (mutual TLS). Printing it (`description`,
    /// `dump`) never shows the private key.
    public struct TLS: Sendable, CustomStringConvertible, CustomReflectable {
        /// The server's certificate chain, PEM (leaf first).
        public var certificatePEM: String
        /// The server's private key, PEM, unencrypted.
        public var privateKeyPEM: String
        /// CA certificates (PEM) that sign acceptable client certificates. Without it no client
        /// certificate is requested and none can be verified.
        public var clientCAPEM: String?
        /// The policy for routes that do not set their own. Default `.optional`.
        public var clientCertificatePolicy: HTTPServerClientCertificatePolicy
        /// GnuTLS priority string. Default: TLS 1.3 and 1.2 only, GnuTLS's NORMAL cipher choice.
        public var priorities: String

        public init(
            certificatePEM: String, privateKeyPEM: String, clientCAPEM: String? = nil,
            clientCertificatePolicy: HTTPServerClientCertificatePolicy = .optional,
            priorities: String = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
        ) {
            self.certificatePEM = certificatePEM
            self.privateKeyPEM = privateKeyPEM
            self.clientCAPEM = clientCAPEM
            self.clientCertificatePolicy = clientCertificatePolicy
            self.priorities = priorities
        }

        public var description: String {
            "TLS(certificate: \(certificatePEM.utf8.count) bytes, privateKey: <redacted>, "
                + "clientCA: \(clientCAPEM == nil ? "none" : "set"), clientCertificatePolicy: \(clientCertificatePolicy))"
        }

        public var customMirror: Mirror {
            Mirror(
                self,
                children: [
                    "certificatePEM": "\(certificatePEM.utf8.count) bytes", "privateKeyPEM": "<redacted>",
                    "clientCAPEM": clientCAPEM == nil ? "none" : "set",
                    "clientCertificatePolicy": clientCertificatePolicy, "priorities": priorities,
                ])
        }
    }

    /// A numeric address to bind (`127.0.0.1`, `0.0.0.0`, `::1`, `::`; `localhost` means 127.0.0.1).
    /// Default `127.0.0.1`.
    public var host: String
    /// The port; 0 picks a free one, reported by `HTTPServer.start()`. Default 0.
    public var port: UInt16
    /// Polling threads (libmicrohttpd's thread pool). Connections are spread across them; the
    /// connection limit is divided among them. Default 2 (one per core on the target machine).
    public var threadPoolSize: Int
    /// The most connections open at once, across all threads. Default 4,096.
    public var connectionLimit: Int
    /// The most connections open at once from one client address; 0: no limit of its own (behind a
    /// proxy every connection comes from the proxy). Further connections from that address are
    /// closed as they are accepted, so one host cannot hold every slot. Default 0.
    public var connectionsPerAddress: Int = 0
    /// An idle connection (no bytes either way) is closed after this long: it cuts slow-loris
    /// clients that open a request and stall, and idle keep-alive connections. Rounded up to whole
    /// seconds. Suspended requests (a handler still working) are exempt. Default 15 s.
    public var connectionTimeout: Duration
    /// A request's head and body must arrive within this long of the connection opening (TLS
    /// handshake included) or of the previous response completing, however steadily the bytes
    /// trickle in: the defence against slow-loris clients that `connectionTimeout`, which only
    /// measures silence, cannot see. Handlers' time does not count. Checked about every second.
    /// Default 30 s.
    public var requestTimeout: Duration
    /// Memory per connection for the request line, headers and read buffer: requests whose URL or
    /// headers do not fit get 414 or 431. Default 32 KiB.
    public var connectionMemoryLimit: Int
    /// The body limit for routes that set none. Default 1 MiB.
    public var maxBodyBytes: Int
    /// The longest request-target (path and query as sent) served; a longer one gets 414 and the
    /// connection closes. Default 8 KiB.
    public var maxTargetBytes: Int
    /// The most query parameters a request may carry; more get 414 and the connection closes.
    /// Together with `maxTargetBytes` it keeps the parameters within `connectionMemoryLimit`, where
    /// libmicrohttpd keeps them (past it, it would neither answer nor close). Default 100.
    public var maxQueryParameters: Int
    /// The kernel's queue of connections not yet accepted. Default 1,024.
    public var listenBacklog: Int
    /// HTTPS settings; nil serves plain HTTP. Default nil.
    public var tls: TLS?
    /// At the end of a shutdown's grace period, how long the handlers still running have, once
    /// cancelled, to answer their requests themselves (a refund recorded and sent says PROCESSING)
    /// before the rest are answered 503; none when the shutdown gave no grace. Default 2 s.
    public var shutdownCancellationWindow: Duration = .seconds(2)

    public init(
        host: String = "127.0.0.1",
        port: UInt16 = 0,
        threadPoolSize: Int = 2,
        connectionLimit: Int = 4_096,
        connectionTimeout: Duration = .seconds(15),
        requestTimeout: Duration = .seconds(30),
        connectionMemoryLimit: Int = 32 * 1024,
        maxBodyBytes: Int = 1024 * 1024,
        maxTargetBytes: Int = 8 * 1024,
        maxQueryParameters: Int = 100,
        listenBacklog: Int = 1_024,
        tls: TLS? = nil
    ) {
        self.host = host
        self.port = port
        self.threadPoolSize = threadPoolSize
        self.connectionLimit = connectionLimit
        self.connectionTimeout = connectionTimeout
        self.requestTimeout = requestTimeout
        self.connectionMemoryLimit = connectionMemoryLimit
        self.maxBodyBytes = maxBodyBytes
        self.maxTargetBytes = maxTargetBytes
        self.maxQueryParameters = maxQueryParameters
        self.listenBacklog = listenBacklog
        self.tls = tls
    }

    /// A copy with changes applied.
    public func with(_ change: (inout HTTPServerConfiguration) -> Void) -> HTTPServerConfiguration {
        var copy = self
        change(&copy)
        return copy
    }

    /// The client-certificate policy a route ends up with.
    func clientCertificatePolicy(for options: HTTPRouteOptions) -> HTTPServerClientCertificatePolicy {
        options.clientCertificate ?? tls?.clientCertificatePolicy ?? .optional
    }

    /// The body limit a route ends up with.
    func maxBodyBytes(for options: HTTPRouteOptions) -> Int {
        options.maxBodyBytes ?? maxBodyBytes
    }

    /// `connectionTimeout` in whole seconds, rounded up (libmicrohttpd counts seconds); at least 1,
    /// because 0 would mean "never".
    var connectionTimeoutSeconds: Int {
        let (seconds, attoseconds) = connectionTimeout.components
        return max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }
}
