// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// The support console in a real browser: scripts/console/browser_test.py drives headless
/// Chromium through WebDriver (selenium; chromium and chromium-driver from scripts/setup) against
/// this build's `wxpay-gateway serve --demo`, and starts and stops the gateway, chromedriver and
/// the browser itself, all on 127.0.0.1. Every flow of the console's contract is one of its steps:
/// sign-in and the cookie's flags, a search by each kind of identifier, a paid order's timeline,
/// recheck, a refund, redelivering a dead event, role refusals, a forged CSRF token, the lockout,
/// signing out, and the audit log listing all of it.
struct ConsoleBrowserTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func everyConsoleFlowWorksInHeadlessChromium() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("console-browser-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let python = Self.package.appendingPathComponent(".build/test-tools-venv/bin/python").path
        let script = Self.package.appendingPathComponent("scripts/console/browser_test.py").path
        let run = try Spawned([script, "--binary", CommandProcess.executable.path], input: "/dev/null",
                              output: folder + "/out", errors: folder + "/err",
                              environment: ["PYTHONDONTWRITEBYTECODE": "1"], executable: python)
        let status = await run.wait(timeout: 900)
        let report = ((try? String(contentsOfFile: folder + "/out", encoding: .utf8)) ?? "")
            + ((try? String(contentsOfFile: folder + "/err", encoding: .utf8)) ?? "")
        #expect(status == 0, "\(report.suffix(8000))")
        #expect(report.contains("11 passed, 0 failed"), "\(report.suffix(2000))")
    }
}
