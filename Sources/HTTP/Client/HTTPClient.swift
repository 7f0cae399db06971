// SPDX-License-Identifier: Apache-2.0

/// An async HTTP/1.1 and HTTP/2 client on libcurl.
///
/// All transfers run on one dedicated thread through libcurl's multi interface, so no request
/// blocks the cooperative thread pool and concurrency costs no threads. Connections are kept alive
/// and reused across requests; connect and total timeouts, a response size cap and cancellation
/// apply to every request.
///
/// ```swift
/// let client = try HTTPClient(configuration: .init(tls: .init(caFile: "/etc/ssl/wechat-ca.pem")))
/// let response = try await client.execute(HTTPClientRequest(method: .post, url: url, body: xml))
/// await client.shutdown()
/// ```
///
/// Every non-2xx status is returned as a response; failures below HTTP throw ``HTTPClientError``,
/// which says whether the request may have reached the server. Call ``shutdown()`` before the last
/// reference goes away (debug builds check this).
///
/// libcurl resends a request by itself only when a kept-alive connection turns out to be closed
/// before any response byte arrived, the usual keep-alive race.
public final class HTTPClient: Sendable {
    /// The settings this client was made with.
    public let configuration: Configuration
    private let loop: CurlMultiLoop

    /// Starts the client's transfer thread.
    /// - Parameter configuration: timeouts, size cap, trust store and cache size; see ``Configuration``.
    /// - Throws: ``HTTPClientError/internalFailure`` when libcurl cannot be initialised.
    public init(configuration: Configuration = .init()) throws(HTTPClientError) {
        precondition(configuration.maxResponseBodyBytes >= 0, "maxResponseBodyBytes must not be negative")
        precondition(configuration.timeouts.connect > .zero && configuration.timeouts.total > .zero, "timeouts must be positive")
        self.configuration = configuration
        loop = try CurlMultiLoop(configuration: configuration)
    }

    deinit {
        assert(loop.isClosing, "HTTPClient deinitialized without shutdown()")
        loop.requestClose()
    }

    /// Sends a request and waits for the complete response.
    ///
    /// Cancelling the calling task removes the transfer at once and throws
    /// ``HTTPClientError/cancelled``.
    /// - Returns: the response, whatever its status.
    /// - Throws: ``HTTPClientError`` for every failure below HTTP.
    public func execute(_ request: HTTPClientRequest) async throws(HTTPClientError) -> HTTPClientResponse {
        try request.validate()
        let transfer = CurlTransfer(request: request, configuration: configuration)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                transfer.continuation = continuation
                loop.submit(transfer)
            }
        } onCancel: {
            transfer.markCancelled()
            loop.cancel(transfer)
        }
        return try result.get()
    }

    /// Fails requests still running with ``HTTPClientError/shutDown``, closes every connection and
    /// stops the transfer thread. Later requests fail with ``HTTPClientError/shutDown``. Safe to call
    /// more than once.
    public func shutdown() async {
        await loop.close()
    }
}
