// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import Glibc
import StoreTestSupport
import TestSupport
import Testing

/// The throwaway PostgreSQL servers of the tests (`scripts/postgres`) never outlive the process
/// that started them, even one killed without a chance to clean up.
@Suite(.enabled(if: TestPostgresServer.isAvailable, "needs WXPAY_TEST_POSTGRES (scripts/test starts a server)"))
struct ThrowawayServerTests {
    @Test(.timeLimit(.minutes(10)))
    func aServerWhoseStarterIsKilledIsStoppedAndItsDirectoryRemoved() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-pg-\(UUID().uuidString.prefix(8))").path
        let output = directory + ".out"
        defer { try? FileManager.default.removeItem(atPath: output) }
        // A stand-in for a test process: it starts a server, then would run for ten minutes.
        let starter = try ChildProcess("/bin/bash", ["-c", "\"$0\" start \"$1\" > \"$1.out\" 2>&1; sleep 600",
                                                     TestPostgresServer.scriptPath, directory],
                                       environment: ProcessInfo.processInfo.environment, output: "/dev/null", errors: "/dev/null")
        var postmaster: pid_t = 0
        do {
            try #require(await eventually(timeout: .seconds(300)) {
                ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("export WXPAY_TEST_POSTGRES=")
            })
            let pidFile = try String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)
            postmaster = try #require(pid_t(pidFile.split(separator: "\n").first ?? ""))
            #expect(kill(postmaster, 0) == 0, "the server runs while its starter does")

            starter.send(SIGKILL)
            await starter.wait(timeout: .seconds(60))
            try #require(await eventually(timeout: .seconds(300)) {
                !FileManager.default.fileExists(atPath: directory) && kill(postmaster, 0) != 0 && errno == ESRCH
            })
        } catch {
            starter.send(SIGKILL)
            await starter.wait(timeout: .seconds(60))
            _ = try? await ChildProcess.run(TestPostgresServer.scriptPath, ["stop", directory],
                                            environment: ProcessInfo.processInfo.environment, timeout: .seconds(120))
            throw error
        }
    }
}
