// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import HTTP
import HTTPClientTestSupport
import Synchronization
import TestSupport
import Testing

/// Async handlers that wait: suspended connections hold no thread, and a vanished client costs
/// nothing once its handler returns.
@Suite struct ServerLongPollTests {
    /// `/v1/orders/{id}` waits on the gate like a long-poll waiting for a payment; `/warm` answers
    /// through the same async path without waiting.
    static func pollRouter(_ gate: Gate) -> HTTPRouter {
        var router = HTTPRouter()
        router.add(.get, "/v1/orders/{id}") { request in
            await gate.wait()
            return .text("paid \(request.pathParameters["id"] ?? "-")")
        }
        router.add(.get, "/warm") { _ in .text("warm") }
        return router
    }

    @Test func aThousandWaitingLongPollsHoldABoundedNumberOfThreadsAndAreAllAnswered() async throws {
        raiseOpenFileLimit(to: 8192)
        let waiters = 1_000
        let gate = Gate()
        // The patient server's timeouts: parking a thousand takes up to 90 s with the whole suite
        // beside it (ServerDeferredTests' twin lost a connection to the default 15 and 30 s).
        let configuration = HTTPServerConfiguration.patient.with { $0.connectionLimit = 2 * waiters }
        try await withServer(Self.pollRouter(gate), configuration) { server, address in
            // The baseline includes the threads any async request needs (the cooperative pool).
            for _ in 0..<4 {
                let warm = try await rawRequest(address, "GET /warm HTTP/1.1\r\nHost: x\r\n\r\n")
                try #require(warm.text == "warm")
            }
            let threadsBefore = currentThreadCount()

            let connections = try await offPool {
                try (0..<waiters).map { index in
                    let connection = try RawConnection(to: address, receiveTimeout: .seconds(300))
                    connection.send("GET /v1/orders/T\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                    return connection
                }
            }
            let allWaiting = await eventually(timeout: .seconds(300)) {
                server.statistics.suspendedRequests == waiters
            }
            #expect(allWaiting, "suspended: \(server.statistics.suspendedRequests)")
            let threadsWhileWaiting = currentThreadCount()

            gate.open()
            let answers = try await offPool {
                try connections.enumerated().map { index, connection in
                    do { return try connection.readResponse() } catch {
                        throw TestFailure("long-poll \(index): \(error)")
                    }
                }
            }
            #expect(answers.count == waiters)
            #expect(answers.allSatisfy { $0.status == 200 })
            #expect(answers.enumerated().allSatisfy { $0.element.text == "paid T\($0.offset)" })
            // Thread-per-request would add a thousand. The count is the whole process's, and the
            // suites running beside this one start and stop servers, stores and clients of their
            // own (CI once saw 65 more threads), so the bound sits far from both.
            #expect(
                threadsWhileWaiting - threadsBefore < waiters / 4,
                "threads before \(threadsBefore), while \(waiters) requests waited \(threadsWhileWaiting)")
            #expect(await eventually { server.statistics.requestsInFlight == 0 })
        }
    }

    @Test func aClientThatLeavesWhileSuspendedIsCleanedUpWhenItsHandlerReturns() async throws {
        let gate = Gate()
        let handlerFinished = Atomic<Int>(0)
        var router = Self.pollRouter(gate)
        router.add(.get, "/tracked") { _ in
            await gate.wait()
            handlerFinished.add(1, ordering: .relaxed)
            return .text(String(repeating: "x", count: 256 * 1024))
        }
        try await withServer(router) { server, address in
            try await offPool {
                for _ in 0..<20 {
                    let connection = try RawConnection(to: address)
                    connection.send("GET /tracked HTTP/1.1\r\nHost: x\r\n\r\n")
                    _ = connection  // closed on leaving the scope
                }
            }
            #expect(await eventually { server.statistics.suspendedRequests == 20 })
            gate.open()
            #expect(await eventually { handlerFinished.load(ordering: .relaxed) == 20 })
            #expect(
                await eventually { server.statistics.requestsInFlight == 0 && server.statistics.suspendedRequests == 0 }
            )
            let after = try await rawRequest(address, "GET /v1/orders/next HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(after.text == "paid next")
        }
    }

    @Test func handlersThatFinishAtOnceRaceNoResumeAgainstTheirSuspension() async throws {
        var router = HTTPRouter()
        router.add(.get, "/instant/{n}") { request in .text(request.pathParameters["n"] ?? "") }
        try await withServer(router) { server, address in
            let texts = try await offPool {
                let connection = try RawConnection(to: address)
                return try (0..<2_000).map { index -> String in
                    connection.send("GET /instant/\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                    return try connection.readResponse().text
                }
            }
            #expect(texts == (0..<2_000).map(String.init))
            #expect(await eventually { server.statistics.requestsInFlight == 0 })
        }
    }
}
