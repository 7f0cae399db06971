// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import Glibc

/// A loopback server from `test_server.py` (Python standard library), run as a subprocess on
/// 127.0.0.1 port 0. It reports its port on stdout and exits when its stdin closes, so even a
/// crashed test process leaves no server behind. Use ``withPythonTestServer(_:_:)``.
public final class PythonTestServer: Sendable {
    /// What the server does with connections.
    public struct Options: Sendable {
        public enum Mode: String, Sendable {
            /// HTTP/1.1 keep-alive server; see the routes in test_server.py.
            case http
            /// Accepts and reads every connection, never answers.
            case silent
            /// Listening with a full accept queue: connecting can only time out.
            case blackhole
        }

        /// Whether the server asks for a client certificate.
        public enum ClientCertificates: Sendable {
            case none, optional, required
        }

        public var mode: Mode
        public var tls: Bool
        public var clientCertificates: ClientCertificates

        public init(mode: Mode = .http, tls: Bool = false, clientCertificates: ClientCertificates = .none) {
            self.mode = mode
            self.tls = tls
            self.clientCertificates = clientCertificates
        }

        public static let http = Options()
        public static let https = Options(tls: true)
        public static let silent = Options(mode: .silent)
        public static let blackhole = Options(mode: .blackhole)
        public static func https(clientCertificates: ClientCertificates) -> Options {
            Options(tls: true, clientCertificates: clientCertificates)
        }

        var arguments: [String] {
            var arguments = [mode.rawValue]
            if tls {
                arguments += ["--cert", TestCertificates.serverCertificate, "--key", TestCertificates.serverKey]
            }
            switch clientCertificates {
            case .none: break
            case .optional: arguments += ["--client-ca", TestCertificates.ca]
            case .required: arguments += ["--client-ca", TestCertificates.ca, "--require-client-cert"]
            }
            return arguments
        }
    }

    /// The bound port on 127.0.0.1.
    public let port: Int
    /// `http://127.0.0.1:<port>` or `https://…`.
    public let baseURL: String
    /// A `ChildProcess` (posix_spawn): Foundation's `Process.run()` can crash the test process on Linux.
    private let child: ChildProcess
    private let directory: URL

    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("test_server.py").path

    private init(port: Int, tls: Bool, child: ChildProcess, directory: URL) {
        self.port = port
        baseURL = "\(tls ? "https" : "http")://127.0.0.1:\(port)"
        self.child = child
        self.directory = directory
    }

    /// Starts a server and waits (at most 2 minutes) for its port.
    public static func start(_ options: Options) async throws -> PythonTestServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-py-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let output = directory.appendingPathComponent("stdout").path
        let child: ChildProcess
        do {
            // The pipe on stdin stays open while the server should run: its EOF ends the server.
            child = try ChildProcess("python3", [script] + options.arguments, environment: ProcessInfo.processInfo.environment,
                                     input: .pipe, output: output, errors: "/dev/null")
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        // Generous: at load 30-35 a Python start with ssl took over 20 s.
        let line = await firstLine(of: output, from: child, timeout: .seconds(120))
        guard let line, line.hasPrefix("PORT "), let port = Int(line.dropFirst(5)) else {
            child.closeInput()
            await child.wait(timeout: .zero)
            try? FileManager.default.removeItem(at: directory)
            throw TestServerError(message: "test server did not report a port: \(line ?? "no output")")
        }
        return PythonTestServer(port: port, tls: options.tls, child: child, directory: directory)
    }

    /// `baseURL` + `path`.
    public func url(_ path: String) -> String { baseURL + path }

    /// Kills the server and reaps it.
    public func stop() async {
        child.closeInput()
        await child.wait(timeout: .zero)
        try? FileManager.default.removeItem(at: directory)
    }

    /// The first line the child writes to `path`, polling so the wait is bounded.
    private static func firstLine(of path: String, from child: ChildProcess, timeout: Duration) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOfFile: path, encoding: .utf8), let newline = text.firstIndex(of: "\n") {
                return String(text[..<newline])
            }
            if !child.isRunning { break }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }
}

/// The test server could not be started.
public struct TestServerError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Runs `body` against a fresh server and kills the server afterwards, whether `body` throws or not.
public func withPythonTestServer<T>(
    _ options: PythonTestServer.Options = .http,
    _ body: (PythonTestServer) async throws -> T
) async throws -> T {
    let server = try await PythonTestServer.start(options)
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}
