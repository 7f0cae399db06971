// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import Glibc

/// The built `wxpay-gateway` binary run as a user runs it: `serve` in demo mode on 127.0.0.1
/// port 0 with its database in a temp directory, its output in files there (so a chatty child
/// never blocks on a full pipe), stopped with SIGTERM (SIGKILL after 15 s) at the end.
final class ServedGateway: Sendable {
    /// How demo mode is asked for.
    static let demoArguments = ["serve", "--demo"]

    let process: ChildProcess
    let directory: URL
    /// `http://127.0.0.1:PORT`.
    let base: String
    /// The demo user's app token from the banner.
    let appToken: String?

    private init(process: ChildProcess, directory: URL, base: String, appToken: String?) {
        self.process = process
        self.directory = directory
        self.base = base
        self.appToken = appToken
    }

    struct StartFailure: Error, CustomStringConvertible {
        var status: Int32?
        var output: String
        var errors: String
        var description: String { "serve did not start (status \(status.map(String.init) ?? "none")): \(output) \(errors)" }
    }

    static func executable() throws -> URL {
        var candidates: [URL] = []
        if let bundle = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: bundle).deletingLastPathComponent().appendingPathComponent("wxpay-gateway"))
        }
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(package.appendingPathComponent(".build/debug/wxpay-gateway"))
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw StartFailure(status: nil, output: "", errors: "wxpay-gateway not built: run `swift build --build-tests`")
        }
        return found
    }

    /// The environment of a child: PATH and HOME of this process, none of its WXPAY_/GATEWAY_
    /// variables, plus `extra`.
    static func environment(_ extra: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("WXPAY_") && !$0.key.hasPrefix("GATEWAY_") }
        for (name, value) in extra { environment[name] = value }
        return environment
    }

    /// Starts `serve` and waits (up to 3 minutes: a loaded machine took over 60 s) for its banner;
    /// throws with its output if it exits.
    static func start(environment extra: [String: String] = [:], arguments: [String] = demoArguments) async throws
        -> ServedGateway
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("served-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var variables = ["GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:\(directory.path)/gateway.sqlite",
                         "GATEWAY_LOG_LEVEL": "notice", "GATEWAY_RECONCILE_INTERVAL": "0"]
        for (name, value) in extra { variables[name] = value }
        let process = try launch(arguments, variables: variables, output: directory)
        let deadline = ContinuousClock.now + .seconds(180)
        while ContinuousClock.now < deadline {
            let output = read(directory, "out")
            if let base = line(after: "listening on ", in: output)?.split(separator: " ").first {
                // The banner is written in one go: the token line is there with the address.
                return ServedGateway(process: process, directory: directory, base: String(base),
                                     appToken: line(after: "app token: ", in: output))
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let status = process.exitStatus
        await process.wait(timeout: .zero)
        let failure = StartFailure(status: status, output: read(directory, "out"), errors: read(directory, "err"))
        try? FileManager.default.removeItem(at: directory)
        throw failure
    }

    /// Runs the binary to completion (a command, or a `serve` expected to refuse to start).
    static func run(_ arguments: [String], environment extra: [String: String] = [:]) async throws
        -> (status: Int32, output: String, errors: String)
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var variables = ["GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:\(directory.path)/gateway.sqlite"]
        for (name, value) in extra { variables[name] = value }
        let process = try launch(arguments, variables: variables, output: directory)
        let status = await process.wait(timeout: .seconds(60))
        return (status, read(directory, "out"), read(directory, "err"))
    }

    /// Starts the binary with stdout and stderr going to the files `out` and `err` in `output`.
    private static func launch(_ arguments: [String], variables: [String: String], output: URL) throws -> ChildProcess {
        try ChildProcess(try executable().path, arguments, environment: environment(variables),
                         output: output.appendingPathComponent("out").path, errors: output.appendingPathComponent("err").path)
    }

    /// What the gateway wrote to stderr so far (its JSON log lines).
    var log: String { Self.read(directory, "err") }

    func send(signal: Int32) { process.send(signal) }

    func stop() async {
        process.send(SIGTERM)
        await process.wait(timeout: .seconds(15))
        try? FileManager.default.removeItem(at: directory)
    }

    private static func read(_ directory: URL, _ name: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    private static func line(after prefix: String, in text: String) -> String? {
        text.split(separator: "\n").first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }
}
