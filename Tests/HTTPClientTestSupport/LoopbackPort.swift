// SPDX-License-Identifier: Apache-2.0
import Glibc

/// A 127.0.0.1 port with nothing listening on it: bound to port 0 to get a free port, then closed.
/// Connecting to it is refused at once. (Another process could bind it in between; on a test
/// machine that is rare enough, and would fail the test loudly rather than pass it wrongly.)
public func closedLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    precondition(fd >= 0, "socket() failed")
    defer { close(fd) }
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
    return Int(UInt16(bigEndian: address.sin_port))
}
