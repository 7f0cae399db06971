// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The `create` and `notify` phases' load: one thread, `connections` keep-alive HTTP/1.1
/// connections on raw non-blocking sockets under one epoll (`GatewayEpoll`), one request in
/// flight on each.
///
/// Why not the project's `HTTPClient`: it is libcurl's multi interface behind Swift tasks and
/// cost about 65 µs of CPU per request, on the same 2 cores as the gateway it measures — a
/// quarter of the machine spent on the measuring tool. Here the requests are complete byte
/// strings built before the clock starts, and a response is parsed only as far as its status
/// line, its framing (Content-Length or chunked) and the body the phase checks, which leaves a
/// few µs per request, mostly in the kernel's `send`/`recv`.
///
/// Single-threaded and never shared: its buffers are plain pointers owned by `Connection`.
struct GatewayLoadGenerator {
    /// Every request's bytes, concatenated; request `i` is `bytes[offsets[i]..<offsets[i + 1]]`.
    struct Requests {
        private(set) var bytes: [UInt8] = []
        private(set) var offsets: [Int] = [0]

        var count: Int { offsets.count - 1 }

        mutating func append(_ request: some Sequence<UInt8>) {
            bytes.append(contentsOf: request)
            offsets.append(bytes.count)
        }
    }

    /// What `run` measured: answers that passed the check, the first that did not, latencies.
    struct Outcome {
        var completed = 0
        var failures = 0
        var firstFailure: String?
        var latenciesMicroseconds: [Int] = []
        var seconds = 0.0
        var cpuSeconds = 0.0
    }

    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    let host: String
    /// The instances' ports: connection `i` goes to `ports[i % ports.count]`, so several gateway
    /// instances share the load as behind a round-robin balancer.
    let ports: [UInt16]
    let connections: Int
    let timeout: Double

    /// Sends every request once, `connections` at a time, and checks each answer with
    /// `check(status, body)`. Stops at the first failure (an unexpected answer, or a refused or
    /// reset connection: the run would no longer measure what it says) or at the timeout; the
    /// caller judges the counts.
    func run(_ requests: Requests, check: (Int, UnsafeRawBufferPointer) -> Bool) throws -> Outcome {
        let poller = GatewayEpoll.create()
        guard poller >= 0 else { throw Failed(description: "epoll_create1: errno \(errno)") }
        defer { close(poller) }
        var pool: [Connection] = []
        defer { pool.forEach { $0.close() } }
        for slot in 0..<min(connections, requests.count) {
            let connection = try Connection(host: host, port: ports[slot % ports.count], poller: poller, slot: slot)
            pool.append(connection)
        }
        let events = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * GatewayEpoll.eventSize, alignment: 8)
        defer { events.deallocate() }

        var outcome = Outcome()
        outcome.latenciesMicroseconds.reserveCapacity(requests.count)
        var next = 0
        var body: [UInt8] = []
        let cpuBefore = Self.processCPUSeconds()
        let started = Self.monotonicMicroseconds()
        let deadline = started + Int(timeout * 1e6)

        requests.bytes.withUnsafeBytes { all in
            func request(_ index: Int) -> UnsafeRawBufferPointer {
                UnsafeRawBufferPointer(rebasing: all[requests.offsets[index]..<requests.offsets[index + 1]])
            }
            func fail(_ message: String) {
                outcome.failures += 1
                outcome.firstFailure = outcome.firstFailure ?? message
            }
            for connection in pool where next < requests.count {
                if !connection.start(next, request(next), now: Self.monotonicMicroseconds()) {
                    fail("#\(next): send failed: errno \(errno)")
                }
                next += 1
            }
            var open = pool.count
            while open > 0, outcome.failures == 0 {
                let now = Self.monotonicMicroseconds()
                guard now < deadline else { break }
                let ready = GatewayEpoll.wait(poller, into: events, timeoutMilliseconds: Int32(min(100, (deadline - now) / 1000 + 1)))
                if ready < 0 {
                    if errno == EINTR { continue }
                    fail("epoll_wait: errno \(errno)")
                    break
                }
                for entry in 0..<Int(ready) {
                    let (flags, token) = GatewayEpoll.event(events, entry)
                    let connection = pool[Int(token)]
                    guard let index = connection.current else { continue }
                    if flags & GatewayEpoll.output != 0, !connection.flush() {
                        fail("#\(index): send failed: errno \(errno)")
                        continue
                    }
                    guard flags & (GatewayEpoll.input | GatewayEpoll.error | GatewayEpoll.hangUp) != 0 else { continue }
                    switch connection.receive(into: &body) {
                    case .incomplete:
                        continue
                    case .failed(let reason):
                        fail("#\(index): \(reason)")
                        continue
                    case .response(let status, let closes):
                        let finished = Self.monotonicMicroseconds()
                        outcome.latenciesMicroseconds.append(finished - connection.sentAt)
                        let passed = body.withUnsafeBytes { check(status, $0) }
                        if passed {
                            outcome.completed += 1
                        } else {
                            fail("#\(index): HTTP \(status) \(String(decoding: body.prefix(200), as: UTF8.self))")
                        }
                        if closes {
                            // The server asked to close: a new connection takes this slot.
                            do {
                                try connection.reconnect()
                            } catch {
                                fail("#\(index): reconnect: \(error)")
                                continue
                            }
                        }
                        if next < requests.count {
                            if !connection.start(next, request(next), now: finished) {
                                fail("#\(next): send failed: errno \(errno)")
                            }
                            next += 1
                        } else {
                            connection.current = nil
                            open -= 1
                        }
                    }
                }
            }
        }
        outcome.seconds = Double(Self.monotonicMicroseconds() - started) / 1e6
        outcome.cpuSeconds = Self.processCPUSeconds() - cpuBefore
        return outcome
    }

    static func monotonicMicroseconds() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return time.tv_sec * 1_000_000 + time.tv_nsec / 1000
    }

    /// User + system time of this process: the load generator shares the 2 cores with the gateway.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

extension GatewayLoadGenerator {
    /// One keep-alive connection: the request being sent and the response being read. A class so
    /// the loop can update it in place; never leaves the generator's thread.
    final class Connection {
        enum Received {
            case incomplete
            case failed(String)
            /// A complete response; its body is in the caller's buffer. `closes`: the server
            /// said `Connection: close`.
            case response(status: Int, closes: Bool)
        }

        private(set) var fd: Int32 = -1
        private let host: String
        private let port: UInt16
        private let poller: Int32
        private let slot: Int
        /// Whether EPOLLOUT is registered (only while a request is half sent).
        private var wantsOutput = false
        /// The request number in flight, nil when idle.
        var current: Int?
        private(set) var sentAt = 0
        private var pending: UnsafeRawBufferPointer?
        /// Response bytes received and not yet consumed.
        private let buffer: UnsafeMutableRawPointer
        private let capacity = 256 * 1024
        private var filled = 0

        init(host: String, port: UInt16, poller: Int32, slot: Int) throws {
            self.host = host
            self.port = port
            self.poller = poller
            self.slot = slot
            buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
            try open()
        }

        private func open() throws {
            fd = try Self.connect(host: host, port: port)
            wantsOutput = false
            guard GatewayEpoll.add(poller, fd, events: GatewayEpoll.input, token: UInt64(slot)) else {
                throw Failed(description: "epoll_ctl: errno \(errno)")
            }
        }

        deinit { buffer.deallocate() }

        func close() {
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }

        func reconnect() throws {
            close()
            filled = 0
            pending = nil
            try open()
        }

        /// Sends request `index`; what the socket does not take now is sent on EPOLLOUT.
        func start(_ index: Int, _ request: UnsafeRawBufferPointer, now: Int) -> Bool {
            current = index
            sentAt = now
            pending = request
            return flush()
        }

        /// Sends what is pending; false when the connection failed.
        func flush() -> Bool {
            guard var rest = pending else { return true }
            while !rest.isEmpty {
                let sent = send(fd, rest.baseAddress, rest.count, Int32(MSG_NOSIGNAL))
                if sent < 0 {
                    if errno == EINTR { continue }
                    if errno == EAGAIN { break }
                    return false
                }
                rest = UnsafeRawBufferPointer(rebasing: rest[sent...])
            }
            pending = rest.isEmpty ? nil : rest
            // Rare (requests are a few hundred bytes): EPOLLOUT only while a request is half sent.
            if (pending != nil) != wantsOutput {
                wantsOutput = pending != nil
                let events = GatewayEpoll.input | (wantsOutput ? GatewayEpoll.output : 0)
                guard GatewayEpoll.modify(poller, fd, events: events, token: UInt64(slot)) else { return false }
            }
            return true
        }


        /// Reads what has arrived; once the response is complete, puts its body in `body`.
        func receive(into body: inout [UInt8]) -> Received {
            let count = recv(fd, buffer + filled, capacity - filled, Int32(MSG_DONTWAIT))
            if count < 0 {
                return errno == EAGAIN || errno == EINTR ? .incomplete : .failed("recv: errno \(errno)")
            }
            if count == 0 { return .failed("connection closed by the gateway mid-request") }
            filled += count
            let parsed = GatewayResponseFraming.parse(UnsafeRawBufferPointer(start: buffer, count: filled), body: &body)
            switch parsed {
            case .incomplete:
                if filled == capacity { return .failed("response larger than \(capacity) bytes") }
                return .incomplete
            case .malformed(let reason):
                return .failed(reason)
            case .complete(let status, let length, let closes):
                // A keep-alive server sends nothing unasked: any extra byte is a protocol error.
                guard length == filled else { return .failed("bytes after the response") }
                filled = 0
                return .response(status: status, closes: closes)
            }
        }

        private static func connect(host: String, port: UInt16) throws -> Int32 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw Failed(description: "socket: errno \(errno)") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                Glibc.close(fd)
                throw Failed(description: "not an IPv4 address: \(host)")
            }
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard result == 0 else {
                let code = errno
                Glibc.close(fd)
                throw Failed(description: "connect: errno \(code)")
            }
            // Requests go out whole, at once: Nagle would hold each behind the previous answer's ACK.
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return fd
        }
    }
}
