// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import HTTPClientTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Routing over real sockets: URLSession for ordinary requests, raw sockets where the request
/// must be malformed on purpose.
@Suite struct ServerRoutingTests {
    /// A router echoing what it was given, as `name=value` lines.
    static func echoRouter() -> HTTPRouter {
        var router = HTTPRouter()
        router.add(.get, "/v1/orders/{out_trade_no}") { request in
            var lines = [
                "route=\(request.routeTemplate)", "out_trade_no=\(request.pathParameters["out_trade_no"] ?? "-")",
            ]
            for item in request.query { lines.append("query.\(item.name)=\(item.value)") }
            return .text(lines.joined(separator: "\n"))
        }
        router.add(.post, "/v1/orders/{id}/close") { request in
            .text("closed \(request.pathParameters["id"] ?? "-") body=\(String(decoding: request.body, as: UTF8.self))")
        }
        router.addImmediate(.get, "/v1/orders/export") { _ in .text("export") }
        router.addImmediate(.post, "/v1/orders") { request in
            .json(#"{"received":\#(request.body.count)}"#, status: 201)
        }
        router.addImmediate(.get, "/whoami") { request in
            .text("id=\(request.requestID) peer=\(request.remoteAddress?.host ?? "-") secure=\(request.isSecure)")
        }
        return router
    }

    @Test func pathParametersAndTheQueryReachTheHandlerDecoded() async throws {
        try await withServer(Self.echoRouter()) { _, address in
            let url = address.url("/v1/orders/T1001?wait=25&tag=a&tag=b%20c&flag&sp=x+y&plus=%2B")
            let (status, _, data) = try await urlSessionRequest(URLRequest(url: url))
            #expect(status == 200)
            #expect(
                String(decoding: data, as: UTF8.self) == """
                    route=/v1/orders/{out_trade_no}
                    out_trade_no=T1001
                    query.wait=25
                    query.tag=a
                    query.tag=b c
                    query.flag=
                    query.sp=x y
                    query.plus=+
                    """)
        }
    }

    @Test func anEncodedSlashStaysInsideItsPathParameter() async throws {
        try await withServer(Self.echoRouter()) { _, address in
            let response = try await rawRequest(address, "GET /v1/orders/A%2FB%E4%B8%AD HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(response.status == 200)
            #expect(response.text.contains("out_trade_no=A/B中"))
        }
    }

    @Test func aPostWithABodyReachesTheNestedParameterRoute() async throws {
        try await withServer(Self.echoRouter()) { _, address in
            var request = URLRequest(url: address.url("/v1/orders/T77/close"))
            request.httpMethod = "POST"
            request.httpBody = Data("reason=timeout".utf8)
            let (status, _, data) = try await urlSessionRequest(request)
            #expect(status == 200)
            #expect(String(decoding: data, as: UTF8.self) == "closed T77 body=reason=timeout")
        }
    }

    @Test func anImmediateRouteAnswersWithItsStatusAndContentType() async throws {
        try await withServer(Self.echoRouter()) { _, address in
            var request = URLRequest(url: address.url("/v1/orders"))
            request.httpMethod = "POST"
            request.httpBody = Data(repeating: 7, count: 300)
            let (status, headers, data) = try await urlSessionRequest(request)
            #expect(status == 201)
            #expect(headers["content-type"] == "application/json")
            #expect(String(decoding: data, as: UTF8.self) == #"{"received":300}"#)
        }
    }

    @Test func aLiteralSegmentWinsOverAParameter() async throws {
        try await withServer(Self.echoRouter()) { _, address in
            let response = try await rawRequest(address, "GET /v1/orders/export HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(response.text == "export")
        }
    }

    @Test func anUnknownPathGets404() async throws {
        try await withServer(Self.echoRouter()) { _, address in
            let (status, _, _) = try await urlSessionRequest(URLRequest(url: address.url("/v2/nothing")))
            #expect(status == 404)
            let trailing = try await rawRequest(address, "GET /v1/orders/ HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(trailing.status == 404, "an empty parameter does not match")
        }
    }

    @Test func aKnownPathWithTheWrongMethodGets405WithAllow() async throws {
        try await withServer(Self.echoRouter()) { _, address in
            var request = URLRequest(url: address.url("/v1/orders/T1"))
            request.httpMethod = "DELETE"
            let (status, headers, _) = try await urlSessionRequest(request)
            #expect(status == 405)
            #expect(headers["allow"] == "GET, HEAD")

            let close = try await rawRequest(address, "GET /v1/orders/T1/close HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(close.status == 405)
            #expect(close.header("Allow") == "POST")

            let collection = try await rawRequest(
                address, "PUT /v1/orders HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
            #expect(collection.status == 405)
            #expect(collection.header("Allow") == "POST")
        }
    }

    @Test func headIsAnsweredByTheGetRouteWithoutABody() async throws {
        try await withServer(Self.echoRouter()) { _, address in
            let response = try await offPool {
                let connection = try RawConnection(to: address)
                connection.send("HEAD /v1/orders/export HTTP/1.1\r\nHost: x\r\n\r\n")
                let head = try connection.readResponseHeadOnly()
                // The same connection still works: no stray body bytes were sent.
                connection.send("GET /v1/orders/export HTTP/1.1\r\nHost: x\r\n\r\n")
                return (head, try connection.readResponse())
            }
            #expect(response.0.status == 200)
            #expect(response.0.header("Content-Length") == "6")
            #expect(response.1.text == "export")
        }
    }

    @Test func malformedEscapesGet400() async throws {
        try await withServer(Self.echoRouter()) { _, address in
            let badPath = try await rawRequest(address, "GET /v1/orders/%zz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(badPath.status == 400)
            let badUTF8 = try await rawRequest(address, "GET /v1/orders/%C3%28 HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(badUTF8.status == 400)
            let nul = try await rawRequest(address, "GET /v1/orders/a%00b HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(nul.status == 400)
            let badQuery = try await rawRequest(address, "GET /v1/orders/T1?wait=%4 HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(badQuery.status == 400)
        }
    }

    @Test func rawBytesThatAreNotUTF8Get400AsTheirEscapesDoAndRawUTF8IsTaken() async throws {
        try await withServer(Self.echoRouter()) { _, address in
            let answers = try await offPool {
                var answers: [RawResponse] = []
                for target: [UInt8] in [
                    Array("/v1/orders/A".utf8) + [0xFF],
                    Array("/v1/orders/T1?wait=".utf8) + [0xC3, 0x28],
                    Array("/v1/orders/T1?".utf8) + [0xFE] + Array("=1".utf8),
                    Array("/v1/orders/".utf8) + Array("中".utf8),
                ] {
                    let connection = try RawConnection(to: address)
                    _ = connection.send(Array("GET ".utf8) + target + Array(" HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
                    answers.append(try connection.readResponse())
                }
                return answers
            }
            #expect(answers.map(\.status) == [400, 400, 400, 200])
            #expect(answers[3].text.contains("中"), "\(answers[3].text)")
        }
    }

    @Test func handlersSeeARequestIDAndThePeerAddress() async throws {
        try await withServer(Self.echoRouter()) { _, address in
            let first = try await rawRequest(address, "GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n")
            let second = try await rawRequest(address, "GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(first.text.hasSuffix("peer=127.0.0.1 secure=false"))
            let ids = [first.text, second.text].compactMap { text in
                text.split(separator: " ").first.flatMap { UInt64($0.dropFirst("id=".count)) }
            }
            #expect(ids.count == 2 && ids[0] != ids[1] && ids.allSatisfy { $0 > 0 })
        }
    }

    struct Conflict: HTTPServerResponseError {
        var response: HTTPServerResponse { .text("order exists", status: 409) }
    }

    struct SecretLeak: Error, CustomStringConvertible {
        var description: String { "api key 192006250b4c09247ec02edce69f6a2d" }
    }

    @Test func thrownErrorsBecomeTheirOwnResponseOrAnOpaque500() async throws {
        var router = HTTPRouter()
        router.add(.get, "/conflict") { _ in throw Conflict() }
        router.add(.get, "/leak") { _ in throw SecretLeak() }
        router.addImmediate(.get, "/leak-now") { _ in throw SecretLeak() }
        try await withServer(router) { _, address in
            let conflict = try await rawRequest(address, "GET /conflict HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(conflict.status == 409)
            #expect(conflict.text == "order exists")
            for path in ["/leak", "/leak-now"] {
                let leak = try await rawRequest(address, "GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(leak.status == 500)
                #expect(!leak.text.contains("192006250b"))
            }
        }
    }

    @Test func aResponseHeaderWithALineBreakOrAnInformationalStatusIsNeverSent() async throws {
        var router = HTTPRouter()
        router.add(.get, "/informational") { _ in HTTPServerResponse(status: 102) }
        router.addImmediate(.get, "/split") { _ in
            HTTPServerResponse(status: 200, headers: ["X-Injected": "a\r\nSet-Cookie: pwned=1"], body: [])
        }
        try await withServer(router) { _, address in
            let response = try await rawRequest(address, "GET /split HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(response.status == 500)
            #expect(response.header("Set-Cookie") == nil)
            let informational = try await rawRequest(address, "GET /informational HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(informational.status == 500)
        }
    }

    @Test func anOversizedURLOrHeaderIsRefusedByTheMemoryLimit() async throws {
        let configuration = HTTPServerConfiguration(connectionMemoryLimit: 8 * 1024)
        try await withServer(Self.echoRouter(), configuration) { _, address in
            let longPath = "/v1/orders/" + String(repeating: "a", count: 12 * 1024)
            let url = try await rawRequest(address, "GET \(longPath) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(url.status == 414)
            let bigHeader = "X-Big: " + String(repeating: "b", count: 12 * 1024)
            let header = try await rawRequest(address, "GET /whoami HTTP/1.1\r\nHost: x\r\n\(bigHeader)\r\n\r\n")
            #expect(header.status == 431)
        }
    }
}
