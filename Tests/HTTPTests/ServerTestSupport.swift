// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Dispatch
import Foundation
import Glibc
import HTTP
import Synchronization
import HTTPClientTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Shared helpers for the HTTP server tests: a server that is always shut down, a raw-socket client
// (for what URLSession cannot do: chunked uploads, stalls, connection reuse, counting), URLSession
// and curl wrappers, and process introspection.

/// Runs `body` against a started server and always shuts it down, even when `body` throws.
@discardableResult
func withServer<Result: Sendable>(
    _ router: HTTPRouter, _ configuration: HTTPServerConfiguration = .patient,
    shutdownGrace: Duration = .seconds(5),
    _ body: (HTTPServer, HTTPServerSocketAddress) async throws -> Result
) async throws -> Result {
    let server = HTTPServer(router: router, configuration: configuration)
    let address = try await server.start()
    do {
        let result = try await body(server, address)
        await server.shutdown(gracePeriod: shutdownGrace)
        return result
    } catch {
        await server.shutdown(gracePeriod: .milliseconds(100))
        throw error
    }
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
// Three minutes: at load 60+ other suites held the cooperative pool long enough to starve a minute.

extension HTTPServerSocketAddress {
    func url(_ pathAndQuery: String, scheme: String = "http") -> URL {
        URL(string: "\(scheme)://\(description)\(pathAndQuery)")!
    }
}

// MARK: - URLSession

/// One URLSession data task, bridged to async (the toolchain's async `data(for:)` is not relied on).
func urlSessionRequest(_ request: URLRequest, session: URLSession = .shared) async throws -> (
    Int, [String: String], Data
) {
    // URLSession's own 60 s timed out (-1001) on a machine at load 60+; a hung server still fails.
    var request = request
    request.timeoutInterval = max(request.timeoutInterval, 300)
    return try await withCheckedThrowingContinuation { continuation in
        let task = session.dataTask(with: request) { data, response, error in
            if let error {
                continuation.resume(throwing: error)
                return
            }
            guard let http = response as? HTTPURLResponse else {
                continuation.resume(throwing: TestFailure("not an HTTP response"))
                return
            }
            var headers: [String: String] = [:]
            for (name, value) in http.allHeaderFields {
                headers[String(describing: name).lowercased()] = String(describing: value)
            }
            continuation.resume(returning: (http.statusCode, headers, data ?? Data()))
        }
        task.resume()
    }
}

// MARK: - Processes and the environment

/// The output and exit status of a command-line tool.
struct ProcessResult: Sendable {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// Runs a tool to completion (bounded by `timeout`, after which it is killed). A `ChildProcess`
/// (posix_spawn), not Foundation's `Process`, whose `run()` can crash the test process on Linux.
func runProcess(_ executable: String, _ arguments: [String], timeout: Duration = .seconds(30)) async throws
    -> ProcessResult
{
    let result = try await ChildProcess.run(executable, arguments, environment: ProcessInfo.processInfo.environment,
                                            timeout: timeout)
    return ProcessResult(status: result.status, standardOutput: String(decoding: result.output, as: UTF8.self),
                         standardError: String(decoding: result.errors, as: UTF8.self))
}

/// The number of threads in this process (entries of /proc/self/task).
func currentThreadCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
}

/// Raises the soft open-file limit (to at most `wanted`), for tests holding a thousand sockets.
func raiseOpenFileLimit(to wanted: rlim_t) {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < wanted else { return }
    limit.rlim_cur = min(wanted, limit.rlim_max)
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

extension TestCertificates {
    /// The path of a file in certs/test.
    static func path(_ name: String) -> String { file(name) }

    static func pem(_ name: String) throws -> String {
        try String(contentsOfFile: path(name), encoding: .utf8)
    }

    /// Server TLS with the test CA as the client CA.
    static func tls(clientCertificatePolicy: HTTPServerClientCertificatePolicy = .optional) throws
        -> HTTPServerConfiguration.TLS
    {
        HTTPServerConfiguration.TLS(
            certificatePEM: try pem("server.crt"), privateKeyPEM: try pem("server.key"),
            clientCAPEM: try pem("ca.crt"), clientCertificatePolicy: clientCertificatePolicy)
    }
}

