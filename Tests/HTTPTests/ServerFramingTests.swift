// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import HTTP
import HTTPClientTestSupport
import Synchronization
import TestSupport
import Testing

/// Request smuggling primitives (RFC 9112 §6.1, §6.3): a request whose body length two parsers
/// could read two ways is answered 400 (or 501 for a transfer coding the server does not know) at
/// once, and its connection closed, so nothing after it on that connection is ever read as a
/// request. Driven by raw sockets: no client library would send these.
@Suite struct ServerFramingTests {
    /// Counts the requests each path's handler saw, so a smuggled request would show.
    final class Seen: Sendable {
        private let paths = Mutex<[String]>([])
        func add(_ path: String) { paths.withLock { $0.append(path) } }
        var all: [String] { paths.withLock { $0 } }
    }

    static func router(_ seen: Seen) -> HTTPRouter {
        var router = HTTPRouter()
        router.add(.post, "/upload") { request in
            seen.add(request.path)
            return .text("got \(request.body.count)")
        }
        router.addImmediate(.post, "/upload-now") { request in
            seen.add(request.path)
            return .text("got \(request.body.count)")
        }
        router.add(.get, "/smuggled") { request in
            seen.add(request.path)
            return .text("smuggled")
        }
        router.add(.get, "/search") { request in
            seen.add(request.path)
            return .text("\(request.query.count) parameters")
        }
        return router
    }

    /// Sends `request` on a fresh connection; returns the response (or nil when the connection ended
    /// without one) and whether the server then closed the connection.
    static func exchange(_ address: HTTPServerSocketAddress, _ request: String) async throws -> (RawResponse?, Bool) {
        try await offPool {
            let connection = try RawConnection(to: address, receiveTimeout: .seconds(60))
            connection.send(request)
            let response = try? connection.readResponse()
            return (response, connection.isClosedByPeer(within: .seconds(30)))
        }
    }

    static let smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

    @Test(arguments: ["/upload", "/upload-now"])
    func contentLengthWithTransferEncodingIs400AndTheConnectionCloses(path: String) async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { _, address in
            // A front end reading Content-Length sees one request with a 40-byte body; a back end
            // reading chunked sees an empty body, then `GET /smuggled`.
            let (response, closed) = try await Self.exchange(
                address,
                "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                    + Self.smuggled)
            #expect(response?.status == 400)
            #expect(response?.text == "bad request: Content-Length and Transfer-Encoding together\n")
            #expect(response?.header("Connection")?.lowercased() == "close")
            #expect(closed)
            #expect(seen.all.isEmpty, "no handler ran, the smuggled request least of all: \(seen.all)")
        }
    }

    @Test(arguments: [("5", "6"), ("5", "5"), ("0", "35")])
    func aSecondContentLengthIs400AndTheConnectionCloses(first: String, second: String) async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { _, address in
            let body = "hello" + String(repeating: "x", count: 30)
            let (response, closed) = try await Self.exchange(
                address,
                "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: \(first)\r\nContent-Length: \(second)\r\n\r\n"
                    + body + Self.smuggled)
            #expect(response?.status == 400)
            #expect(response?.text == "bad request: more than one Content-Length\n")
            #expect(closed)
            #expect(seen.all.isEmpty, "\(seen.all)")
        }
    }

    @Test(arguments: [
        ("chunked, identity", 400), ("identity", 400), ("xchunked", 400), ("chunked;ext=1", 400), ("chunked, chunked", 400),
        ("", 400), ("gzip, chunked", 501),
    ])
    func aTransferEncodingOtherThanChunkedIsRefusedAtOnce(encoding: String, status: Int) async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { _, address in
            let (response, closed) = try await Self.exchange(
                address, "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \(encoding)\r\n\r\n0\r\n\r\n" + Self.smuggled)
            #expect(response?.status == status, "\(encoding)")
            #expect(closed, "\(encoding)")
            #expect(seen.all.isEmpty, "\(encoding): \(seen.all)")
        }
    }

    @Test func twoTransferEncodingFieldsAreOneListAndRefused() async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { _, address in
            let (response, closed) = try await Self.exchange(
                address,
                "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n"
                    + Self.smuggled)
            #expect(response?.status == 400)
            #expect(closed)
            #expect(seen.all.isEmpty)
        }
    }

    @Test(arguments: ["Transfer-Encoding : chunked", "Transfer-Encoding\t: chunked", "Content-Length : 5"])
    func whitespaceBeforeAHeaderNamesColonIs400(field: String) async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { _, address in
            // A lenient proxy reads `Transfer-Encoding : chunked` as chunked; libmicrohttpd kept it as
            // another name and read no body, so the chunks ran as the next request.
            let (response, closed) = try await Self.exchange(
                address, "POST /upload HTTP/1.1\r\nHost: x\r\n\(field)\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + Self.smuggled)
            #expect(response?.status == 400, "\(field)")
            #expect(response?.text == "bad request: whitespace in a header name, or a folded (obs-fold) field\n")
            #expect(closed)
            #expect(seen.all.isEmpty, "\(seen.all)")
        }
    }

    @Test("Transfer-Encoding with whitespace around chunked is answered 400 at once, never left unanswered",
          arguments: ["chunked ", "chunked\t"])
    func transferEncodingWithTrailingWhitespaceIs400(value: String) async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { _, address in
            let (response, closed) = try await Self.exchange(
                address, "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \(value)\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + Self.smuggled)
            #expect(response?.status == 400)
            #expect(closed)
            #expect(seen.all.isEmpty, "\(seen.all)")
        }
    }

    @Test("A framing field folded onto a continuation line (obs-fold) is answered 400, even beside Content-Length",
          arguments: ["Transfer-Encoding:\r\n chunked", "Transfer-Encoding:\r\n\tchunked", "Content-Length:\r\n 5"])
    func aFoldedFramingFieldIs400(field: String) async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { _, address in
            let (response, closed) = try await Self.exchange(
                address, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\(field)\r\n\r\nhello" + Self.smuggled)
            #expect(response?.status == 400, "\(field)")
            #expect(closed)
            #expect(seen.all.isEmpty, "\(seen.all)")
        }
    }

    @Test("A bare CR inside a header value, which a proxy may take as a line end, is answered 400 before any handler runs",
          arguments: ["X-A: 1\rContent-Length: 5", "X-A: 1\rTransfer-Encoding: chunked"])
    func aBareCRInAValueIs400(field: String) async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { _, address in
            let (response, closed) = try await Self.exchange(
                address, "POST /upload HTTP/1.1\r\nHost: x\r\n\(field)\r\nContent-Length: 5\r\n\r\nhello" + Self.smuggled)
            #expect(response?.status == 400, "\(field)")
            #expect(closed)
            #expect(seen.all.isEmpty, "\(seen.all)")
        }
    }

    @Test("A second Host or Authorization field is answered 400 before any handler runs",
          arguments: ["Host: y", "Authorization: Bearer a\r\nAuthorization: Bearer b"])
    func aRepeatedSingletonFieldIs400(fields: String) async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { _, address in
            let (response, closed) = try await Self.exchange(address, "GET /smuggled HTTP/1.1\r\nHost: x\r\n\(fields)\r\n\r\n")
            #expect(response?.status == 400, "\(fields)")
            #expect(closed)
            #expect(seen.all.isEmpty, "\(seen.all)")
        }
    }

    @Test func transferEncodingInAnHTTP10RequestIs400() async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { _, address in
            let (response, closed) = try await Self.exchange(
                address, "POST /upload HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
            #expect(response?.status == 400)
            #expect(closed)
            #expect(seen.all.isEmpty)
        }
    }

    @Test func chunkedAloneInAnyCaseStillWorksAndKeepsTheConnection() async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { _, address in
            let answers = try await offPool {
                let connection = try RawConnection(to: address)
                return try ["chunked", "Chunked"].map { coding in
                    connection.send("POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \(coding)\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
                    return try connection.readResponse().text
                }
            }
            #expect(answers == ["got 5", "got 5"])
        }
    }

    @Test func fiveHundredQueryParametersAre414AtOnce() async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { _, address in
            let query = (0..<500).map { "p\($0)=1" }.joined(separator: "&")
            let (response, closed) = try await Self.exchange(address, "GET /search?\(query) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(response?.status == 414)
            #expect(closed)
            #expect(seen.all.isEmpty)
            // Within the limit, a request is served as before.
            let within = (0..<HTTPServerConfiguration().maxQueryParameters).map { "p\($0)=1" }.joined(separator: "&")
            let served = try await rawRequest(address, "GET /search?\(within) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(served.text == "\(HTTPServerConfiguration().maxQueryParameters) parameters")
        }
    }

    @Test func aLongTargetIs414AtOnceEvenWithFewParameters() async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { server, address in
            // 100 parameters of 280 bytes: within the count, but libmicrohttpd could not hold them
            // beside a 28 KB target (it used to neither answer nor close).
            let query = (0..<100).map { "p\($0)=" + String(repeating: "v", count: 280) }.joined(separator: "&")
            let (response, closed) = try await Self.exchange(address, "GET /search?\(query) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(response?.status == 414)
            #expect(response?.text == "uri too long: more than 8192 bytes\n")
            #expect(closed)
            // At both limits at once, with many headers, the request is served.
            let limit = HTTPServerConfiguration().maxQueryParameters
            let value = String(repeating: "w", count: (8192 - 8 - limit * 6) / limit)
            let full = (0..<limit).map { String(format: "p%03d=", $0) + value }.joined(separator: "&")
            let headers = (0..<50).map { "X-Header-\($0): " + String(repeating: "h", count: 40) + "\r\n" }.joined()
            let served = try await rawRequest(address, "GET /search?\(full) HTTP/1.1\r\nHost: x\r\n\(headers)\r\n")
            #expect(served.text == "\(limit) parameters")
            #expect(seen.all == ["/search"])
            #expect(await eventually { server.statistics.requestsInFlight == 0 })
        }
    }

    @Test func refusalsLeaveNoRequestInFlight() async throws {
        let seen = Seen()
        try await withServer(Self.router(seen)) { server, address in
            let many = (0..<500).map { "p\($0)=1" }.joined(separator: "&")
            let tooManyHeaders = (0..<600).map { "X-h\($0): 1\r\n" }.joined()
            for request in [
                "GET /search?\(many) HTTP/1.1\r\nHost: x\r\n\r\n",
                "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                "GET /search HTTP/1.1\r\nHost: x\r\n\(tooManyHeaders)\r\n",
                "GET /search?\(many) HTTP/1.1\r\nHost: x\r\n\(tooManyHeaders)\r\n",
            ] {
                let (response, closed) = try await Self.exchange(address, request)
                #expect(response.map { [400, 414, 431].contains($0.status) } == true)
                #expect(closed)
            }
            #expect(await eventually { server.statistics.requestsInFlight == 0 })
            #expect(seen.all.isEmpty)
        }
    }
}
