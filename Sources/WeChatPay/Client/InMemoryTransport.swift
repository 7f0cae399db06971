// SPDX-License-Identifier: Apache-2.0

/// A transport that hands each request to a closure: no socket, no thread, no state of its own.
///
/// For tests, the simulator's in-process mode and benchmarks. The closure can verify what was sent,
/// answer like WeChat would, or throw a `TransportError` to play a timeout or a reset.
///
/// ```swift
/// let transport = InMemoryTransport { request in
///     #expect(request.path == "/pay/orderquery")
///     return TransportResponse(status: 200, body: try! FlatXML.encode(reply))
/// }
/// ```
public struct InMemoryTransport: WeChatPayTransport {
    public typealias Handler = @Sendable (TransportRequest) async throws(TransportError) -> TransportResponse

    private let handler: Handler

    public init(_ handler: @escaping Handler) {
        self.handler = handler
    }

    public func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        try await handler(request)
    }
}
