// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A signed answer or notify from WeChat Pay: the `Wechatpay-*` headers and the raw body. The
/// signed message is `timestamp\nnonce\nbody\n` over the body exactly as received (a body read,
/// re-encoded and written again no longer verifies: never verify anything else).
public struct V3SignedMessage: Sendable, Hashable {
    public static let signatureType = "WECHATPAY2-SHA256-RSA2048"
    /// What WeChat's signature probes start with: it sends them to check that a merchant verifies.
    public static let probePrefix = "WECHATPAY/SIGNTEST/"

    public var timestamp: String
    public var nonce: String
    public var signature: String
    public var serial: String
    public var body: [UInt8]

    public init(timestamp: String, nonce: String, signature: String, serial: String, body: [UInt8]) {
        self.timestamp = timestamp
        self.nonce = nonce
        self.signature = signature
        self.serial = serial
        self.body = body
    }

    /// Reads the headers (names in any case).
    /// - Throws: ``WeChatPayV3Error/Code/missingHeader`` naming the first missing one;
    ///   ``WeChatPayV3Error/Code/malformedHeader`` for a `Wechatpay-Signature-Type` other than
    ///   WECHATPAY2-SHA256-RSA2048 (an absent one is taken as that, as WeChat's own SDKs do), or
    ///   for one of these headers given twice in different cases.
    public init(headers: [String: String], body: [UInt8]) throws(WeChatPayV3Error) {
        // One pass, names compared without case and without a lowered copy of every header.
        var found: [String?] = [nil, nil, nil, nil, nil]
        for (name, value) in headers {
            guard name.utf8.count >= 15, name.utf8.count <= 24 else { continue }
            for (index, wanted) in Self.headerNames.enumerated() where Self.equalIgnoringASCIICase(name, wanted) {
                // The same header twice in different cases: which one a reader takes is not for us to guess.
                guard found[index] == nil else { throw WeChatPayV3Error(.malformedHeader, wanted) }
                found[index] = value
            }
        }
        func header(_ index: Int) throws(WeChatPayV3Error) -> String {
            guard let value = found[index], !value.isEmpty else { throw WeChatPayV3Error(.missingHeader, Self.headerNames[index]) }
            return value
        }
        timestamp = try header(0)
        nonce = try header(1)
        signature = try header(2)
        serial = try header(3)
        if let type = found[4], type != Self.signatureType {
            throw WeChatPayV3Error(.malformedHeader, "Wechatpay-Signature-Type")
        }
        self.body = body
    }

    /// The headers read, in the order a missing one is reported; the signature type last (optional).
    static let headerNames = ["Wechatpay-Timestamp", "Wechatpay-Nonce", "Wechatpay-Signature", "Wechatpay-Serial",
                              "Wechatpay-Signature-Type"]

    /// Whether `a` and `b` are the same ASCII name in any case. Over the contiguous UTF-8 of both
    /// (every native string) it is a plain byte loop: the generic `zip` of two `UTF8View`s it replaced
    /// was about 2 % of a whole notify's open in the profile.
    static func equalIgnoringASCIICase(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        if let same = a.utf8.withContiguousStorageIfAvailable({ x in
            b.utf8.withContiguousStorageIfAvailable { y in equalIgnoringASCIICase(x, y) }
        }), let same { return same }
        return zip(a.utf8, b.utf8).allSatisfy { x, y in sameIgnoringASCIICase(x, y) }
    }

    private static func equalIgnoringASCIICase(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for index in 0..<a.count where !sameIgnoringASCIICase(a[index], b[index]) { return false }
        return true
    }

    /// Two bytes equal, or the same ASCII letter in two cases (only letters: `@` is not `` ` ``).
    @inline(__always)
    private static func sameIgnoringASCIICase(_ x: UInt8, _ y: UInt8) -> Bool {
        x == y || (x | 0x20 == y | 0x20 && (0x61...0x7A).contains(x | 0x20))
    }

    /// The headers WeChat sends with this message.
    public var headers: [String: String] {
        ["Wechatpay-Timestamp": timestamp, "Wechatpay-Nonce": nonce, "Wechatpay-Signature": signature,
         "Wechatpay-Serial": serial, "Wechatpay-Signature-Type": Self.signatureType]
    }

    /// Whether this is one of WeChat's signature probes.
    public var isProbe: Bool { signature.hasPrefix(Self.probePrefix) }

    /// The bytes the signature covers.
    public static func message(timestamp: String, nonce: String, body: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(timestamp.utf8.count + nonce.utf8.count + body.count + 3)
        bytes.append(contentsOf: timestamp.utf8)
        bytes.append(0x0A)
        bytes.append(contentsOf: nonce.utf8)
        bytes.append(0x0A)
        bytes.append(contentsOf: body)
        bytes.append(0x0A)
        return bytes
    }

    public var signedBytes: [UInt8] { Self.message(timestamp: timestamp, nonce: nonce, body: body) }

    /// The timestamp as seconds: ASCII digits only, at most 12 of them.
    public var seconds: Int64? {
        guard (1...12).contains(timestamp.utf8.count), timestamp.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(timestamp)
    }
}
