// SPDX-License-Identifier: Apache-2.0
@testable import HTTP
import HTTPClientTestSupport
import Testing

/// The transfer thread sleeps in `curl_multi_poll` when idle; every new request must wake it. Here
/// it sleeps 90 seconds, so a lost wake-up shows as a request that takes 90 seconds, which even a
/// heavily loaded machine does not mistake for a slow answer.
struct ClientLoopTests {
    @Test func anIdleLoopIsWokenForEveryNewRequest() async throws {
        try await withPythonTestServer { server in
            var configuration = HTTPClient.Configuration(timeouts: .init(connect: .seconds(120), total: .seconds(120)))
            configuration.idleSleep = .seconds(90)
            try await withHTTPClient(configuration) { client in
                for index in 0..<150 {
                    let started = ContinuousClock.now
                    let response = try await client.execute(HTTPClientRequest(url: server.url("/bytes/\(index % 7)")))
                    #expect(response.body.count == index % 7)
                    let elapsed = ContinuousClock.now - started
                    guard elapsed < .seconds(60) else {
                        Issue.record("request \(index) took \(elapsed): the loop slept through its wake-up")
                        break
                    }
                    if index % 50 == 0 {
                        // Let the loop fall asleep between bursts.
                        try await Task.sleep(for: .milliseconds(50))
                    }
                }
            }
        }
    }

    @Test func burstsFromManyTasksAllComplete() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                for round in 0..<5 {
                    let count = try await withThrowingTaskGroup(of: Int.self) { group in
                        for index in 0..<(10 * (round + 1)) {
                            group.addTask {
                                let body = Array("\(round)-\(index)".utf8)
                                let response = try await client.execute(HTTPClientRequest(method: .post, url: server.url("/echo"), body: body))
                                return response.body == body ? 1 : 0
                            }
                        }
                        return try await group.reduce(0, +)
                    }
                    #expect(count == 10 * (round + 1))
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
        }
    }
}
