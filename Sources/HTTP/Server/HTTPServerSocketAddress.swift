// SPDX-License-Identifier: Apache-2.0
import Glibc

/// A numeric IPv4 or IPv6 address and a port: where the server listens, or where a request came from.
///
/// Construction copies the address bytes only; the text form is made when `host` or `description`
/// is read, so recording every request's peer costs nothing until someone logs it.
public struct HTTPServerSocketAddress: Sendable, Hashable, CustomStringConvertible {
    private enum Address: Sendable, Hashable {
        /// Network byte order, as in `in_addr.s_addr`.
        case v4(UInt32)
        /// The 16 address bytes, network order, as two words.
        case v6(UInt64, UInt64)
    }

    private let address: Address
    /// The port, host byte order.
    public let port: UInt16

    /// Parses a numeric host (`127.0.0.1`, `::1`, `0.0.0.0`, `::`; `localhost` means `127.0.0.1`).
    /// Names are not resolved: a listening address must not depend on DNS. Returns nil otherwise.
    public init?(host: String, port: UInt16) {
        let numeric = host == "localhost" ? "127.0.0.1" : host
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, numeric, &v4) == 1 {
            address = .v4(v4.s_addr)
        } else if inet_pton(AF_INET6, numeric, &v6) == 1 {
            address = withUnsafeBytes(of: v6) { raw in
                .v6(
                    raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                    raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
        } else {
            return nil
        }
        self.port = port
    }

    /// Copies an IPv4 or IPv6 socket address; nil for any other family.
    init?(_ socketAddress: UnsafePointer<sockaddr>) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            let v4 = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in.self)
            address = .v4(v4.sin_addr.s_addr)
            port = UInt16(bigEndian: v4.sin_port)
        case AF_INET6:
            let v6 = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in6.self)
            address = withUnsafeBytes(of: v6.sin6_addr) { raw in
                .v6(
                    raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                    raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
            port = UInt16(bigEndian: v6.sin6_port)
        default:
            return nil
        }
    }

    /// The same address with another port (the bound port after listening on port 0).
    func with(port: UInt16) -> HTTPServerSocketAddress {
        HTTPServerSocketAddress(address: address, port: port)
    }

    private init(address: Address, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// Whether this is an IPv6 address.
    public var isIPv6: Bool {
        if case .v6 = address { return true }
        return false
    }

    /// Whether the address is on the loopback interface only: 127.0.0.0/8 or ::1.
    public var isLoopback: Bool {
        withSocketAddress { socketAddress, _ in
            switch Int32(socketAddress.pointee.sa_family) {
            case AF_INET:
                let v4 = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in.self)
                return withUnsafeBytes(of: v4.sin_addr) { $0[0] == 127 }
            default:
                let v6 = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in6.self)
                return withUnsafeBytes(of: v6.sin6_addr) { bytes in bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1 }
            }
        }
    }

    /// The numeric host, e.g. `127.0.0.1` or `::1`.
    public var host: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch address {
        case .v4(let raw):
            var v4 = in_addr(s_addr: raw)
            inet_ntop(AF_INET, &v4, &buffer, socklen_t(buffer.count))
        case .v6(let high, let low):
            var v6 = in6_addr()
            withUnsafeMutableBytes(of: &v6) { raw in
                raw.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
                raw.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
            }
            inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `host:port`, with IPv6 hosts in brackets (`[::1]:8080`), as URLs write them.
    public var description: String {
        isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Calls `body` with this address as a `sockaddr` (for `bind`).
    func withSocketAddress<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        switch address {
        case .v4(let raw):
            var v4 = sockaddr_in()
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            v4.sin_addr = in_addr(s_addr: raw)
            return withUnsafePointer(to: &v4) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .v6(let high, let low):
            var v6 = sockaddr_in6()
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &v6.sin6_addr) { raw in
                raw.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
                raw.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
            }
            return withUnsafePointer(to: &v6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
    }
}
