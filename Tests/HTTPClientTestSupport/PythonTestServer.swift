// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import ProcessTestSupport

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
    private let process: ChildProcess

    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("test_server.py").path

    private init(port: Int, tls: Bool, process: ChildProcess) {
        self.port = port
        baseURL = "\(tls ? "https" : "http")://127.0.0.1:\(port)"
        self.process = process
    }

    /// Starts a server and waits (at most 2 minutes: python3 goes through the pyenv shim, which took
    /// over 20 s with 17 servers starting at once at load 21) for its port.
    public static func start(_ options: Options) async throws -> PythonTestServer {
        let process = try ChildProcess("/usr/bin/env", ["python3", script] + options.arguments,
                                       environment: ProcessInfo.processInfo.environment,
                                       input: .pipe, output: .pipe, errors: .inherit)
        let line = await readLine(from: process.output!.fileDescriptor, timeout: .seconds(120))
        guard let line, line.hasPrefix("PORT "), let port = Int(line.dropFirst(5)) else {
            process.send(SIGKILL)
            await process.wait(timeout: .seconds(60))
            throw TestServerError(message: "test server did not report a port: \(line ?? "no output")")
        }
        return PythonTestServer(port: port, tls: options.tls, process: process)
    }

    /// `baseURL` + `path`.
    public func url(_ path: String) -> String { baseURL + path }

    /// Kills the server and reaps it (polling: nothing waits on the cooperative pool).
    public func stop() async {
        try? process.input?.close()
        process.send(SIGKILL)
        await process.wait(timeout: .seconds(60))
    }

    /// Reads one line from `fd`, polling so the wait is bounded; runs on a Dispatch thread.
    private static func readLine(from fd: Int32, timeout: Duration) async -> String? {
        await withCheckedContinuation { (done: CheckedContinuation<String?, Never>) in
            Thread.detachNewThread {
                let deadline = ContinuousClock.now + timeout
                var bytes: [UInt8] = []
                while bytes.count < 512, ContinuousClock.now < deadline {
                    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&descriptor, 1, 100) > 0 else { continue }
                    var byte: UInt8 = 0
                    guard read(fd, &byte, 1) == 1 else { break }
                    if byte == UInt8(ascii: "\n") {
                        done.resume(returning: String(decoding: bytes, as: UTF8.self))
                        return
                    }
                    bytes.append(byte)
                }
                done.resume(returning: nil)
            }
        }
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
