// SPDX-License-Identifier: Apache-2.0
import HTTP

/// How a webhook delivery reaches the business backend: one POST, answering the HTTP status.
/// Behind a protocol so the dispatcher can be driven without sockets; production uses `HTTPClient`.
public protocol FulfilmentTransport: Sendable {
    /// POSTs `body` to `url` with `headers`; returns the response status.
    /// - Throws: when no status arrived (connect failure, timeout, reset); the error's
    ///   `shortDescription` or type name becomes the event's `last_error`.
    func post(url: String, headers: [String: String], body: [UInt8], timeout: Duration) async throws -> Int
}

/// `FulfilmentTransport` over the libcurl `HTTPClient`.
public struct HTTPFulfilmentTransport: FulfilmentTransport {
    private let client: HTTPClient
    /// A receiver's answer is read only for its status; a larger body is cut off.
    static let responseLimit = 64 * 1024

    public init(client: HTTPClient) {
        self.client = client
    }

    public func post(url: String, headers: [String: String], body: [UInt8], timeout: Duration) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(
            method: .post, url: url, headers: HTTPHeaders(headers.map { ($0.key, $0.value) }), body: body,
            timeouts: .init(connect: min(timeout, .seconds(5)), total: timeout),
            maxResponseBodyBytes: Self.responseLimit))
        return response.status
    }
}
