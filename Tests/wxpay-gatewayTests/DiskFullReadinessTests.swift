// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import HTTPClientTestSupport
import Testing

/// A gateway whose database can no longer grow (the disk full, here a file-size limit put on the
/// running process) must say so to its load balancer and its alerts: `/readyz` 503 and
/// `wxpay_database_up 0`, not "ready" while every write fails. And it must come back by itself
/// once the space is there again, having lived through it: its log, on the same disk, loses
/// lines, not the process.
struct DiskFullReadinessTests {
    /// Sets the running process's file-size limit (RLIMIT_FSIZE) with util-linux's `prlimit`.
    private func limitFileSize(of pid: pid_t, to bytes: String) async throws -> Bool {
        let run = try await Operations.tool("prlimit", ["--pid", "\(pid)", "--fsize=\(bytes):unlimited"])
        return run.status == 0
    }

    private func fileSize(_ path: String) -> UInt64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.uint64Value ?? 0
    }

    @Test(.timeLimit(.minutes(5)))
    func aGatewayWhoseWritesFailForWantOfSpaceIsNotReadyAndRecoversByItself() async throws {
        let directory = try Operations.temporaryDirectory("wxpay-disk-full")
        let database = directory + "/gateway.sqlite"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var base = ""
        var gateway: CommandProcess?
        for _ in 0..<5 where gateway == nil {
            let port = closedLoopbackPort()
            base = "http://127.0.0.1:\(port)"
            // A process over its file-size limit is killed by SIGXFSZ unless it ignores it; ignored,
            // its writes fail with EFBIG, which SQLite reports as it would a full disk.
            let attempt = try CommandProcess(
                ["serve", "--demo"],
                environment: ["GATEWAY_LISTEN": "127.0.0.1:\(port)", "GATEWAY_DATABASE": "sqlite:" + database,
                              "GATEWAY_RECONCILE_INTERVAL": "0"],
                shellFirst: "trap '' XFSZ")
            if await attempt.line(startingWith: "listening on ") != nil { gateway = attempt } else { await attempt.stop() }
        }
        let started = try #require(gateway)
        let client = try HTTPClient()
        do {
            // /readyz gives the database 1 s, which a machine loaded by the whole suite has missed.
            var ready = try await client.send(.get, base + "/readyz")
            for _ in 0..<5 where ready.status != 200 { ready = try await client.send(.get, base + "/readyz") }
            #expect(ready.status == 200)
            // No file may grow from now on: not the database, nor the log (standard error, in a
            // file here), whose lines about the failed writes are then lost, not the process.
            let limit = max(fileSize(started.stderrURL.path), 1)
            #expect(limit < fileSize(database + "-wal"))
            #expect(try await limitFileSize(of: started.processIdentifier, to: "\(limit)"))
            var refused = 0
            for index in 0..<2_000 where refused < 3 {
                let created = try await client.send(.post, base + "/v1/orders", token: "demo-client-token", body:
                    #"{"amount":990,"description":"\#(String(repeating: "x", count: 120))","client_ip":"203.0.113.7","out_trade_no":"full-\#(index)"}"#)
                if created.status == 500 { refused += 1 } else { #expect(created.status == 201, "\(created.body)") }
            }
            #expect(refused == 3, "the database never filled up")
            // The read-only probes still pass; readiness must not. Each look follows a write that
            // fails, so however slow the machine, the last failure is fresh.
            func failAgain(_ round: Int) async throws {
                var status = 0
                for attempt in 0..<50 where status != 500 {
                    status = try await client.send(.post, base + "/v1/orders", token: "demo-client-token", body:
                        #"{"amount":990,"description":"again","client_ip":"203.0.113.7","out_trade_no":"full-again-\#(round)-\#(attempt)"}"#).status
                }
                #expect(status == 500)
            }
            try await failAgain(0)
            ready = try await client.send(.get, base + "/readyz")
            #expect(ready.status == 503, "\(ready.body)")
            try await failAgain(1)
            #expect(try await client.send(.get, base + "/metrics").body.contains("\nwxpay_database_up 0\n"))
            // A support look that cannot be put on record is not shown, and counts where the
            // full-disk alert looks (wxpay_storage_errors_total), not only among the audit's failures.
            // (The file-size limit's EFBIG reaches SQLite as an I/O error: every label is summed.)
            func counted(_ prefix: String) async throws -> Int {
                let body = try await client.send(.get, base + "/metrics").body
                return body.split(separator: "\n").filter { $0.hasPrefix(prefix) }
                    .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
            }
            let failedBefore = try await counted("wxpay_storage_errors_total{")
            let look = try await client.send(.get, base + "/v1/support/orders?out_trade_no=full-0", token: "demo-support-token")
            #expect(look.status == 500, "\(look.body)")
            #expect(try await counted(#"wxpay_audit_failures_total{channel="api"}"#) == 1)
            let failedAfter = try await counted("wxpay_storage_errors_total{")
            #expect(failedAfter == failedBefore + 1)
            // A refund of an order nobody has needs no write: 404, disk full or not, even when it
            // meets failing writes in the writer's batch.
            let fixedBase = base
            for round in 0..<3 {
                let statuses = try await withThrowingTaskGroup(of: (Bool, Int, String).self) { group in
                    for index in 0..<8 {
                        group.addTask {
                            let created = try await client.send(.post, fixedBase + "/v1/orders", token: "demo-client-token", body:
                                #"{"amount":990,"description":"beside","client_ip":"203.0.113.7","out_trade_no":"full-beside-\#(round)-\#(index)"}"#)
                            return (false, created.status, "")
                        }
                    }
                    group.addTask {
                        let refund = try await client.send(
                            .post, fixedBase + "/v1/orders/full-nobody-\(round)/refunds", token: "demo-client-token",
                            body: #"{"amount":1,"reason":"never sold"}"#)
                        return (true, refund.status, refund.body)
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                for (isRefund, status, body) in statuses where isRefund { #expect(status == 404, "\(body)") }
            }

            // Space again: ready without a restart, and orders are taken.
            #expect(try await limitFileSize(of: started.processIdentifier, to: "unlimited"))
            ready = try await client.send(.get, base + "/readyz")
            // Readiness stays off for 10 s after the last failed write.
            for _ in 0..<60 where ready.status != 200 {
                try await Task.sleep(for: .milliseconds(500))
                ready = try await client.send(.get, base + "/readyz")
            }
            #expect(ready.status == 200, "\(ready.body)")
            let created = try await client.send(.post, base + "/v1/orders", token: "demo-client-token", body:
                #"{"amount":990,"description":"after","client_ip":"203.0.113.7","out_trade_no":"full-after"}"#)
            #expect(created.status == 201, "\(created.body)")
            #expect(started.isRunning)
        } catch {
            await client.shutdown()
            await started.stop()
            throw error
        }
        await client.shutdown()
        await started.stop()
    }
}
