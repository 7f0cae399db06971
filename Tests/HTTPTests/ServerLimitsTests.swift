// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
@testable import HTTP
import HTTPClientTestSupport
import TestSupport
import Testing

/// Body caps, the slow-loris timeout and the connection limit, driven by raw sockets so the
/// client can misbehave on purpose.
@Suite struct ServerLimitsTests {
    static func uploadRouter() -> HTTPRouter {
        var router = HTTPRouter()
        router.add(.post, "/small", options: HTTPRouteOptions(maxBodyBytes: 1024)) { request in
            .text("got \(request.body.count)")
        }
        router.addImmediate(.post, "/small-now", options: HTTPRouteOptions(maxBodyBytes: 1024)) { request in
            .text("got \(request.body.count)")
        }
        router.add(.post, "/default") { request in .text("got \(request.body.count)") }
        router.add(.post, "/json", options: HTTPRouteOptions(maxBodyBytes: 1024, payloadTooLarge: ("application/json", Self.jsonTooLarge))) {
            request in .text("got \(request.body.count)")
        }
        return router
    }

    static let configuration = HTTPServerConfiguration(maxBodyBytes: 64 * 1024)

    @Test func aContentLengthOverTheRouteCapGets413BeforeTheBodyIsSent() async throws {
        try await withServer(Self.uploadRouter(), Self.configuration) { _, address in
            for path in ["/small", "/small-now"] {
                let (response, closed) = try await offPool {
                    let connection = try RawConnection(to: address)
                    // Only the head: the server must answer without waiting for 10 MB.
                    connection.send("POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n")
                    let response = try connection.readResponse()
                    return (response, connection.isClosedByPeer(within: .seconds(5)))
                }
                #expect(response.status == 413)
                #expect(closed, "the unread body is never read: the connection closes")
            }
        }
    }

    @Test func anExpectContinueOverTheCapGets413InsteadOf100() async throws {
        try await withServer(Self.uploadRouter(), Self.configuration) { _, address in
            let response = try await rawRequest(
                address, "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
            #expect(response.status == 413)
        }
    }

    @Test func aChunkedBodyPassingTheCapGets413WithoutReadingTheRest() async throws {
        try await withServer(Self.uploadRouter(), Self.configuration) { _, address in
            for path in ["/small", "/small-now"] {
                let (response, closed) = try await offPool {
                    let connection = try RawConnection(to: address)
                    var head = "POST \(path) HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    // 1,500 bytes in three chunks, and no terminating chunk: the body never ends.
                    for _ in 0..<3 { head += "1f4\r\n" + String(repeating: "z", count: 500) + "\r\n" }
                    connection.send(head)
                    let response = try connection.readResponse()
                    return (response, connection.isClosedByPeer(within: .seconds(5)))
                }
                #expect(response.status == 413)
                #expect(response.text == "payload too large\n")
                #expect(closed)
            }
        }
    }

    static let jsonTooLarge = Array(#"{"error":{"code":"payload_too_large"}}"#.utf8)

    @Test("A route's own 413 body is answered for a Content-Length and for a chunked body passing its cap")
    func aRoutesOwn413BodyIsAnswered() async throws {
        try await withServer(Self.uploadRouter(), Self.configuration) { _, address in
            let announced = try await rawRequest(address, "POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n")
            #expect(announced.status == 413 && announced.body == Self.jsonTooLarge)
            #expect(announced.header("Content-Type") == "application/json")
            let response = try await offPool {
                let connection = try RawConnection(to: address)
                var head = "POST /json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                for _ in 0..<3 { head += "1f4\r\n" + String(repeating: "z", count: 500) + "\r\n" }
                connection.send(head)
                return try connection.readResponse()
            }
            #expect(response.status == 413 && response.body == Self.jsonTooLarge)
        }
    }

    @Test func bodiesWithinTheCapArriveWhole() async throws {
        try await withServer(Self.uploadRouter(), Self.configuration) { _, address in
            let exact = try await rawRequest(
                address, "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\n",
                body: Array(repeating: 0x61, count: 1024))
            #expect(exact.status == 200)
            #expect(exact.text == "got 1024")

            var chunked = "POST /small-now HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            for _ in 0..<2 { chunked += "200\r\n" + String(repeating: "y", count: 512) + "\r\n" }
            chunked += "0\r\n\r\n"
            let chunkedResponse = try await rawRequest(address, chunked)
            #expect(chunkedResponse.status == 200)
            #expect(chunkedResponse.text == "got 1024")
        }
    }

    @Test func routesWithoutACapUseTheServerDefault() async throws {
        try await withServer(Self.uploadRouter(), Self.configuration) { _, address in
            let within = try await rawRequest(
                address, "POST /default HTTP/1.1\r\nHost: x\r\nContent-Length: 65536\r\n\r\n",
                body: Array(repeating: 0x62, count: 65536))
            #expect(within.text == "got 65536")
            let over = try await rawRequest(
                address, "POST /default HTTP/1.1\r\nHost: x\r\nContent-Length: 65537\r\n\r\n")
            #expect(over.status == 413)
        }
    }

    @Test func aSlowLorisConnectionIsClosedAfterTheConnectionTimeout() async throws {
        let configuration = HTTPServerConfiguration(connectionTimeout: .seconds(2))
        try await withServer(Self.uploadRouter(), configuration) { _, address in
            let (openAfterHalfASecond, closedEventually) = try await offPool {
                let connection = try RawConnection(to: address)
                // An incomplete head, then silence.
                connection.send("POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n")
                // libmicrohttpd counts whole seconds, so a 2 s timeout may fire after just over 1 s.
                let early = connection.isClosedByPeer(within: .milliseconds(500))
                return (!early, connection.isClosedByPeer(within: .seconds(8)))
            }
            #expect(openAfterHalfASecond)
            #expect(closedEventually, "closed within about 2 s of silence; 9 s is the bound for a loaded machine")
        }
    }

    @Test func aStalledBodyIsCutByTheSameTimeout() async throws {
        let configuration = HTTPServerConfiguration(connectionTimeout: .seconds(2))
        try await withServer(Self.uploadRouter(), configuration) { server, address in
            let closed = try await offPool {
                let connection = try RawConnection(to: address)
                connection.send("POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly part")
                return connection.isClosedByPeer(within: .seconds(9))
            }
            #expect(closed)
            #expect(await eventually { server.statistics.requestsInFlight == 0 })
        }
    }

    @Test func aTricklingSlowLorisIsCutByTheRequestTimeout() async throws {
        // Bytes keep coming, so the 15 s silence timeout never fires; the 2 s request timeout does.
        let configuration = HTTPServerConfiguration(connectionTimeout: .seconds(15), requestTimeout: .seconds(2))
        try await withServer(Self.uploadRouter(), configuration) { server, address in
            let (closed, elapsed) = try await offPool {
                let connection = try RawConnection(to: address)
                let start = ContinuousClock.now
                connection.send("POST /small HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                for _ in 0..<600 {  // at most ~3 min: the server's sweep runs late on a loaded machine
                    guard connection.send("a") else { return (true, ContinuousClock.now - start) }
                    if connection.isClosedByPeer(within: .milliseconds(300)) {
                        return (true, ContinuousClock.now - start)
                    }
                }
                return (false, ContinuousClock.now - start)
            }
            #expect(closed, "still open after \(elapsed)")
            #expect(elapsed >= .milliseconds(1500), "cut after \(elapsed), before its deadline")
            #expect(await eventually { server.statistics.requestsInFlight == 0 })
            let next = try await rawRequest(address, "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
            #expect(next.text == "got 2", "the server serves normally afterwards")
        }
    }

    @Test func aTricklingBodyIsCutByTheRequestTimeoutToo() async throws {
        let configuration = HTTPServerConfiguration(requestTimeout: .seconds(2))
        try await withServer(Self.uploadRouter(), configuration) { _, address in
            let closed = try await offPool {
                let connection = try RawConnection(to: address)
                connection.send("POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
                for _ in 0..<600 {  // the body is 1,000 bytes: the request timeout ends it first
                    guard connection.send("b") else { return true }
                    if connection.isClosedByPeer(within: .milliseconds(300)) { return true }
                }
                return false
            }
            #expect(closed)
        }
    }

    @Test func handlerTimeDoesNotCountAgainstTheRequestTimeout() async throws {
        var router = HTTPRouter()
        router.add(.get, "/poll") { _ in
            try await Task.sleep(for: .milliseconds(2500))
            return .text("done")
        }
        let configuration = HTTPServerConfiguration(requestTimeout: .seconds(1))
        try await withServer(router, configuration) { _, address in
            let responses = try await offPool {
                let connection = try RawConnection(to: address)
                return try (0..<2).map { _ in
                    connection.send("GET /poll HTTP/1.1\r\nHost: x\r\n\r\n")
                    return try connection.readResponse().text
                }
            }
            #expect(responses == ["done", "done"], "two long requests on one kept-alive connection")
        }
    }

    @Test func aSuspendedRequestOutlivesTheConnectionTimeout() async throws {
        var router = HTTPRouter()
        router.add(.get, "/poll") { _ in
            try await Task.sleep(for: .seconds(3))
            return .text("done")
        }
        let configuration = HTTPServerConfiguration(connectionTimeout: .seconds(1))
        try await withServer(router, configuration) { _, address in
            let response = try await rawRequest(address, "GET /poll HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(response.status == 200)
            #expect(response.text == "done")
        }
    }

    @Test func theConnectionLimitHoldsExtraConnectionsBack() async throws {
        let gate = Gate()
        var router = HTTPRouter()
        router.add(.get, "/hold") { _ in
            await gate.wait()
            return .text("released")
        }
        router.addImmediate(.get, "/now") { _ in .text("now") }
        // One polling thread, so the whole limit belongs to it (a pool divides the limit).
        let configuration = HTTPServerConfiguration(threadPoolSize: 1, connectionLimit: 2)
        try await withServer(router, configuration) { server, address in
            let held = try await offPool {
                try (0..<2).map { _ in
                    let connection = try RawConnection(to: address)
                    connection.send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
                    return connection
                }
            }
            #expect(await eventually { server.statistics.suspendedRequests == 2 })

            let extra = try await offPool {
                let connection = try RawConnection(to: address)
                connection.send("GET /now HTTP/1.1\r\nHost: x\r\n\r\n")
                return (connection, connection.staysSilent(for: .seconds(1)))
            }
            #expect(extra.1, "a third connection is not served while two are open")

            gate.open()
            let answers = try await offPool { try held.map { try $0.readResponse().text } }
            #expect(answers == ["released", "released"])
            // Closing the held connections frees the slots; the waiting connection is served.
            for connection in held { shutdown(connection.fd, Int32(SHUT_RDWR)) }
            let late = try await offPool { try extra.0.readResponse() }
            #expect(late.text == "now")
        }
    }

    /// libmicrohttpd reports a connection closed before its own count drops, and the accepting
    /// thread counts the slot free at the report: at a limit libmicrohttpd shared exactly, a
    /// connection handed over in between was closed unread (a reset, seen once in a full run of
    /// `theConnectionLimitHoldsExtraConnectionsBack`). Its limit per thread is out of that reach.
    @Test(arguments: [(1, 1), (2, 1), (2, 2), (4, 2), (10_000, 2), (64, 64), (Int(Int32.max), 2)])
    func libmicrohttpdsLimitPerThreadIsAboveTheServersByOnePerThreadAtLeast(limit: Int, threads: Int) {
        let configuration = HTTPServerConfiguration(threadPoolSize: threads, connectionLimit: limit)
        let total = MHDDaemon.libmicrohttpdLimit(configuration)
        #expect(total <= Int(Int32.max))
        // Every connection the server admits, and one more per thread, fit in any one thread.
        #expect(total / threads >= min(limit, Int(Int32.max) / threads - threads) + threads)
    }

    /// The accepting thread hands connections to the polling threads; libmicrohttpd (0.9.75)
    /// hangs a polling thread for good when a handed-over connection finds it at its limit, so
    /// the limit is kept before the hand-over, exactly, even for a burst.
    @Test func aBurstFarPastTheConnectionLimitIsHeldBackAndTheServerServesOnceItIsGone() async throws {
        var router = HTTPRouter()
        router.addImmediate(.get, "/now") { _ in .text("now") }
        let configuration = HTTPServerConfiguration(threadPoolSize: 2, connectionLimit: 4, connectionTimeout: .seconds(600),
                                                    requestTimeout: .seconds(600))
        try await withServer(router, configuration) { _, address in
            let burst = try await offPool {
                try (0..<64).map { _ in
                    let connection = try RawConnection(to: address)
                    _ = connection.send("GET /now HTTP/1.1\r\nHost: x\r\n\r\n")
                    return connection
                }
            }
            // The first is accepted first; served over keep-alive, it stays open and holds a slot.
            let first = try await offPool { try burst[0].readResponse() }
            #expect(first.text == "now")
            for connection in burst { shutdown(connection.fd, Int32(SHUT_RDWR)) }
            for round in 0..<8 {
                var served = false
                for _ in 0..<100 where !served {
                    served = (try? await rawRequest(address, "GET /now HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))?.text == "now"
                    if !served { try await Task.sleep(for: .milliseconds(100)) }
                }
                #expect(served, "request \(round) after the burst")
            }
        }
    }

    @Test("Past the per-address limit a further connection from that address is closed at once, and a freed slot serves again")
    func connectionsPerAddressAreLimited() async throws {
        var router = HTTPRouter()
        router.addImmediate(.get, "/now") { _ in .text("now") }
        // Timeouts far beyond the test's waits: on a starved machine the stalled connections must
        // still hold their slots when the third one comes.
        var configuration = HTTPServerConfiguration(threadPoolSize: 1, connectionLimit: 64, connectionTimeout: .seconds(600),
                                                    requestTimeout: .seconds(600))
        configuration.connectionsPerAddress = 2
        try await withServer(router, configuration) { server, address in
            // Two connections that never finish their head (a slow-loris client) hold the address's slots.
            let stalled = try await offPool {
                try (0..<2).map { _ in
                    let connection = try RawConnection(to: address)
                    connection.send("GET /now HTTP/1.1\r\nHost: x\r\n")
                    return connection
                }
            }
            // Both accepted (their request lines read) before the third connects.
            #expect(await eventually { server.statistics.requestsInFlight == 2 })
            let refused = try await offPool {
                let connection = try RawConnection(to: address)
                connection.send("GET /now HTTP/1.1\r\nHost: x\r\n\r\n")
                return connection.isClosedByPeer(within: .seconds(120))
            }
            #expect(refused, "a third connection from the address is closed")
            for connection in stalled { shutdown(connection.fd, Int32(SHUT_RDWR)) }
            var served = false
            for _ in 0..<100 where !served {
                served = (try? await rawRequest(address, "GET /now HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))?.text == "now"
                if !served { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(served)
        }
    }

    @Test func keepAliveServesManyRequestsOnOneConnection() async throws {
        var router = HTTPRouter()
        router.addImmediate(.get, "/now") { request in .text("\(request.remoteAddress?.port ?? 0)") }
        router.add(.get, "/later") { request in .text("\(request.remoteAddress?.port ?? 0)") }
        router.add(.post, "/echo") { request in .text(String(decoding: request.body, as: UTF8.self)) }
        try await withServer(router) { _, address in
            let ports = try await offPool {
                let connection = try RawConnection(to: address)
                var ports: [String] = []
                for index in 0..<6 {
                    switch index % 3 {
                    case 0: connection.send("GET /now HTTP/1.1\r\nHost: x\r\n\r\n")
                    case 1: connection.send("GET /later HTTP/1.1\r\nHost: x\r\n\r\n")
                    default: connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
                    }
                    let response = try connection.readResponse()
                    guard response.status == 200, response.header("Connection") != "close" else {
                        throw TestFailure("request \(index) ended the connection: \(response.status)")
                    }
                    ports.append(response.text)
                }
                return ports
            }
            #expect(ports.count == 6)
            #expect(ports[0] == ports[1] && ports[0] != "0", "the same client port: one connection")
            #expect(ports[2] == "hello" && ports[5] == "hello")
        }
    }
}

/// How a field's value is taken from libmicrohttpd's parse (it drops only the leading blanks).
struct FieldValueTests {
    @Test("Spaces and tabs around a field value are not part of it (RFC 9110 §5.5); those inside it, and other bytes, are",
          arguments: [("a b  ", "a b"), ("\tab\t \t", "ab"), ("   x", "x"), ("  \t ", ""), ("", ""), ("x\u{0B}", "x\u{0B}"),
                      ("  sig==  ", "sig==")])
    func blanksAroundAValueAreDropped(raw: String, value: String) {
        #expect(raw.withCString { fieldValue($0) } == value)
    }
}
