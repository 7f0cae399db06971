// SPDX-License-Identifier: Apache-2.0

/// A complete HTTP response. Every status, including 4xx and 5xx, arrives here: what a status means
/// is the caller's decision.
public struct HTTPClientResponse: Sendable, Hashable {
    /// The status code of the final response (after any `100 Continue`).
    public var status: Int
    /// The final response's header fields.
    public var headers: HTTPHeaders
    /// The body, at most the request's size cap.
    public var body: [UInt8]
    /// Whether this request opened a new connection rather than reusing a kept-alive one
    /// (`CURLINFO_NUM_CONNECTS`).
    public var openedNewConnection: Bool

    /// A response, as the client builds it (public for tests and in-memory fakes).
    public init(status: Int, headers: HTTPHeaders = [:], body: [UInt8] = [], openedNewConnection: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.openedNewConnection = openedNewConnection
    }
}
