// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import Glibc
import HTTP
import HTTPClientTestSupport
import Testing

/// The built `wxpay-gateway` executable run as a child process, the way an operator runs it: its
/// own environment (none of the test runner's WXPAY_/GATEWAY_ variables), stdout and stderr in
/// files of a temp directory, stopped with SIGTERM (then SIGKILL) and the directory removed by `stop`.
final class CommandProcess: @unchecked Sendable {
    // Touched only by the test that owns it, one step at a time.
    /// A `ChildProcess` (posix_spawn), not Foundation's `Process`, whose `run()` can crash on Linux.
    let child: ChildProcess
    let directory: URL
    let stdoutURL: URL
    let stderrURL: URL

    /// The debug build of the executable, beside this test bundle (`swift build --build-tests` builds both).
    static var executable: URL {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var folder = here.deletingLastPathComponent()
        // The bundle may be a directory (.xctest on Darwin) or the binary itself (Linux).
        while folder.path != "/" && !FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("wxpay-gateway").path) {
            folder = folder.deletingLastPathComponent()
        }
        return folder.appendingPathComponent("wxpay-gateway")
    }

    /// Starts `wxpay-gateway arguments…` with exactly `environment` (plus PATH and HOME); with
    /// `shellFirst`, through `/bin/sh`, which runs those commands (`trap '' XFSZ`, say) and then
    /// execs the gateway in its place, so the pid is the gateway's.
    init(_ arguments: [String], environment: [String: String], shellFirst: String? = nil) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-cmd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        stdoutURL = directory.appendingPathComponent("stdout")
        stderrURL = directory.appendingPathComponent("stderr")
        var env = environment
        for name in ["PATH", "HOME"] { env[name] = ProcessInfo.processInfo.environment[name] }
        if let shellFirst {
            child = try ChildProcess("/bin/sh", ["-c", shellFirst + "; exec \"$0\" \"$@\"", Self.executable.path] + arguments,
                                     environment: env, output: stdoutURL.path, errors: stderrURL.path, directory: directory.path)
        } else {
            child = try ChildProcess(Self.executable.path, arguments, environment: env, output: stdoutURL.path,
                                     errors: stderrURL.path, directory: directory.path)
        }
    }

    var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }
    var isRunning: Bool { child.isRunning }
    var processIdentifier: pid_t { child.pid }

    /// The exit status once the process has ended by itself, waiting at most `timeout` seconds; nil
    /// if it is still running then.
    func exitStatus(within timeout: Double = 60) async -> Int32? {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while child.isRunning && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        return child.exitStatus
    }

    /// The first stdout line starting with `prefix`, waiting (bounded) for it.
    func line(startingWith prefix: String, within timeout: Double = 60) async -> String? {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < deadline {
            if let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) { return String(line) }
            if !child.isRunning { break }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return stdout.split(separator: "\n").first { $0.hasPrefix(prefix) }.map(String.init)
    }

    /// SIGTERM, then SIGKILL after `grace` seconds; returns the exit status; removes the directory.
    @discardableResult
    func stop(grace: Double = 20) async -> Int32 {
        child.send(SIGTERM)
        let status = await child.wait(timeout: .seconds(grace))
        try? FileManager.default.removeItem(at: directory)
        return status
    }

    /// SIGKILL, as a crash or a power cut would end it; returns once it is gone.
    func kill() async {
        child.send(SIGKILL)
        await child.wait(timeout: .seconds(30))
    }
}

/// One HTTP exchange with a child process, through the HTTP module's client.
struct Exchange {
    var status: Int
    var body: String
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
}

extension HTTPClient {
    func send(_ method: HTTPMethod, _ url: String, token: String? = nil, body: String = "") async throws -> Exchange {
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        let response = try await execute(HTTPClientRequest(
            method: method, url: url, headers: HTTPHeaders(headers), body: Array(body.utf8),
            timeouts: .init(connect: .seconds(10), total: .seconds(60))))
        return Exchange(status: response.status, body: String(decoding: response.body, as: UTF8.self))
    }

    /// Creates a 990-fen order on the gateway at `base`, has the user pay it at the simulator at
    /// `wechat`, and reads the order (plain reads: no `wait`, so no orderquery) until WeChat's
    /// notify settled it, for at most a minute. Returns the order's last state.
    func createAndPay(_ outTradeNo: String, base: String, wechat: String, token: String) async throws -> String? {
        let created = try await send(.post, base + "/v1/orders", token: token, body:
            #"{"amount":990,"description":"x","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)"}"#)
        #expect(created.status == 201, "\(created.body)")
        #expect(try await send(.post, wechat + "/simulator/orders/\(outTradeNo)/pay").status == 200)
        var state: String?
        let deadline = ContinuousClock.now + .seconds(60)
        while state != "SUCCESS" && ContinuousClock.now < deadline {
            state = try await send(.get, base + "/v1/orders/" + outTradeNo, token: token).json["state"] as? String
            if state != "SUCCESS" { try await Task.sleep(for: .milliseconds(20)) }
        }
        return state
    }
}

/// The production gateway once it started, for the test's clean-up.
final class StartedGateway: @unchecked Sendable {
    // Set once by the test before the clean-up reads it.
    var gateway: CommandProcess?
    var base = ""

    /// Starts `serve` with `environment(port)` on a free loopback port, the port chosen before the
    /// start because the notify URLs name it; a port taken meanwhile by another test (exit 69) is
    /// retried. Returns the running process, or nil after five refused attempts.
    func start(_ environment: (Int) -> [String: String], demo: Bool = false) async throws -> CommandProcess? {
        for _ in 0..<5 {
            let port = closedLoopbackPort()
            base = "http://127.0.0.1:\(port)"
            let attempt = try CommandProcess(demo ? ["serve", "--demo"] : ["serve"], environment: environment(port))
            if await attempt.line(startingWith: demo ? "listening on " : "wxpay-gateway listening on ") != nil {
                gateway = attempt
                return attempt
            }
            #expect(await attempt.exitStatus(within: 5) == 69, "stderr: \(attempt.stderr)")
            await attempt.stop()
        }
        return nil
    }
}

/// The merchant of the production-mode starts, and of the simulators they talk to: its v2 key is
/// not demo mode's published one, which a production start refuses.
enum TestMerchant {
    static let apiKey = "testV2key0123456789abcdefABCDEFG"
}
