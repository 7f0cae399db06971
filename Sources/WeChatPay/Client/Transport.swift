// SPDX-License-Identifier: Apache-2.0

/// One HTTPS POST to a WeChat Pay endpoint, as the client pipeline hands it to a transport.
public struct TransportRequest: Sendable, Hashable {
    /// The endpoint path, e.g. `/pay/unifiedorder` or `/secapi/pay/refund`; the transport owns the
    /// host (and its failover to the backup domain).
    public var path: String
    /// The signed XML body.
    public var body: [UInt8]
    /// `/secapi/` endpoints need the merchant's client certificate (mutual TLS).
    public var needsClientCertificate: Bool

    public init(path: String, body: [UInt8], needsClientCertificate: Bool = false) {
        self.path = path
        self.body = body
        self.needsClientCertificate = needsClientCertificate
    }
}

/// What came back: any HTTP status and the raw body. The pipeline, not the transport, decides what
/// a non-2xx status means.
public struct TransportResponse: Sendable, Hashable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

/// How a request failed to complete, as far as retry policy needs to know.
///
/// The key question for a payment is whether WeChat may have received and acted on the request:
/// a DNS or connect failure means certainly not (safe to retry anywhere); a timeout or a reset after
/// sending means maybe (retry only with identical parameters, or query first).
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case dns, connect, tls, timeout, connectionReset, responseTooLarge, other
    }

    public var kind: Kind
    /// Whether the request may have reached WeChat.
    public var mayHaveBeenDelivered: Bool

    public init(kind: Kind, mayHaveBeenDelivered: Bool) {
        self.kind = kind
        self.mayHaveBeenDelivered = mayHaveBeenDelivered
    }

    public var description: String {
        "transport failure (\(kind.rawValue))" + (mayHaveBeenDelivered ? ", request may have been delivered" : "")
    }
}

/// The network, behind one method, so the libcurl client plugs in for production and tests use an
/// in-memory transport. Implementations throw `TransportError` for failures below HTTP.
public protocol WeChatPayTransport: Sendable {
    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse
}
