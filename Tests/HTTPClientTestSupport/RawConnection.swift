// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import HTTP

// A raw-socket HTTP/1.1 client, for what no client library does on purpose: smuggling framings,
// stalls, connection reuse, a forwarded address. Shared by the HTTP server's tests and the
// gateway's (the console's lockout).

/// Runs blocking work (socket reads, waiting for a process) on a thread of its own. Not on the
/// cooperative pool, which the server's async handlers need; and not on a Dispatch global queue
/// either: on Linux those share libdispatch's worker threads with the cooperative pool, and a few
/// blocked work items there starve the handlers until libdispatch's monitor adds threads, seconds later.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

// MARK: - Raw HTTP over a blocking socket

/// A parsed HTTP/1.1 response.
public struct RawResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// One TCP connection to the server, with blocking I/O bounded by a receive timeout.
public final class RawConnection: @unchecked Sendable {  // used by one thread at a time in each test
    public let fd: Int32
    private var buffer: [UInt8] = []

    public init(to address: HTTPServerSocketAddress, receiveTimeout: Duration = .seconds(120)) throws {
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
    public func send(_ bytes: [UInt8]) -> Bool {
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
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads one response (Content-Length framed, as the server always sends).
    public func readResponse() throws -> RawResponse {
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
    public func readResponseHeadOnly() throws -> RawResponse {
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
    public func isClosedByPeer(within timeout: Duration) -> Bool {
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
    public func staysSilent(for duration: Duration) -> Bool {
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

/// A GET (or other request) through one raw connection, answered or thrown.
public func rawRequest(_ address: HTTPServerSocketAddress, _ head: String, body: [UInt8] = []) async throws -> RawResponse {
    try await offPool {
        let connection = try RawConnection(to: address)
        connection.send(Array(head.utf8) + body)
        return try connection.readResponse()
    }
}

