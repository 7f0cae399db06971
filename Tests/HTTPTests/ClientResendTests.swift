// SPDX-License-Identifier: Apache-2.0
import HTTP
import HTTPClientTestSupport
import Testing

/// A request the server read and then dropped without a byte of answer is the caller's to repeat,
/// never the client's: libcurl resends such a request by itself on a fresh connection when the
/// dropped one was a reused keep-alive connection, so the server got it twice, with the same bytes,
/// and the caller heard only of the second. (The battery's T3 and T8 found it: upstream faults
/// missing from the gateway's metrics, orderqueries 1 ms apart, WeChat's nonce_str sent twice.)
struct ClientResendTests {
    @Test func aRequestDroppedOnAReusedConnectionFailsAndReachesTheServerOnce() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                let first = try await client.execute(HTTPClientRequest(method: .post, url: server.url("/echo"), body: Array("a".utf8)))
                #expect(first.openedNewConnection)
                do {
                    let answer = try await client.execute(
                        HTTPClientRequest(method: .post, url: server.url("/drop"), body: Array("<xml>b</xml>".utf8)))
                    Issue.record("a dropped request answered \(answer.status)")
                } catch let error as HTTPClientError {
                    #expect(error == .receiveFailed, "\(error)")
                    #expect(error.mayHaveBeenDelivered)
                }
                // The server's count of requests before this one: the echo and the drop, once.
                let requests = try await client.execute(HTTPClientRequest(url: server.url("/requests")))
                #expect(requests.text == "2")
                // The connection cache recovers: the next request is answered.
                let after = try await client.execute(HTTPClientRequest(method: .post, url: server.url("/echo"), body: Array("c".utf8)))
                #expect(after.text == "c")
            }
        }
    }

    @Test func aBodyIsSentWholeOverAFreshAndAReusedConnection() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                let large = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 % 251) }
                for body in [Array("small".utf8), large, [], [0, 0, 1]] {
                    let response = try await client.execute(HTTPClientRequest(method: .post, url: server.url("/echo"), body: body))
                    #expect(response.body == body)
                }
            }
        }
    }
}
