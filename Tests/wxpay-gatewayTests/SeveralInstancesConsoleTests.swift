// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import StoreTestSupport
import Testing

/// The support console behind a load balancer: two production gateway processes on one PostgreSQL
/// database, and a browser whose requests land on either.
@Suite(.serialized, .enabled(if: TestPostgres.url != nil, "needs WXPAY_TEST_POSTGRES (scripts/test starts a server)"))
struct SeveralInstancesConsoleTests {
    static let password = "a long enough password"

    /// Signed in through A, the session works on B; five failed sign-ins spread over both lock
    /// the name on both; signing out on B ends the session on A too; and both write one audit log.
    @Test(.timeLimit(.minutes(15)))
    func sessionsLockoutsAndTheAuditLogAreSharedByTheInstances() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("console-cluster-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let users = folder + "/console-users"
        for (name, role) in [("adam", "admin"), ("lou", "viewer")] {
            let added = try await ChildProcess.run(
                CommandProcess.executable.path, ["console-user", "add", name, "--role", role, "--file", users],
                environment: BrowserHarness.inherited(), input: Array((Self.password + "\n").utf8), timeout: .seconds(300))
            try #require(added.status == 0, "\(String(decoding: added.errors, as: UTF8.self))")
        }
        let cluster = try await GatewayCluster.start(2, environment: ["GATEWAY_CONSOLE_USERS": users])
        let browser = try ConsoleFormClient()
        let stranger = try ConsoleFormClient()
        do {
            let (a, b) = (cluster.bases[0], cluster.bases[1])
            #expect(try await browser.signIn(a, name: "adam", password: Self.password) == 303)
            #expect(try await browser.get(b + "/console/") == 200)
            #expect(browser.page.contains("id=\"search\""), "signed in on B by A's session")

            for attempt in 0..<5 {
                let status = try await stranger.signIn(attempt % 2 == 0 ? a : b, name: "lou", password: "wrong password \(attempt)")
                #expect(status == (attempt < 4 ? 403 : 429), "attempt \(attempt)")
            }
            for base in [a, b] { #expect(try await stranger.signIn(base, name: "lou", password: Self.password) == 429) }

            let session = browser.cookies
            #expect(try await browser.post(b + "/console/logout", []) == 303)
            browser.cookies = session
            #expect(try await browser.get(a + "/console/") == 303, "the session ended on A too")

            #expect(try await browser.signIn(b, name: "adam", password: Self.password) == 303)
            #expect(try await browser.get(a + "/console/audit") == 200)
            for row in [#"data-action="logout" data-outcome="ok""#, #"data-action="login" data-outcome="locked""#,
                        #"data-action="login" data-outcome="refused""#, #"data-action="search" data-outcome="ok""#] {
                #expect(browser.page.contains(row), "\(row)")
            }
        } catch {
            await browser.shutdown()
            await stranger.shutdown()
            await cluster.stop()
            throw error
        }
        await browser.shutdown()
        await stranger.shutdown()
        await cluster.stop()
    }
}
