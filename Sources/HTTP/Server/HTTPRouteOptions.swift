// SPDX-License-Identifier: Apache-2.0

/// Whether a request must come with a verified TLS client certificate (mutual TLS).
public enum HTTPServerClientCertificatePolicy: Sendable, Hashable {
    /// Requests are served with or without one; handlers can read
    /// `HTTPServerRequest.hasVerifiedClientCertificate`.
    case optional
    /// Requests without a certificate signed by the configured client CA get 403 before the body
    /// is read and before the handler runs.
    case required
}

/// Per-route limits and policies; `nil` means "the server's default" from `HTTPServerConfiguration`.
///
/// ```swift
/// router.add(.post, "/wechat/notify", options: HTTPRouteOptions(maxBodyBytes: 64 * 1024)) { request in ... }
/// router.add(.post, "/secapi/pay/refund", options: HTTPRouteOptions(clientCertificate: .required)) { ... }
/// ```
public struct HTTPRouteOptions: Sendable, Hashable {
    /// The largest body accepted, in bytes. Larger bodies get 413 as soon as the size is known: at
    /// once from `Content-Length`, or when a chunked body passes the limit, without reading the rest.
    public var maxBodyBytes: Int?
    /// Whether this route requires a verified client certificate.
    public var clientCertificate: HTTPServerClientCertificatePolicy?

    public init(maxBodyBytes: Int? = nil, clientCertificate: HTTPServerClientCertificatePolicy? = nil) {
        precondition(maxBodyBytes.map { $0 >= 0 } ?? true, "maxBodyBytes must not be negative")
        self.maxBodyBytes = maxBodyBytes
        self.clientCertificate = clientCertificate
    }
}
