// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import Glibc
import Synchronization

/// Accepts connections on the listening socket, on a thread of its own, and hands each over to
/// libmicrohttpd's polling threads (`MHDDaemon` says how: `MHD_add_connection`).
///
/// libmicrohttpd can accept by itself, but stopping that (`MHD_quiesce_daemon`, which a graceful
/// shutdown needs so new connections are refused while old ones finish) races its epoll workers
/// for the listening socket: both remove it from the workers' epoll sets, and the loser aborts the
/// process ("Failed to remove listen FD from epoll set", libmicrohttpd 0.9.75). Here one thread
/// owns the socket, so stopping is only: wake it, wait for it to leave, close the socket.
final class HTTPAcceptLoop: Sendable {
    private let listenFD: Int32
    /// A pipe whose read end the loop polls beside the socket: one byte written stops it (the
    /// pipe is empty before, so the write never blocks).
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let connectionLimit: Int
    private let openConnections: @Sendable () -> Int
    private let handOver: @Sendable (_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Void
    private let left = DispatchSemaphore(value: 0)
    private let stopping = Mutex(false)

    private init(
        listenFD: Int32, wake: (read: Int32, write: Int32), connectionLimit: Int,
        openConnections: @escaping @Sendable () -> Int,
        handOver: @escaping @Sendable (Int32, UnsafePointer<sockaddr>, socklen_t) -> Void
    ) {
        self.listenFD = listenFD
        self.wakeRead = wake.read
        self.wakeWrite = wake.write
        self.connectionLimit = connectionLimit
        self.openConnections = openConnections
        self.handOver = handOver
    }

    /// Starts accepting from `listenFD` (non-blocking, listening). Each accepted socket goes to
    /// `handOver`, which owns it from then on; while `openConnections` is at `connectionLimit`
    /// nothing is accepted. The loop owns the listening socket from here and closes it in `stop`;
    /// if this throws, the caller still owns it.
    static func start(
        listenFD: Int32, connectionLimit: Int,
        openConnections: @escaping @Sendable () -> Int,
        handOver: @escaping @Sendable (_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Void
    ) throws(HTTPServerError) -> HTTPAcceptLoop {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw .listenFailed(errno: errno) }
        // Glibc's Swift module has neither pipe2 nor accept4; the gateway starts no processes
        // while serving, so setting close-on-exec just after is enough.
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let loop = HTTPAcceptLoop(
            listenFD: listenFD, wake: (ends[0], ends[1]), connectionLimit: connectionLimit,
            openConnections: openConnections, handOver: handOver)
        Thread {
            loop.run()
            // Closed here, by the only thread that uses it: a new connection is refused from now.
            close(loop.listenFD)
            loop.left.signal()
        }.start()
        return loop
    }

    /// Asks the loop to stop accepting, without waiting: it closes the listening socket as it
    /// leaves, within moments (a new connection is refused from then on, and one the kernel had
    /// queued but nobody accepted is reset). Later calls do nothing.
    func requestStop() {
        let first = stopping.withLock { stopping in
            defer { stopping = true }
            return !stopping
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Stops accepting and returns once the loop has left and closed the listening socket; a
    /// blocking call (the loop is never inside a call for long), so not for the cooperative pool.
    /// Call once.
    func stop() {
        requestStop()
        left.wait()
        close(wakeRead)
        close(wakeWrite)
    }

    // MARK: - The loop's thread

    private func run() {
        while true {
            var watched = [
                pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            guard poll(&watched, 2, -1) >= 0 else {
                if errno != EINTR, woken(withinMilliseconds: 100) { return }
                continue
            }
            if watched[1].revents != 0 { return }
            guard watched[0].revents != 0 else { continue }
            // At the limit a new connection waits in the kernel's backlog until one closes, as with
            // libmicrohttpd's own accepting.
            if openConnections() >= connectionLimit {
                if woken(withinMilliseconds: 10) { return }
                continue
            }
            if let pause = acceptOne(), woken(withinMilliseconds: pause) { return }
        }
    }

    /// Accepts one waiting connection and hands it over. Returns how long to pause first (in
    /// milliseconds) when accepting cannot go on right now.
    private func acceptOne() -> Int32? {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                accept(listenFD, $0, &length)
            }
        }
        guard fd >= 0 else {
            switch errno {
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                // Out of descriptors or memory: retrying at once would spin; the backlog holds them.
                return 100
            case EBADF, EINVAL, ENOTSOCK, EFAULT:
                return 1_000  // cannot happen while this loop owns the socket; never spin on it
            default:
                // EAGAIN, EINTR, and the errors Linux reports for a connection that failed before
                // it was accepted (ECONNABORTED, EPROTO, the network's): try the next one.
                return nil
            }
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { handOver(fd, $0, length) }
        }
        return nil
    }

    /// Waits up to `milliseconds` for `stop`; true when it came.
    private func woken(withinMilliseconds milliseconds: Int32) -> Bool {
        var watched = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
        return poll(&watched, 1, milliseconds) > 0
    }
}
