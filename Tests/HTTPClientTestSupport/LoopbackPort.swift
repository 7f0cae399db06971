// SPDX-License-Identifier: Apache-2.0
import Glibc

/// A free 127.0.0.1 port, for a server the test starts on it: bound to port 0 to get one, then
/// closed. (Another process could bind it in between: for a port that must stay refused, hold a
/// `RefusedLoopbackPort` instead.)
public func closedLoopbackPort() -> Int {
    RefusedLoopbackPort().port  // released as soon as it is read
}

/// A 127.0.0.1 port on which every connection is refused for as long as this is held: a socket
/// bound to it but never listening (Linux answers a SYN to it with a reset), so no other server of
/// a concurrent test can take the port meanwhile, as one did between a bind and a close.
public final class RefusedLoopbackPort: Sendable {
    public let port: Int
    private let fd: Int32

    public init() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0, "socket() failed")
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
            }
        }
        precondition(bound, "bind() on 127.0.0.1 failed")
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    deinit { close(fd) }
}
