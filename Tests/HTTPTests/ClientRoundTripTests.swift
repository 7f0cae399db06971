// SPDX-License-Identifier: Apache-2.0
import HTTP
import HTTPClientTestSupport
import Testing

struct ClientRoundTripTests {
    @Test func aPostSendsItsBodyAndHeadersAndReturnsTheResponse() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                let body = Array("<xml><return_code>SUCCESS</return_code></xml>".utf8)
                let response = try await client.execute(HTTPClientRequest(
                    method: .post, url: server.url("/echo"),
                    headers: ["Content-Type": "text/xml; charset=utf-8", "X-Custom": "yes"], body: body))
                #expect(response.status == 200)
                #expect(response.body == body)
                #expect(response.headers["x-method"] == "POST")
                #expect(response.headers["X-Path"] == "/echo")
                #expect(response.headers["X-Content-Type"] == "text/xml; charset=utf-8")
                #expect(response.headers["X-Custom"] == "yes")
            }
        }
    }

    @Test func aLargeBodyIsSentCompletely() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
                let response = try await client.execute(HTTPClientRequest(method: .put, url: server.url("/echo"), body: body))
                #expect(response.headers["X-Method"] == "PUT")
                #expect(response.body == body)
            }
        }
    }

    @Test func getAndHeadCarryNoBody() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                let get = try await client.execute(HTTPClientRequest(url: server.url("/bytes/5")))
                #expect(get.text == "xxxxx")
                let head = try await client.execute(HTTPClientRequest(method: .head, url: server.url("/bytes/5")))
                #expect(head.status == 200)
                #expect(head.body.isEmpty)
                #expect(head.headers["Content-Length"] == "5")
            }
        }
    }

    @Test func errorStatusesAreResponsesNotErrors() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                for status in [400, 404, 500, 503] {
                    let response = try await client.execute(HTTPClientRequest(url: server.url("/status/\(status)")))
                    #expect(response.status == status)
                    #expect(response.text == "status body")
                }
            }
        }
    }

    @Test func aConfiguredProxyReceivesTheRequestInAbsoluteForm() async throws {
        try await withPythonTestServer { proxy in
            try await withHTTPClient(.init(proxy: proxy.baseURL)) { client in
                // The target name does not resolve: only the proxy may be contacted.
                let response = try await client.execute(HTTPClientRequest(url: "http://wechat.example.invalid/pay/orderquery"))
                #expect(response.status == 200)
                #expect(response.headers["X-Path"] == "http://wechat.example.invalid/pay/orderquery")
            }
        }
    }

    @Test func headerInjectionAndForeignSchemesAreRefusedBeforeAnythingIsSent() async throws {
        try await withHTTPClient { client in
            let injected = HTTPClientRequest(url: "http://127.0.0.1:9/", headers: ["X-A": "1\r\nX-B: 2"])
            let error = await failure { try await client.execute(injected) }
            #expect(error == .invalidRequest)
            #expect(error?.mayHaveBeenDelivered == false)
            #expect(await failure { try await client.execute(HTTPClientRequest(url: "file:///etc/passwd")) } == .invalidRequest)
            #expect(await failure { try await client.execute(HTTPClientRequest(url: "http://a b/")) } == .invalidRequest)
        }
    }

    @Test func requestsAfterShutdownFailAsShutDown() async throws {
        let client = try HTTPClient()
        await client.shutdown()
        await client.shutdown()  // idempotent
        let error = await failure { try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:9/")) }
        #expect(error == .shutDown)
        #expect(error?.mayHaveBeenDelivered == false)
    }

    @Test func shutdownFailsARequestStillWaitingForItsAnswer() async throws {
        try await withPythonTestServer(.silent) { server in
            let client = try HTTPClient()
            async let outcome = failure { try await client.execute(quickRequest(server.url("/"), total: .seconds(30))) }
            // Let the request reach the server before shutting down; bounded by the request's own timeout.
            try await Task.sleep(for: .milliseconds(300))
            await client.shutdown()
            let error = await outcome
            #expect(error == .shutDown)
        }
    }
}
