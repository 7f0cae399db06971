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
    _ router: HTTPRouter, _ configuration: HTTPServerConfiguration = HTTPServerConfiguration(),
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

/// Runs blocking work (socket reads, waiting for a process) on a thread of its own. Not on the
/// cooperative pool, which the server's async handlers need; and not on a Dispatch global queue
/// either: on Linux those share libdispatch's worker threads with the cooperative pool, and a few
/// blocked work items there starve the handlers until libdispatch's monitor adds threads, seconds later.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
// Three minutes: at load 60+ other suites held the cooperative pool long enough to starve a minute.
func eventually(timeout: Duration = .seconds(180), _ condition: @Sendable () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Raw HTTP over a blocking socket

/// A parsed HTTP/1.1 response.
struct RawResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var text: String { String(decoding: body, as: UTF8.self) }
}

/// One TCP connection to the server, with blocking I/O bounded by a receive timeout.
final class RawConnection: @unchecked Sendable {  // used by one thread at a time in each test
    let fd: Int32
    private var buffer: [UInt8] = []

    init(to address: HTTPServerSocketAddress, receiveTimeout: Duration = .seconds(120)) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var peer = sockaddr_in()
        peer.sin_family = sa_family_t(AF_INET)
        peer.sin_port = address.port.bigEndian
        inet_pton(AF_INET, address.host, &peer.sin_addr)
        let connected = withUnsafePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        // No close(fd) here: once every stored property is set, a throwing init still runs deinit,
        // and a second close could hit a descriptor number another thread has been handed since
        // (a libmicrohttpd epoll set, a SQLite file: both failed this way in full-suite runs).
        guard connected == 0 else { throw TestFailure("connect: errno \(errno)") }
        let (seconds, attoseconds) = receiveTimeout.components
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sends everything; false when the peer has closed (EPIPE/ECONNRESET), which tests of early
    /// answers expect.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads one response (Content-Length framed, as the server always sends).
    func readResponse() throws -> RawResponse {
        var response = try readResponseHeadOnly()
        let length = response.header("Content-Length").flatMap { Int($0) } ?? 0
        while buffer.count < length {
            guard try fill() else { throw TestFailure("connection closed inside a body") }
        }
        response.body = Array(buffer[..<length])
        buffer.removeFirst(length)
        return response
    }

    /// Reads a response's status line and headers only (the answer to HEAD has no body).
    func readResponseHeadOnly() throws -> RawResponse {
        let headEnd = try readUntil(Array("\r\n\r\n".utf8))
        let head = String(decoding: buffer[..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw TestFailure("bad status line: \(head.prefix(80))")
        }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return RawResponse(status: status, headers: headers.map { (name: $0.0, value: $0.1) }, body: [])
    }

    /// Whether the server closes the connection (EOF or reset) before `timeout`; any data that
    /// arrives meanwhile is discarded.
    func isClosedByPeer(within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var pollFD = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let remaining = deadline - ContinuousClock.now
            let milliseconds = max(
                1, Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
            )
            guard poll(&pollFD, 1, milliseconds) > 0 else { continue }
            var scratch = [UInt8](repeating: 0, count: 4096)
            let received = recv(fd, &scratch, scratch.count, 0)
            if received == 0 { return true }
            if received < 0 && errno != EAGAIN && errno != EINTR { return true }
        }
        return false
    }

    /// Whether no byte arrives for `duration` (the server holds the request).
    func staysSilent(for duration: Duration) -> Bool {
        var pollFD = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(
            duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        return poll(&pollFD, 1, milliseconds) == 0
    }

    private func readUntil(_ marker: [UInt8]) throws -> Int {
        while true {
            if let index = find(marker) { return index }
            guard try fill() else { throw TestFailure("connection closed before a complete response head") }
        }
    }

    private func find(_ marker: [UInt8]) -> Int? {
        guard buffer.count >= marker.count else { return nil }
        for start in 0...(buffer.count - marker.count)
        where buffer[start..<(start + marker.count)].elementsEqual(marker) {
            return start
        }
        return nil
    }

    /// Reads more bytes; false at EOF. Throws on timeout or reset.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let received = recv(fd, &chunk, chunk.count, 0)
            if received > 0 {
                buffer.append(contentsOf: chunk[..<received])
                return true
            }
            if received == 0 { return false }
            if errno == EINTR { continue }
            throw TestFailure("recv failed: errno \(errno)")
        }
    }
}

extension HTTPServerSocketAddress {
    func url(_ pathAndQuery: String, scheme: String = "http") -> URL {
        URL(string: "\(scheme)://\(description)\(pathAndQuery)")!
    }
}

/// A GET (or other request) through one raw connection, answered or thrown.
func rawRequest(_ address: HTTPServerSocketAddress, _ head: String, body: [UInt8] = []) async throws -> RawResponse {
    try await offPool {
        let connection = try RawConnection(to: address)
        connection.send(Array(head.utf8) + body)
        return try connection.readResponse()
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

/// A gate async handlers wait on until the test opens it (a long-poll that ends on demand). A
/// cancelled waiter returns at once, as a cancelled long-poll would.
final class Gate: Sendable {
    private struct State {
        var open = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    func wait() async {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.open || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        waiters.forEach { $0.resume() }
    }
}
