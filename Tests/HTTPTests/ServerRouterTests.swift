// SPDX-License-Identifier: Apache-2.0
import HTTP
import Testing

/// The router and the request value types, in-process (no socket): `HTTPRouter.respond(to:)` runs
/// the same routing and policies as the server.
@Suite struct ServerRouterTests {
    static func router() -> HTTPRouter {
        var router = HTTPRouter()
        router.add(.get, "/v1/orders/{out_trade_no}") { request in
            .text("\(request.routeTemplate) \(request.pathParameters["out_trade_no"] ?? "-")")
        }
        router.add(.post, "/v1/orders/{out_trade_no}/close") { request in
            .text("close \(request.pathParameters["out_trade_no"] ?? "-")")
        }
        router.addImmediate(.get, "/v1/orders/export") { _ in .text("export") }
        router.addImmediate(.post, "/v1/orders/export") { _ in .text("export posted") }
        router.add(.delete, "/v1/items/{id}") { _ in .text("deleted") }
        router.add(.get, "/v1/{kind}/{id}") { request in
            .text("generic \(request.pathParameters["kind"] ?? "-") \(request.pathParameters["id"] ?? "-")")
        }
        router.add(.post, "/wechat/notify", options: HTTPRouteOptions(maxBodyBytes: 16)) { request in
            .text("notify \(request.body.count)")
        }
        router.add(.post, "/secapi/pay/refund", options: HTTPRouteOptions(clientCertificate: .required)) { _ in
            .text("refund")
        }
        return router
    }

    static func respond(_ method: HTTPMethod, _ path: String, body: [UInt8] = [], verified: Bool = false) async
        -> HTTPServerResponse
    {
        await router().respond(
            to: HTTPServerRequest(method: method, path: path, body: body, hasVerifiedClientCertificate: verified))
    }

    @Test func aParameterRouteFillsTheTemplateAndTheDecodedParameter() async {
        let response = await Self.respond(.get, "/v1/orders/T%201")
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "/v1/orders/{out_trade_no} T 1")
    }

    @Test func literalsWinAndOtherwiseTheFirstMatchingTemplateServes() async {
        #expect(String(decoding: await Self.respond(.get, "/v1/orders/export").body, as: UTF8.self) == "export")
        #expect(String(decoding: await Self.respond(.post, "/v1/orders/export").body, as: UTF8.self) == "export posted")
        // /v1/items/7 matches /v1/items/{id} (DELETE only) and /v1/{kind}/{id} (GET): GET is served.
        #expect(String(decoding: await Self.respond(.get, "/v1/items/7").body, as: UTF8.self) == "generic items 7")
    }

    @Test func methodNotAllowedListsEveryMethodOfEveryMatchingTemplate() async {
        let response = await Self.respond(.put, "/v1/items/7")
        #expect(response.status == 405)
        #expect(response.headers["Allow"] == "DELETE, GET, HEAD")
        let close = await Self.respond(.get, "/v1/orders/T1/close")
        #expect(close.headers["Allow"] == "POST")
    }

    @Test func headFallsBackToGet() async {
        let response = await Self.respond(.head, "/v1/orders/T9")
        #expect(response.status == 200)
    }

    @Test func unmatchedAndMalformedPathsAreRefused() async {
        #expect(await Self.respond(.get, "/nothing").status == 404)
        #expect(await Self.respond(.get, "/v1/orders/T1/close/extra").status == 404)
        #expect(await Self.respond(.get, "relative").status == 404)
        #expect(await Self.respond(.get, "/v1/orders/%G1").status == 400)
        #expect(await Self.respond(.get, "/v1/orders/%").status == 400)
    }

    @Test func anEncodedSlashNeverMatchesALiteralSeparator() async {
        // Decoded, "/v1/orders%2Fexport" would read "/v1/orders/export"; it must not reach that route.
        #expect(await Self.respond(.get, "/v1/orders%2Fexport").status == 404)
        let parameter = await Self.respond(.get, "/v1/orders/a%2Fb")
        #expect(String(decoding: parameter.body, as: UTF8.self) == "/v1/orders/{out_trade_no} a/b")
    }

    @Test func routePoliciesApplyInProcessToo() async {
        #expect(await Self.respond(.post, "/wechat/notify", body: Array(repeating: 1, count: 16)).status == 200)
        #expect(await Self.respond(.post, "/wechat/notify", body: Array(repeating: 1, count: 17)).status == 413)
        #expect(await Self.respond(.post, "/secapi/pay/refund").status == 403)
        #expect(await Self.respond(.post, "/secapi/pay/refund", verified: true).status == 200)
    }

    @Test func aQueryStringDecodesPlusPercentAndRepeats() throws {
        let query = try #require(
            HTTPServerQuery(parsing: "wait=25&tag=a&tag=b%26c&name=J+Doe&empty=&flag&&%E4%B8%AD=%E6%96%87"))
        #expect(query["wait"] == "25")
        #expect(query.values(for: "tag") == ["a", "b&c"])
        #expect(query["name"] == "J Doe")
        #expect(query["empty"] == "")
        #expect(query["flag"] == "")
        #expect(query["中"] == "文")
        #expect(query["missing"] == nil)
        #expect(query.count == 7)
        #expect(Array(query).first == HTTPServerQuery.Item(name: "wait", value: "25"))
    }

    @Test func aMalformedQueryStringIsRejected() {
        #expect(HTTPServerQuery(parsing: "a=%2") == nil)
        #expect(HTTPServerQuery(parsing: "a=%FF") == nil, "not UTF-8")
        #expect(HTTPServerQuery(parsing: "a=%00") == nil, "NUL")
        #expect(HTTPServerQuery(parsing: "")?.isEmpty == true)
    }

    @Test func headerNamesCompareWithoutCaseAndKeepRepeats() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain", "Set-Cookie": "a=1"]
        headers.add(name: "set-cookie", value: "b=2")
        #expect(headers["content-TYPE"] == "text/plain")
        #expect(headers.values(for: "SET-COOKIE") == ["a=1", "b=2"])
        headers["Set-Cookie"] = "c=3"
        #expect(headers.values(for: "set-cookie") == ["c=3"])
        headers["Content-Type"] = nil
        #expect(!headers.contains("content-type"))
        #expect(headers.count == 1)
        #expect(headers["Content-Typ"] == nil && headers["Content-Types"] == nil)
        // The client builds them from pairs, in order, repeats kept.
        let pairs = HTTPHeaders([("Accept", "a"), ("accept", "b")])
        #expect(pairs.values(for: "ACCEPT") == ["a", "b"] && pairs.map(\.value) == ["a", "b"])
    }

    @Test func socketAddressesParseNumericHostsOnly() throws {
        let v4 = try #require(HTTPServerSocketAddress(host: "10.1.2.3", port: 8080))
        #expect(v4.description == "10.1.2.3:8080")
        #expect(!v4.isIPv6)
        let v6 = try #require(HTTPServerSocketAddress(host: "::1", port: 443))
        #expect(v6.description == "[::1]:443")
        #expect(HTTPServerSocketAddress(host: "localhost", port: 1)?.host == "127.0.0.1")
        #expect(HTTPServerSocketAddress(host: "example.com", port: 1) == nil)
        #expect(HTTPServerSocketAddress(host: "999.1.1.1", port: 1) == nil)
    }

    @Test func configurationCopiesChangeOnlyWhatIsAsked() {
        let base = HTTPServerConfiguration()
        let changed = base.with { $0.connectionTimeout = .seconds(3) }
        #expect(changed.connectionTimeout == .seconds(3))
        #expect(changed.maxBodyBytes == base.maxBodyBytes)
        #expect(base.connectionTimeout == .seconds(15))
    }
}
