// SPDX-License-Identifier: Apache-2.0
import CMicroHTTPD
import Glibc

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
