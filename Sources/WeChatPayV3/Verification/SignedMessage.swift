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
    ///   WECHATPAY2-SHA256-RSA2048 (an absent one is taken as that, as WeChat's own SDKs do).
    public init(headers: [String: String], body: [UInt8]) throws(WeChatPayV3Error) {
        var lowered: [String: String] = [:]
        for (name, value) in headers { lowered[name.lowercased()] = value }
        func header(_ name: String) throws(WeChatPayV3Error) -> String {
            guard let value = lowered[name.lowercased()], !value.isEmpty else { throw WeChatPayV3Error(.missingHeader, name) }
            return value
        }
        timestamp = try header("Wechatpay-Timestamp")
        nonce = try header("Wechatpay-Nonce")
        signature = try header("Wechatpay-Signature")
        serial = try header("Wechatpay-Serial")
        if let type = lowered["wechatpay-signature-type"], type != Self.signatureType {
            throw WeChatPayV3Error(.malformedHeader, "Wechatpay-Signature-Type")
        }
        self.body = body
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
