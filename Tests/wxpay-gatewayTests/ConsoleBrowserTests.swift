// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import Glibc
import HTTP
import HTTPClientTestSupport
import Testing

/// The support console in a real browser: headless Chromium (Debian's `chromium`) driven through
/// WebDriver (`chromium-driver`, both from scripts/setup) by selenium from scripts/test-tools.
///
/// This harness starts everything, with posix_spawn, on 127.0.0.1 on free ports, and stops it
/// whatever the browser side did: this build's `wxpay-gateway serve --demo` (the simulator as
/// WeChat, refunds embedded, a webhook nobody listens on so fulfilment events go dead), its users
/// (made with `wxpay-gateway console-user add`), and chromedriver in a process group of its own (so
/// the browsers it starts go with it). The flows are in scripts/console/browser_test.py: sign-in
/// and the cookie's flags, a search by each kind of identifier, each order's app and trade type and
/// the search's filters by them, a paid order's timeline, recheck,
/// a refund (a partial one reads as partial), redelivering a dead event, role refusals, a forged
/// CSRF token, the lockout, an iOS order bought in the demo's App Store simulator (Apple's facts,
/// its consumption request and refund, search by each Apple id and Apple's Order ID, recheck with
/// the App Store, the timeline in Chinese) in both languages, the needs-attention page with a
/// product missing from the catalog, signing out, and the audit log listing all of it.
@Suite(.serialized)
struct ConsoleBrowserTests {
    @Test func everyConsoleFlowWorksInHeadlessChromium() async throws {
        let report = try await BrowserHarness.run("scripts/console/browser_test.py")
        #expect(report.status == 0, "\(report.output.suffix(8000))")
        #expect(report.output.contains("17 passed, 0 failed"), "\(report.output.suffix(2000))")
    }

    /// Not a test: `scripts/console-screenshots` runs it (with WXPAY_CONSOLE_SCREENSHOTS naming the
    /// folder) to photograph every page in both languages for docs/console/.
    @Test(.enabled(if: BrowserHarness.screenshotFolder != nil, "scripts/console-screenshots sets WXPAY_CONSOLE_SCREENSHOTS"))
    func screenshotsOfEveryPageInBothLanguages() async throws {
        let folder = try #require(BrowserHarness.screenshotFolder)
        let report = try await BrowserHarness.run("scripts/console/screenshots.py", ["--out", folder])
        #expect(report.status == 0, "\(report.output.suffix(8000))")
    }
}

/// The gateway, its users and chromedriver for one script of scripts/console/.
enum BrowserHarness {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let python = root.appendingPathComponent(".build/test-tools-venv/bin/python").path
    /// The users the scripts sign in as (console_rig.py's USERS), all with `password`.
    static let users = [("vera", "viewer"), ("rita", "refunder"), ("adam", "admin"), ("lou", "viewer")]
    static let password = "correct horse battery \(UUID().uuidString.prefix(8))"
    static var screenshotFolder: String? {
        ProcessInfo.processInfo.environment["WXPAY_CONSOLE_SCREENSHOTS"].flatMap { $0.isEmpty ? nil : $0 }
    }
    /// A patient limit for anything to come up on a loaded, shared machine.
    static let patience: Duration = .seconds(180)

    /// Runs `script` against a fresh gateway and chromedriver; returns its status and its output.
    static func run(_ script: String, _ arguments: [String] = []) async throws -> (status: Int32, output: String) {
        try #require(FileManager.default.isExecutableFile(atPath: python), "no .build/test-tools-venv: run scripts/setup")
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("console-browser-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let usersFile = work + "/console-users"
        for (name, role) in users {
            let added = try await ChildProcess.run(
                CommandProcess.executable.path, ["console-user", "add", name, "--role", role, "--file", usersFile],
                environment: inherited(), input: Array((password + "\n").utf8), timeout: patience)
            try #require(added.status == 0, "console-user add \(name): \(String(decoding: added.errors, as: UTF8.self))")
        }
        let gateway = try CommandProcess(["serve", "--demo"], environment: [
            "GATEWAY_LISTEN": "127.0.0.1:0",
            "GATEWAY_DATABASE": "sqlite:\(work)/gateway.sqlite",
            "GATEWAY_CONSOLE_USERS": usersFile,
            "GATEWAY_RECONCILE_INTERVAL": "0",
            "GATEWAY_LOG_LEVEL": "notice",
            // A webhook nobody listens on, given up on after a second: dead events to redeliver.
            "GATEWAY_FULFILMENT_URL": "http://127.0.0.1:\(closedLoopbackPort())/never-listening",
            "GATEWAY_FULFILMENT_SECRET": "console-browser-test-secret",
            "GATEWAY_FULFILMENT_RETRY_MIN": "0.2", "GATEWAY_FULFILMENT_RETRY_MAX": "0.5",
            "GATEWAY_FULFILMENT_DEAD_AFTER": "1",
        ])
        var driver: ChromeDriver?
        do {
            let listening = try #require(await gateway.line(startingWith: "listening on ", within: 180),
                                         "the gateway did not start: \(gateway.stderr.suffix(4000))")
            let base = String(listening.split(separator: " ")[2])
            driver = try await ChromeDriver.start(logs: work)
            let output = work + "/script.out"
            let script = try ChildProcess(
                python, [root.appendingPathComponent(script).path, "--gateway", base, "--webdriver", driver!.url, "--work", work]
                    + arguments,
                environment: inherited(["CONSOLE_PASSWORD": password, "PYTHONDONTWRITEBYTECODE": "1"]),
                output: output, errors: output, directory: root.appendingPathComponent("scripts/console").path)
            let status = await script.wait(timeout: .seconds(900))
            let printed = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            await driver?.stop()
            let stopped = await gateway.stop()
            let logs = status == 0 ? "" : "\n--- gateway stderr ---\n" + String(gateway.stderr.suffix(4000))
            return (status == 0 && stopped != 0 ? 100 + stopped : status, printed + logs)
        } catch {
            await driver?.stop()
            await gateway.stop()
            throw error
        }
    }

    /// PATH and HOME (chromium wants one), and `extra`.
    static func inherited(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = extra
        for name in ["PATH", "HOME"] { environment[name] = ProcessInfo.processInfo.environment[name] }
        return environment
    }
}

/// chromedriver on a free 127.0.0.1 port (its default address: given `--allowed-ips` it would
/// listen on every interface), in a process group of its own.
struct ChromeDriver {
    let process: ChildProcess
    let url: String

    static func start(logs: String) async throws -> ChromeDriver {
        var failures: [String] = []
        // The free port is found by binding and closing it: another process may take it before
        // chromedriver does, so a start that ends at once is tried again on another port.
        for attempt in 1...3 {
            let port = closedLoopbackPort()
            let log = logs + "/chromedriver-\(attempt).log"
            let process = try ChildProcess("chromedriver", ["--port=\(port)"], environment: BrowserHarness.inherited(),
                                           output: log, errors: log, ownGroup: true)
            let driver = ChromeDriver(process: process, url: "http://127.0.0.1:\(port)")
            if await driver.becameReady() { return driver }
            failures.append((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
            await driver.stop()
        }
        throw ChromeDriverError(log: failures.joined(separator: "\n---\n"))
    }

    /// Polls `/status` until it says ready, the process ends, or patience runs out.
    private func becameReady() async -> Bool {
        guard let client = try? HTTPClient() else { return false }
        defer { Task { await client.shutdown() } }
        let deadline = ContinuousClock.now + BrowserHarness.patience
        while process.isRunning, ContinuousClock.now < deadline {
            let status = try? await client.execute(HTTPClientRequest(
                method: .get, url: url + "/status", timeouts: .init(connect: .seconds(5), total: .seconds(30))))
            if let status, status.status == 200, String(decoding: status.body, as: UTF8.self).contains("\"ready\":true") {
                return true
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Ends chromedriver and every browser it started: SIGTERM to the group, SIGKILL to whatever
    /// is left of it.
    func stop() async {
        process.sendToGroup(SIGTERM)
        await process.wait(timeout: .seconds(20))
        process.sendToGroup(SIGKILL)
    }
}

struct ChromeDriverError: Error, CustomStringConvertible {
    var log: String
    var description: String { "chromedriver did not become ready: \(log.suffix(2000))" }
}
