// SPDX-License-Identifier: Apache-2.0
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

/// Whether the client at the other end of a connection has gone: it closed its side of the
/// connection, or the connection was reset.
///
/// A held request (a long poll) is not read from while it waits, and libmicrohttpd's edge-triggered
/// polling can miss a close that arrives with the request's last bytes, so nobody would notice
/// the client leaving until the request ends or its connection times out. A peek reads nothing: the
/// connection's own reader still sees every byte (a pipelined request counts as a client still there).
enum ClientDeparture {
    static func hasLeft(socket fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let received = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if received > 0 { return false }
        if received == 0 { return true }
        switch errno {
        case ECONNRESET, ETIMEDOUT, ENOTCONN, EPIPE, EHOSTUNREACH, ENETUNREACH: return true
        default: return false  // EAGAIN: nothing to read, the client is still there; EINTR: next time
        }
    }
}
