// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP listener on 127.0.0.1 (port 0) that never accepts during the test: the hostile cases point
/// their external DTDs and entities at it, and afterwards it tells whether anyone connected.
/// The kernel completes a TCP handshake into the backlog without `accept`, so a parser that
/// fetched anything leaves a pending connection behind.
final class HostileListener: Sendable {
    let port: UInt16
    private let fd: Int32

    init() throws(ListenerError) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ListenerError() }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound, fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0 else {
            close(fd)
            throw ListenerError()
        }
        self.fd = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(fd) }

    var url: String { "http://127.0.0.1:\(port)/x.dtd" }

    /// Whether a connection is waiting to be accepted (accepting and closing it, so each check
    /// reports only what happened since the last one).
    func sawConnection() -> Bool {
        let client = accept(fd, nil, nil)
        guard client >= 0 else { return false }
        close(client)
        return true
    }

    struct ListenerError: Error, Sendable {}
}
