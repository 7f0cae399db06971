// SPDX-License-Identifier: Apache-2.0
import CMicroHTTPD
import Glibc
import Synchronization

/// Cuts connections whose request does not arrive in time.
///
/// libmicrohttpd's connection timeout only measures silence, so a slow-loris client that sends
/// one header byte every few seconds would hold its connection (and, thousands of times over,
/// the whole connection limit) indefinitely. Here each connection gets a deadline when it opens
/// and again whenever a response completes; the deadline is lifted once the request is complete
/// and answered or handed to its handler. A periodic sweep shuts down the sockets of connections
/// past their deadline, and libmicrohttpd, seeing the socket fail, closes the connection itself.
final class HTTPRequestDeadlines: Sendable {
    /// One connection's deadline, reached from libmicrohttpd's per-connection socket context.
    final class Entry: Sendable {
        let fd: Int32
        /// Coarse monotonic milliseconds; `none` while a request is being served.
        let deadline: Atomic<Int64>

        static let none = Int64.max

        init(fd: Int32, deadline: Int64) {
            self.fd = fd
            self.deadline = Atomic(deadline)
        }
    }

    private let timeoutMilliseconds: Int64
    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])

    init(timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        timeoutMilliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Coarse monotonic time in milliseconds: a vDSO read, cheap enough for every request.
    static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }

    // MARK: - libmicrohttpd hooks (polling threads)

    /// A connection opened; returns the context libmicrohttpd keeps for it (retained).
    func connectionStarted(_ connection: OpaquePointer) -> UnsafeMutableRawPointer? {
        let fd = wxpay_mhd_connection_fd(connection)
        guard fd >= 0 else { return nil }
        let entry = Entry(fd: fd, deadline: Self.now() + timeoutMilliseconds)
        entries.withLock { $0[ObjectIdentifier(entry)] = entry }
        return Unmanaged.passRetained(entry).toOpaque()
    }

    /// A connection closed. libmicrohttpd calls this before it closes the socket, so under the
    /// lock the sweep can never shut down a descriptor that was already reused.
    func connectionClosed(_ context: UnsafeMutableRawPointer) {
        let entry = Unmanaged<Entry>.fromOpaque(context).takeRetainedValue()
        _ = entries.withLock { $0.removeValue(forKey: ObjectIdentifier(entry)) }
    }

    /// The current request was answered or handed to its handler: no deadline while it is served.
    static func requestServed(_ connection: OpaquePointer) {
        entry(of: connection)?.deadline.store(Entry.none, ordering: .relaxed)
    }

    /// A response completed; the next request on this connection must arrive in time.
    func requestCompleted(_ connection: OpaquePointer) {
        Self.entry(of: connection)?.deadline.store(Self.now() + timeoutMilliseconds, ordering: .relaxed)
    }

    private static func entry(of connection: OpaquePointer) -> Entry? {
        wxpay_mhd_connection_socket_context(connection).map { Unmanaged<Entry>.fromOpaque($0).takeUnretainedValue() }
    }

    // MARK: - Sweep

    /// Shuts down the sockets of connections past their deadline, and of those waiting for a
    /// request whose client has left (libmicrohttpd can miss a close that arrives with a partial
    /// request's last bytes, and would keep the connection until its timeout); returns how many.
    @discardableResult
    func cutOverdueConnections(now: Int64 = HTTPRequestDeadlines.now()) -> Int {
        entries.withLock { entries in
            var cut = 0
            for entry in entries.values {
                let deadline = entry.deadline.load(ordering: .relaxed)
                guard deadline != Entry.none, deadline < now || ClientDeparture.hasLeftWithNothingUnread(socket: entry.fd) else { continue }
                entry.deadline.store(Entry.none, ordering: .relaxed)
                _ = shutdown(entry.fd, Int32(SHUT_RDWR))
                cut += 1
            }
            return cut
        }
    }
}
