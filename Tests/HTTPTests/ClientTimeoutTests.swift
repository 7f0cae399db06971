// SPDX-License-Identifier: Apache-2.0
@testable import HTTP
import HTTPClientTestSupport
import Testing

struct ClientTimeoutTests {
    /// What the timeouts under test (0.3–0.5 s) are told apart from: the 60 s defaults. The margin is
    /// for the full suite, where the cooperative pool has stalled for 25–30 s at a time (two runs
    /// of 2026-12-06), not for these timeouts.
    static let loadedMachineBound = Duration.seconds(50)

    @Test func aHundredConcurrentRequestsToASilentServerAllTimeOutInTimeWithoutAThreadEach() async throws {
        try await withPythonTestServer(.silent) { server in
            // 3 s: the single-process Python server must accept all 100 connections before the
            // deadline, or a request times out while connecting (never delivered), which is
            // another test's subject; on a loaded 2-core machine 1 s was sometimes too short.
            let timeouts = HTTPClient.Timeouts(connect: .seconds(3), total: .seconds(3))
            try await withHTTPClient(.init(timeouts: timeouts)) { client in
                let threadsBefore = threadCount(namedWithPrefix: "wxpay-curl")
                let started = ContinuousClock.now
                let (errors, peakThreads) = await withTaskGroup(of: HTTPClientError?.self) { group in
                    for index in 0..<100 {
                        group.addTask {
                            await failure {
                                try await client.execute(HTTPClientRequest(method: .post, url: server.url("/\(index)"), body: [1, 2, 3]))
                            }
                        }
                    }
                    // Sampled while all 100 are in flight (the server never answers, so none ends before 3 s).
                    try? await Task.sleep(for: .milliseconds(400))
                    let peak = threadCount(namedWithPrefix: "wxpay-curl")
                    var errors: [HTTPClientError?] = []
                    for await error in group { errors.append(error) }
                    return (errors, peak)
                }
                let elapsed = ContinuousClock.now - started

                #expect(errors.count == 100)
                #expect(errors.allSatisfy { $0 == .timeout }, "\(Set(errors.map { "\($0.map { "\($0)" } ?? "success")" }))")
                // The server read every request, so each one may have been acted on.
                #expect(errors.allSatisfy { $0?.mayHaveBeenDelivered == true })
                // 3 s timeout; the slack is for a loaded 2-core machine (a full suite there took 19 s),
                // not for the client: a client that waited for each in turn would take 300 s.
                #expect(elapsed < .seconds(90))
                // A thread per request would add about 100 transfer threads; other suites running in
                // parallel may start a few clients of their own.
                #expect(peakThreads - threadsBefore < 10, "transfer threads before \(threadsBefore), during \(peakThreads)")
            }
        }
    }

    @Test func aConnectionThatNeverCompletesIsAConnectTimeoutThatWasNotDelivered() async throws {
        try await withPythonTestServer(.blackhole) { server in
            try await withHTTPClient { client in
                let started = ContinuousClock.now
                // The connect timeout (0.5 s), not the total (60 s), ends it; the bound is for a loaded machine.
                let error = await failure {
                    try await client.execute(quickRequest(server.url("/"), connect: .milliseconds(500), total: .seconds(60)))
                }
                #expect(error == .connectTimeout)
                #expect(error?.mayHaveBeenDelivered == false)
                #expect(ContinuousClock.now - started < Self.loadedMachineBound)
            }
        }
    }

    @Test func aTLSHandshakeThatNeverHappensIsAConnectTimeout() async throws {
        try await withPythonTestServer(.silent) { server in
            try await withHTTPClient(.init(tls: .init(caFile: TestCertificates.ca))) { client in
                let url = "https://127.0.0.1:\(server.port)/"
                let error = await failure { try await client.execute(quickRequest(url, connect: .milliseconds(500), total: .seconds(5))) }
                #expect(error == .connectTimeout)
                #expect(error?.mayHaveBeenDelivered == false)
            }
        }
    }

    @Test func aClosedPortIsAConnectFailureThatWasNotDelivered() async throws {
        try await withHTTPClient { client in
            let port = RefusedLoopbackPort()
            let error = await failure { try await client.execute(quickRequest(port.baseURL + "/")) }
            withExtendedLifetime(port) {}
            #expect(error == .connectFailed)
            #expect(error?.mayHaveBeenDelivered == false)
        }
    }

    @Test func anUnresolvableHostIsADNSFailureThatWasNotDelivered() async throws {
        // `.invalid` never resolves (RFC 6761); the resolver answers locally, without network.
        try await withHTTPClient { client in
            let error = await failure {
                try await client.execute(quickRequest("http://nonexistent.invalid/", connect: .seconds(5), total: .seconds(8)))
            }
            #expect(error == .dnsFailure)
            #expect(error?.mayHaveBeenDelivered == false)
        }
    }

    @Test func theWatchdogEndsATransferThatLibcurlLetsRunPastItsDeadline() async throws {
        try await withPythonTestServer(.silent) { server in
            var configuration = HTTPClient.Configuration(watchdogSlack: .milliseconds(200))
            configuration.curlEnforcesTimeouts = false
            try await withHTTPClient(configuration) { client in
                let started = ContinuousClock.now
                let error = await failure {
                    try await client.execute(quickRequest(server.url("/"), connect: .milliseconds(300), total: .milliseconds(300)))
                }
                #expect(error == .timeout)
                #expect(error?.mayHaveBeenDelivered == true)
                #expect(error.map { String(reflecting: $0) }?.contains("watchdog") == true)
                // 0.3 s plus the watchdog's slack, far below the client's 60 s default; the bound
                // is for a loaded machine (it took 5.1 s at load 20).
                #expect(ContinuousClock.now - started < Self.loadedMachineBound)
            }
        }
    }

    @Test func perRequestTimeoutsOverrideTheClientDefaults() async throws {
        try await withPythonTestServer(.silent) { server in
            try await withHTTPClient(.init(timeouts: .init(connect: .seconds(30), total: .seconds(60)))) { client in
                let started = ContinuousClock.now
                let error = await failure { try await client.execute(quickRequest(server.url("/"), total: .milliseconds(300))) }
                #expect(error == .timeout)
                // The request's 0.3 s, not the client's 60 s; the bound is for a loaded machine.
                #expect(ContinuousClock.now - started < Self.loadedMachineBound)
            }
        }
    }
}
