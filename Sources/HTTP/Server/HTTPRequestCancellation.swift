// SPDX-License-Identifier: Apache-2.0
import CMicroHTTPD
import Glibc
import Synchronization

/// Cancels one request's handler, once: its task (an async route) or the action a deferred
/// handler registered through `HTTPServerResponder.onCancel`. A shutdown cancels every waiting
/// request; the server's sweep cancels one whose client has left, on routes that ask for it
/// (`HTTPRouteOptions.cancelledWhenClientLeaves`).
final class HTTPRequestCancellation: Sendable {
    private struct State {
        var cancelled = false
        var action: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Runs `action` on `cancel`, or at once when the request was already cancelled; it replaces an
    /// action registered before and not yet run.
    func whenCancelled(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard !state.cancelled else { return true }
            state.action = action
            return false
        }
        if runNow { action() }
    }

    /// Cancels the request: the registered action runs now, on this thread, outside any lock.
    /// Later calls do nothing.
    func cancel() {
        let action = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.cancelled else { return nil }
            state.cancelled = true
            defer { state.action = nil }
            return state.action
        }
        action?()
    }

    /// The request was answered: its action is let go without running.
    func forget() {
        state.withLock { $0.action = nil }
    }
}

/// Whether the client at the other end of a connection has gone.
///
/// A held request (a long poll) is not read from while it waits, and libmicrohttpd's edge-triggered
/// polling can miss a close that arrives with a request's last bytes, so nobody would notice the
/// client leaving until the request ends or its connection times out. Neither check reads
/// anything: the connection's own reader still sees every byte.
enum ClientDeparture {
    /// For a held request, whose own bytes were all read: its client has gone or no longer waits
    /// as a client of a long poll does. It finished sending (see `hasFinishedSending`), or it sent
    /// `unreadLimit` bytes or more past its request: then its receive window may be full, and a
    /// close behind those bytes waits in the client's kernel where no look from here can see it.
    static func hasStoppedWaiting(socket fd: Int32) -> Bool {
        hasFinishedSending(socket: fd) || wxpay_socket_unread_bytes(fd) >= unreadLimit
    }

    /// More than any request a client pipelines behind a long poll: 64 KiB.
    static let unreadLimit: Int32 = 64 * 1024

    /// The client will send nothing more: it closed or half-closed its side, or the connection was
    /// reset, whatever it sent before that is still unread (a pipelined request, a stray CRLF).
    static func hasFinishedSending(socket fd: Int32) -> Bool {
        var watched = pollfd(fd: fd, events: Int16(peerClosedItsSide), revents: 0)
        guard poll(&watched, 1, 0) == 1 else { return false }
        return Int32(watched.revents) & (peerClosedItsSide | Int32(POLLHUP) | Int32(POLLERR)) != 0
    }

    /// The client closed its side (or reset the connection) and nothing it sent is left unread:
    /// for a connection waiting for a request, there is none to come.
    static func hasLeftWithNothingUnread(socket fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let received = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if received > 0 { return false }
        if received == 0 { return true }
        switch errno {
        case ECONNRESET, ETIMEDOUT, ENOTCONN, EPIPE, EHOSTUNREACH, ENETUNREACH: return true
        default: return false  // EAGAIN: nothing to read, the client is still there; EINTR: next time
        }
    }

    /// Linux's POLLRDHUP (the peer shut down its writing side), which Glibc's module leaves out
    /// (it needs _GNU_SOURCE).
    private static let peerClosedItsSide: Int32 = 0x2000
}
