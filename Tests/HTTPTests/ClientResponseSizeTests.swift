// SPDX-License-Identifier: Apache-2.0
import HTTP
import HTTPClientTestSupport
import Testing

struct ClientResponseSizeTests {
    @Test func anAnnouncedBodyOverTheCapIsRefused() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient(.init(maxResponseBodyBytes: 1000)) { client in
                let error = await failure { try await client.execute(HTTPClientRequest(url: server.url("/bytes/1001"))) }
                #expect(error == .responseTooLarge)
                #expect(error?.mayHaveBeenDelivered == true)
            }
        }
    }

    @Test func aChunkedBodyOverTheCapIsAbortedWhileStreaming() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient(.init(maxResponseBodyBytes: 50_000)) { client in
                let error = await failure { try await client.execute(HTTPClientRequest(url: server.url("/chunked/2000000"))) }
                #expect(error == .responseTooLarge)
                // The client still works afterwards.
                let after = try await client.execute(HTTPClientRequest(url: server.url("/chunked/50000")))
                #expect(after.body.count == 50_000)
            }
        }
    }

    @Test func aBodyExactlyAtTheCapIsAccepted() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient(.init(maxResponseBodyBytes: 1000)) { client in
                let response = try await client.execute(HTTPClientRequest(url: server.url("/bytes/1000")))
                #expect(response.body.count == 1000)
            }
        }
    }

    @Test func aRequestMayRaiseOrLowerTheCap() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient(.init(maxResponseBodyBytes: 1000)) { client in
                let raised = HTTPClientRequest(url: server.url("/chunked/5000"), maxResponseBodyBytes: 5000)
                let response = try await client.execute(raised)
                #expect(response.body.count == 5000)
                let lowered = HTTPClientRequest(url: server.url("/bytes/10"), maxResponseBodyBytes: 9)
                #expect(await failure { try await client.execute(lowered) } == .responseTooLarge)
            }
        }
    }
}
