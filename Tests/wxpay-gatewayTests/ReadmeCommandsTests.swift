// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import Testing

/// The README's commands run as written: its `sign` examples print what it says they print, and its
/// demo walk-through, run by bash against `serve --demo`, answers what it says. (Only the address
/// changes: the test's demo listens on a free port, not 8080.)
@Suite(.serialized)
struct ReadmeCommandsTests {
    static let readme: String = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../README.md")
        return (try? String(contentsOf: url.standardizedFileURL, encoding: .utf8)) ?? ""
    }()

    /// The README's shell lines, continuations joined, each with the comment line after it.
    static func commands() -> [(command: String, next: String)] {
        var joined: [String] = []
        var pending = ""
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasSuffix("\\") {
                pending += line.dropLast() + " "
            } else {
                joined.append(pending + line)
                pending = ""
            }
        }
        return joined.indices.map { (joined[$0], $0 + 1 < joined.count ? joined[$0 + 1] : "") }
    }

    /// Runs `script` to completion on a thread of its own: waiting for a child process on the
    /// cooperative pool (two threads on this machine) stalled every other test of the run for as
    /// long as the script took, 17-35 s for the sign examples under load.
    static func bash(_ script: String, environment: [String: String] = [:]) async throws -> (status: Int32, stdout: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try runBash(script, environment: environment) })
            }
        }
    }

    private static func runBash(_ script: String, environment: [String: String]) throws -> (status: Int32, stdout: String) {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("WXPAY_") && !$0.key.hasPrefix("GATEWAY_") }
        env.merge(environment) { $1 }
        // A ChildProcess (posix_spawn): Foundation's Process.run() can crash the test process on Linux.
        let result = try ChildProcess.runBlocking("/bin/bash", ["-c", script], environment: env, timeout: .seconds(600))
        return (result.status, String(decoding: result.output, as: UTF8.self))
    }

    @Test func theSignExamplesPrintWhatTheREADMESays() async throws {
        let examples = Self.commands().filter { $0.command.contains("swift run wxpay-gateway sign") }
        #expect(examples.count == 2)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
            .standardizedFileURL.path
        for example in examples {
            let expected = try #require(example.next.split(separator: "-> ", maxSplits: 1).last.map(String.init),
                                        "no '# -> …' line after \(example.command)")
            let command = example.command.replacingOccurrences(of: "swift run wxpay-gateway",
                                                               with: CommandProcess.executable.path)
            let run = try await Self.bash("cd '\(root)' && \(command)")
            #expect(run.status == 0, "\(example.command)")
            #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == expected, "\(example.command)")
        }
    }

    @Test func theDemoWalkThroughAnswersWhatTheREADMESays() async throws {
        let lines = Self.readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex { $0.hasPrefix("B=http://127.0.0.1:8080;") })
        let end = try #require(lines[start...].firstIndex { $0 == "```" })
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-readme-\(UUID().uuidString)")
        let gateway = try CommandProcess(["serve", "--demo"], environment: [
            "GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:" + database.appendingPathComponent("g.sqlite").path])
        defer { Task { await gateway.stop(); try? FileManager.default.removeItem(at: database) } }
        let listening = try #require(await gateway.line(startingWith: "listening on "), "stderr: \(gateway.stderr)")
        let base = String(listening.dropFirst("listening on ".count).prefix { $0 != " " })
        let script = lines[start..<end].joined(separator: "\n")
            .replacingOccurrences(of: "B=http://127.0.0.1:8080;", with: "B=\(base);")
        let run = try await Self.bash("set -eu\n" + script)
        #expect(run.status == 0)
        let out = run.stdout
        // 1: created, with the SDK's parameters; 3: SUCCESS after the wait; 4: the timeline.
        #expect(out.contains(#""out_trade_no":"demo-0001""#) && out.contains(#""packageValue":"Sign=WXPay""#))
        #expect(out.contains(#""final":true,"out_trade_no":"demo-0001""#))
        #expect(out.contains(#""detail":"NOTPAY -> SUCCESS: notify""#))
        // The dropped notify: demo-0002 found by orderquery during the wait.
        #expect(out.contains(#""final":true,"out_trade_no":"demo-0002","paid_at""#))
        #expect(out.contains(#"wxpay_settlements_total{source="orderquery",state="SUCCESS"} 1"#))
        // 5: the refund, accepted, then SUCCESS by its notify; the order REFUND; more than is left refused.
        #expect(out.contains(#""out_refund_no":"demo-r1","out_trade_no":"demo-0001","reason":"bought by mistake","refund_id":"5030"#))
        #expect(out.contains(#""state":"SUCCESS","succeeded_at":"#))
        #expect(out.contains(#""refunded_amount":300"#) && out.contains(#""state":"REFUND""#))
        // The one error the walk-through shows is the documented over-refund.
        #expect(out.components(separatedBy: #""error""#).count == 2)
        #expect(out.contains(#""code":"refund_exceeds_paid""#))
    }
}
