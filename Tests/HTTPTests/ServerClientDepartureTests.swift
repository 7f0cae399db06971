// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import HTTP
import HTTPClientTestSupport
import Synchronization
import TestSupport
import Testing

/// A long poll whose client has gone gives back what it holds (its connection, whatever its
/// handler reserved) within about a second, on routes that ask for it, instead of when its time
/// would have run out; and a connection whose client left before its request was complete is
/// closed then too, not at its idle timeout.
@Suite struct ServerClientDepartureTests {
    /// Held requests by id; a cancelled one is answered "gave up", as a long poll answers what it has.
    final class Polls: Sendable {
        private let responders = Mutex<[String: HTTPServerResponder]>([:])
        let cancelled = Atomic<Int>(0)

        var held: Int { responders.withLock { $0.count } }

        func hold(_ id: String, _ responder: HTTPServerResponder) {
            responders.withLock { $0[id] = responder }
            // The action finds the responder by id rather than holding it (HTTPServerResponder.onCancel).
            responder.onCancel { [self] in
                cancelled.add(1, ordering: .relaxed)
                answer(id, "gave up")
            }
        }

        func answer(_ id: String, _ text: String) {
            responders.withLock { $0.removeValue(forKey: id) }?.respond(.text(text))
        }
    }

    static func router(_ polls: Polls) -> HTTPRouter {
        var router = HTTPRouter()
        router.addDeferred(.get, "/poll/{id}", options: HTTPRouteOptions(cancelledWhenClientLeaves: true)) { request, responder in
            polls.hold(request.pathParameters["id"] ?? "", responder)
        }
        router.addDeferred(.get, "/keep/{id}") { request, responder in
            polls.hold(request.pathParameters["id"] ?? "", responder)
        }
        router.add(.get, "/task", options: HTTPRouteOptions(cancelledWhenClientLeaves: true)) { _ in
            try? await Task.sleep(for: .seconds(600))
            polls.cancelled.add(1, ordering: .relaxed)
            return .text("task gave up")
        }
        return router
    }

    /// No request held or in flight, no connection open: everything the clients had is given back.
    static func holdsNothing(_ server: HTTPServer) -> Bool {
        let now = server.statistics
        return now.suspendedRequests == 0 && now.requestsInFlight == 0 && now.openConnections == 0
    }

    /// The sweep looks every requestTimeout / 4, 100 ms at the least.
    static let quickSweep = HTTPServerConfiguration(requestTimeout: .milliseconds(400))

    @Test func heldRequestsWhoseClientsCloseTheirConnectionsAreCancelledAndTheirConnectionsClosed() async throws {
        let polls = Polls()
        try await withServer(Self.router(polls), Self.quickSweep) { server, address in
            try await offPool {
                for index in 0..<10 {
                    let connection = try RawConnection(to: address)
                    connection.send("GET /poll/P\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                    _ = connection  // closed on leaving the scope
                }
            }
            #expect(await eventually { polls.cancelled.load(ordering: .relaxed) == 10 })
            #expect(await eventually { Self.holdsNothing(server) })
            #expect(polls.held == 0)
        }
    }

    /// What a client sends after its held request, before it leaves.
    enum Extra: String, CaseIterable, Sendable {
        case crlf, pipelinedRequest, junk
        /// So many bytes that the server's receive window fills and the client's close cannot reach
        /// it (held for its full time before; found by an outside look).
        case overAWindowOfJunk

        var bytes: String {
            switch self {
            case .crlf: "\r\n"
            case .pipelinedRequest: "GET /poll/pipelined HTTP/1.1\r\nHost: x\r\n\r\n"
            case .junk: "junk"
            case .overAWindowOfJunk: String(repeating: "J", count: 300_000)
            }
        }
    }

    @Test(arguments: Extra.allCases)
    func aHeldRequestWhoseClientSentMoreBeforeLeavingIsCancelledToo(more extra: Extra) async throws {
        let more = extra.bytes
        let polls = Polls()
        try await withServer(Self.router(polls), Self.quickSweep) { server, address in
            try await offPool {
                let connection = try RawConnection(to: address)
                connection.send("GET /poll/first HTTP/1.1\r\nHost: x\r\n\r\n")
                let patience = ContinuousClock.now + .seconds(120)
                while polls.held == 0 && ContinuousClock.now < patience { usleep(10_000) }
                // Unread bytes in front of the close: the look for the close must see past them.
                connection.send(more)
                usleep(50_000)
            }  // the connection closes here
            #expect(await eventually { polls.cancelled.load(ordering: .relaxed) >= 1 })
            #expect(await eventually { Self.holdsNothing(server) })
        }
    }

    @Test func anAsyncHandlerWhoseClientLeavesIsCancelled() async throws {
        let polls = Polls()
        try await withServer(Self.router(polls), Self.quickSweep) { server, address in
            try await offPool {
                let connection = try RawConnection(to: address)
                connection.send("GET /task HTTP/1.1\r\nHost: x\r\n\r\n")
            }
            #expect(await eventually { polls.cancelled.load(ordering: .relaxed) == 1 })
            #expect(await eventually { Self.holdsNothing(server) })
        }
    }

    @Test func aClientThatOnlyStopsSendingAfterItsRequestIsAnsweredWithWhatTheHandlerHasAtOnce() async throws {
        let polls = Polls()
        try await withServer(Self.router(polls), Self.quickSweep) { _, address in
            let response = try await offPool {
                let connection = try RawConnection(to: address, receiveTimeout: .seconds(120))
                connection.send("GET /poll/half HTTP/1.1\r\nHost: x\r\n\r\n")
                shutdown(connection.fd, Int32(SHUT_WR))
                return try connection.readResponse()
            }
            #expect(response.status == 200)
            #expect(response.text == "gave up")
        }
    }

    @Test func aHeldRequestOnARouteThatDoesNotAskStaysHeldAfterItsClientLeaves() async throws {
        let polls = Polls()
        try await withServer(Self.router(polls), Self.quickSweep) { server, address in
            try await offPool {
                let connection = try RawConnection(to: address)
                connection.send("GET /keep/K HTTP/1.1\r\nHost: x\r\n\r\n")
            }
            #expect(await eventually { polls.held == 1 && server.statistics.suspendedRequests == 1 })
            // Ten sweeps at least: none of them cancels it.
            try await Task.sleep(for: .seconds(1))
            #expect(polls.cancelled.load(ordering: .relaxed) == 0)
            #expect(server.statistics.suspendedRequests == 1)
            polls.answer("K", "late")
            #expect(await eventually { Self.holdsNothing(server) })
        }
    }

    @Test func aHeldRequestWhoseClientStaysIsNotCancelled() async throws {
        let polls = Polls()
        try await withServer(Self.router(polls), Self.quickSweep) { _, address in
            let connection = try RawConnection(to: address, receiveTimeout: .seconds(120))
            connection.send("GET /poll/stays HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await eventually { polls.held == 1 })
            try await Task.sleep(for: .seconds(1))
            #expect(polls.cancelled.load(ordering: .relaxed) == 0)
            polls.answer("stays", "paid")
            #expect(try await offPool { try connection.readResponse() }.text == "paid")
        }
    }

    @Test func aConnectionWhoseClientLeftHalfwayThroughItsRequestIsClosedLongBeforeItsTimeout() async throws {
        // Both timeouts far beyond the test's patience: only noticing the client leave closes it.
        let configuration = HTTPServerConfiguration(connectionTimeout: .seconds(600), requestTimeout: .seconds(600))
        try await withServer(Self.router(Polls()), configuration) { server, address in
            try await offPool {
                let connection = try RawConnection(to: address)
                connection.send("GET /poll/partial HTTP/1.1\r\nHost: x\r\nX-Half: ")
            }
            #expect(await eventually(timeout: .seconds(300)) { server.statistics.openConnections == 0 })
        }
    }

    @Test func cancellingTheTaskThatAwaitsAHeldRequestInProcessCancelsTheRequest() async throws {
        let polls = Polls()
        let router = Self.router(polls)
        let waiting = Task { await router.respond(to: HTTPServerRequest(method: .get, path: "/poll/in-process")) }
        #expect(await eventually { polls.held == 1 })
        waiting.cancel()
        #expect(String(decoding: await waiting.value.body, as: UTF8.self) == "gave up")
        #expect(polls.cancelled.load(ordering: .relaxed) == 1)
    }
}
