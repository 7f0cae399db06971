// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address as 16 bytes (IPv4 as `::ffff:a.b.c.d`, so a dual-stack socket's mapped
/// peer and a plain IPv4 network compare alike).
struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    let bytes: [UInt8]

    init?(_ text: some StringProtocol) {
        let text = String(text)
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = Array(repeating: 0, count: 10) + [0xFF, 0xFF] + withUnsafeBytes(of: v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: v6) { Array($0) }
        } else {
            return nil
        }
    }

    var isIPv4: Bool { bytes.prefix(12) == Self.mappedPrefix[...] }
    private static let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]

    /// The numeric text form; a mapped IPv4 address as plain IPv4 (what WeChat expects).
    var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        if isIPv4 {
            var v4 = in_addr()
            withUnsafeMutableBytes(of: &v4) { $0.copyBytes(from: bytes[12...]) }
            inet_ntop(AF_INET, &v4, &buffer, socklen_t(buffer.count))
        } else {
            var v6 = in6_addr()
            withUnsafeMutableBytes(of: &v6) { $0.copyBytes(from: bytes) }
            inet_ntop(AF_INET6, &v6, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A CIDR block (`10.0.0.0/8`, `2001:db8::/32`, or one address).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    let base: IPAddress
    /// Prefix length over the 16-byte form.
    let prefixLength: Int
    public let description: String

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { return nil }
        let bits = address.isIPv4 ? 32 : 128
        var length = bits
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0...bits).contains(given), parts[1].allSatisfy(\.isNumber) else { return nil }
            length = given
        }
        base = address
        prefixLength = length + (address.isIPv4 ? 96 : 0)
        description = text
    }

    func contains(_ address: IPAddress) -> Bool {
        for bit in 0..<prefixLength {
            let mask = UInt8(0x80) >> UInt8(bit % 8)
            if address.bytes[bit / 8] & mask != base.bytes[bit / 8] & mask { return false }
        }
        return true
    }
}

/// Which address an app's request came from, for `spbill_create_ip`: the TCP peer, or — only
/// when the peer is a trusted proxy — the right-most `X-Forwarded-For` address that is not one
/// of the trusted proxies. Addresses to the left of that were written by the client itself and
/// prove nothing.
public struct ClientAddressResolver: Sendable {
    let trustedProxies: [IPNetwork]

    public init(trustedProxies: [IPNetwork]) {
        self.trustedProxies = trustedProxies
    }

    /// `peer`: the TCP peer's numeric host; `forwardedFor`: every X-Forwarded-For header, in order.
    public func clientIP(peer: String?, forwardedFor: [String]) -> String? {
        guard let peer, let peerAddress = IPAddress(peer) else { return nil }
        guard isTrusted(peerAddress) else { return peerAddress.description }
        var nearest = peerAddress
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { String($0).trimmingWhitespace() }
        for hop in hops.reversed() {
            // A hop a trusted proxy could not have written ends the walk at the last trusted one.
            guard let address = IPAddress(hop) else { break }
            if !isTrusted(address) { return address.description }
            nearest = address
        }
        return nearest.description
    }

    private func isTrusted(_ address: IPAddress) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }
}
