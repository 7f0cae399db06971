// SPDX-License-Identifier: Apache-2.0

/// A complete HTTP request as a handler sees it: the body is fully read (and within the route's
/// limit) before the handler runs.
///
/// Handlers get requests from the server; tests can build them by hand with the memberwise
/// initializer and call a handler directly, with no socket.
public struct HTTPServerRequest: Sendable {
    /// The method as sent (unknown methods are kept verbatim).
    public var method: HTTPMethod
    /// The path as sent, still percent-encoded, without the query (e.g. `/v1/orders/T%2F1`).
    public var path: String
    /// The template of the route that matched (e.g. `/v1/orders/{out_trade_no}`): the label to use
    /// for metrics and logs, where the raw path would leak identifiers and blow up cardinality.
    public var routeTemplate: String
    /// The decoded values of the route's `{name}` segments.
    public var pathParameters: HTTPServerPathParameters
    /// The decoded query-string parameters.
    public var query: HTTPServerQuery
    /// The request's header fields, in order.
    public var headers: HTTPHeaders
    /// The body, complete.
    public var body: [UInt8]
    /// Unique per server instance, increasing from 1: correlates log lines of one request.
    public var requestID: UInt64
    /// The peer's address (the TCP peer: a proxy, if one is in front).
    public var remoteAddress: HTTPServerSocketAddress?
    /// Whether the request arrived over TLS.
    public var isSecure: Bool
    /// Whether the client presented a certificate that chains to the server's client CA and allows
    /// client authentication. Always false on plain HTTP or when no client CA is configured.
    public var hasVerifiedClientCertificate: Bool
    /// Whether the client presented a certificate that does not verify (another CA's, expired,
    /// not for client authentication): what a front end that checks every certificate refuses.
    public var hasRejectedClientCertificate = false

    public init(
        method: HTTPMethod,
        path: String,
        routeTemplate: String = "",
        pathParameters: HTTPServerPathParameters = HTTPServerPathParameters(),
        query: HTTPServerQuery = HTTPServerQuery(),
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        requestID: UInt64 = 0,
        remoteAddress: HTTPServerSocketAddress? = nil,
        isSecure: Bool = false,
        hasVerifiedClientCertificate: Bool = false
    ) {
        self.method = method
        self.path = path
        self.routeTemplate = routeTemplate
        self.pathParameters = pathParameters
        self.query = query
        self.headers = headers
        self.body = body
        self.requestID = requestID
        self.remoteAddress = remoteAddress
        self.isSecure = isSecure
        self.hasVerifiedClientCertificate = hasVerifiedClientCertificate
    }
}
