// SPDX-License-Identifier: Apache-2.0
import HTTP
import HTTPClientTestSupport
import Testing

struct ClientCancellationTests {
    @Test func cancellingTheTaskRemovesItsTransferPromptly() async throws {
        try await withPythonTestServer(.silent) { server in
            try await withHTTPClient { client in
                let started = ContinuousClock.now
                let task = Task {
                    await failure {
                        try await client.execute(HTTPClientRequest(method: .post, url: server.url("/"), body: [1],
                                                                   timeouts: .init(connect: .seconds(30), total: .seconds(60))))
                    }
                }
                // Long enough for the request to be on the wire even on a loaded machine (300 ms was
                // not, once: the cancel then came before the send, rightly "not delivered").
                try await Task.sleep(for: .seconds(3))
                task.cancel()
                let error = await task.value
                #expect(error == .cancelled)
                #expect(error?.mayHaveBeenDelivered == true)
                // Cancelled, not timed out: it ends before the request's 60 s limit could have ended
                // it (20 s was exceeded at load 50-90 on two cores, with the cancellation working).
                #expect(ContinuousClock.now - started < .seconds(55))
            }
        }
    }

    @Test func aTaskCancelledBeforeItsRequestStartsSendsNothing() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                let task = Task {
                    // Busy-wait (bounded) until the cancel lands, without suspending.
                    var spins = 0
                    while !Task.isCancelled, spins < 50_000_000 { spins += 1 }
                    return await failure { try await client.execute(HTTPClientRequest(url: server.url("/echo"))) }
                }
                task.cancel()
                let error = await task.value
                #expect(error == .cancelled)
                #expect(error?.mayHaveBeenDelivered == false)
                let answered = try await server.answeredRequests()
                #expect(answered == 0)
                // The client is unaffected.
                let after = try await client.execute(HTTPClientRequest(url: server.url("/bytes/1")))
                #expect(after.status == 200)
            }
        }
    }

    @Test func cancellingSomeOfManyRequestsLeavesTheOthersAlone() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<20 {
                        group.addTask { try await client.execute(HTTPClientRequest(url: server.url("/bytes/10"))).status }
                    }
                    var statuses: [Int] = []
                    for try await status in group { statuses.append(status) }
                    return statuses
                }
                #expect(statuses == Array(repeating: 200, count: 20))
            }
        }
    }
}
