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
    /// The body of this route's 413 (with its `Content-Type`), when its clients need more than the
    /// plain-text default: a JSON error an app can act on. At most 1 KiB, so it fits the socket
    /// buffer when it is written while the body is still arriving.
    public var payloadTooLarge: (contentType: String, body: [UInt8])? {
        get { tooLarge.map { ($0.contentType, $0.body) } }
        set { tooLarge = newValue.map { TooLarge(contentType: $0.contentType, body: $0.body) } }
    }
    struct TooLarge: Sendable, Hashable {
        var contentType: String
        var body: [UInt8]
    }
    var tooLarge: TooLarge?
    /// Whether a request whose client leaves (closes or resets its connection) while its handler
    /// runs is cancelled: the task of an async handler, or what a deferred handler registered with
    /// `HTTPServerResponder.onCancel`. For long polls, which would otherwise hold what they hold
    /// until their time runs out; never for a write, which should finish what it started. The
    /// server looks about once a second (`HTTPServerConfiguration.requestTimeout` / 4 at most).
    /// A client that only half-closes, sending its request and then FIN, counts as gone, as
    /// nginx counts it: a long poll then answers at once with what it has; so does one that sends
    /// 64 KiB or more past its request (`ClientDeparture.unreadLimit`).
    public var cancelledWhenClientLeaves: Bool

    public init(maxBodyBytes: Int? = nil, clientCertificate: HTTPServerClientCertificatePolicy? = nil,
                payloadTooLarge: (contentType: String, body: [UInt8])? = nil, cancelledWhenClientLeaves: Bool = false) {
        precondition(maxBodyBytes.map { $0 >= 0 } ?? true, "maxBodyBytes must not be negative")
        precondition((payloadTooLarge?.body.count ?? 0) <= 1024, "a 413 body must be at most 1 KiB")
        self.maxBodyBytes = maxBodyBytes
        self.clientCertificate = clientCertificate
        self.cancelledWhenClientLeaves = cancelledWhenClientLeaves
        self.payloadTooLarge = payloadTooLarge
    }

    /// The 413 this route answers.
    var payloadTooLargeResponse: HTTPServerResponse {
        guard let tooLarge else { return .payloadTooLarge }
        var headers = HTTPHeaders()
        headers["Content-Type"] = tooLarge.contentType
        return HTTPServerResponse(status: 413, headers: headers, body: tooLarge.body)
    }
}
