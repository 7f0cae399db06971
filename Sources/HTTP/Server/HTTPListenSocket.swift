// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The listening socket, made here rather than by libmicrohttpd so a bind failure reports its
/// errno (EADDRINUSE, EACCES) and the bound port is read with `getsockname`.
enum HTTPListenSocket {
    /// A non-blocking, close-on-exec socket bound to `address` and listening, with the address it
    /// actually got (the kernel's port when asked for port 0).
    static func open(_ address: HTTPServerSocketAddress, backlog: Int) throws(HTTPServerError)
        -> (fd: Int32, bound: HTTPServerSocketAddress)
    {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        // Non-blocking: the accepting thread (HTTPAcceptLoop) waits in poll, beside its wake-up
        // pipe, and an accept that finds nothing must get EAGAIN rather than block it there.
        let fd = socket(
            family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .listenFailed(errno: errno) }
        var yes: Int32 = 1
        // A restarted gateway must rebind while old connections sit in TIME_WAIT.
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        if address.isIPv6 {
            // "::" means IPv6 only; dual-stack listening is configured explicitly, not by accident.
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &yes, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = address.withSocketAddress { bind(fd, $0, $1) }
        guard bound == 0 else {
            let error = errno
            close(fd)
            throw .bindFailed(address: address.description, errno: error)
        }
        guard listen(fd, Int32(clamping: backlog)) == 0 else {
            let error = errno
            close(fd)
            throw .listenFailed(errno: error)
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            let error = errno
            close(fd)
            throw .listenFailed(errno: error)
        }
        let port = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { HTTPServerSocketAddress($0)?.port }
        }
        return (fd, address.with(port: port ?? address.port))
    }
}
