// SPDX-License-Identifier: Apache-2.0
import HTTP

/// Runs `body` with a fresh client and shuts the client down afterwards, whether `body` throws or not.
public func withHTTPClient<T>(
    _ configuration: HTTPClient.Configuration = .init(),
    _ body: (HTTPClient) async throws -> T
) async throws -> T {
    let client = try HTTPClient(configuration: configuration)
    do {
        let result = try await body(client)
        await client.shutdown()
        return result
    } catch {
        await client.shutdown()
        throw error
    }
}

extension HTTPClientResponse {
    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }
}

extension PythonTestServer {
    /// How many requests the (http-mode) server has answered so far, asked over a separate client
    /// that trusts the test CA.
    public func answeredRequests() async throws -> Int {
        try await withHTTPClient(.init(tls: .init(caFile: TestCertificates.ca))) { client in
            let response = try await client.execute(HTTPClientRequest(url: url("/requests")))
            guard let count = Int(response.text) else { throw TestServerError(message: "bad /requests answer") }
            return count
        }
    }
}
