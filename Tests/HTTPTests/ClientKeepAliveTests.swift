// SPDX-License-Identifier: Apache-2.0
import HTTP
import HTTPClientTestSupport
import Testing

struct ClientKeepAliveTests {
    @Test func sequentialRequestsReuseOneConnection() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                var opened: [Bool] = []
                for index in 0..<20 {
                    let response = try await client.execute(
                        HTTPClientRequest(method: .post, url: server.url("/echo"), body: Array("\(index)".utf8)))
                    #expect(response.text == "\(index)")
                    opened.append(response.openedNewConnection)
                }
                #expect(opened == [true] + Array(repeating: false, count: 19))
                // The server's own count, over the same kept-alive connection.
                let connections = try await client.execute(HTTPClientRequest(url: server.url("/connections")))
                #expect(connections.text == "1")
            }
        }
    }

    @Test func concurrentRequestsShareAPoolOfConnections() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                // Four rounds of 8 concurrent requests: later rounds reuse the first round's connections.
                for _ in 0..<4 {
                    try await withThrowingTaskGroup(of: Int.self) { group in
                        for _ in 0..<8 {
                            group.addTask { try await client.execute(HTTPClientRequest(url: server.url("/bytes/3"))).status }
                        }
                        for try await status in group { #expect(status == 200) }
                    }
                }
                let connections = try #require(Int(try await client.execute(HTTPClientRequest(url: server.url("/connections"))).text))
                #expect(connections >= 1)
                #expect(connections <= 8)
            }
        }
    }

    @Test func keepAliveAlsoWorksOverTLS() async throws {
        try await withPythonTestServer(.https) { server in
            try await withHTTPClient(.init(tls: .init(caFile: TestCertificates.ca))) { client in
                for _ in 0..<5 {
                    let response = try await client.execute(HTTPClientRequest(url: server.url("/bytes/2")))
                    #expect(response.status == 200)
                }
                let connections = try await client.execute(HTTPClientRequest(url: server.url("/connections")))
                #expect(connections.text == "1")
            }
        }
    }
}
