// SPDX-License-Identifier: Apache-2.0
import COpenSSL
import Foundation

/// The `Gateway-Signature` header on every fulfilment webhook:
/// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
///
/// Signing and verification are pure (time and secret are arguments), the comparison runs in
/// constant time, verification accepts several secrets (key rotation) and several `v1` values, and
/// a timestamp outside the tolerance is refused so a captured delivery cannot be replayed later.
///
/// ```swift
/// try WebhookSignature.verify(header: request.headers["Gateway-Signature"], payload: request.body,
///                             secrets: [secret], now: Date())
/// ```
public enum WebhookSignature {
    /// The header's name.
    public static let headerName = "Gateway-Signature"
    /// How far a timestamp may be from `now` by default (5 minutes).
    public static let defaultTolerance: TimeInterval = 300

    /// The header value for `payload` signed at `timestamp`.
    public static func header(payload: [UInt8], secret: String, timestamp: Int) -> String {
        "t=\(timestamp),v1=\(signature(payload: payload, secret: secret, timestamp: timestamp))"
    }

    /// The lowercase hex HMAC-SHA256 of `"<timestamp>.<payload>"` keyed by `secret`.
    public static func signature(payload: [UInt8], secret: String, timestamp: Int) -> String {
        hex(mac(payload: payload, secret: secret, timestamp: timestamp))
    }

    /// Checks `header` against `payload`: some `v1` must be the MAC under one of `secrets`, and `t`
    /// within `tolerance` seconds of `now`.
    /// - Throws: `WebhookSignatureError` (malformed header, stale timestamp, no matching signature).
    public static func verify(header: String?, payload: [UInt8], secrets: [String], now: Date,
                              tolerance: TimeInterval = defaultTolerance) throws(WebhookSignatureError) {
        guard let header, header.utf8.count <= 4096 else { throw .malformedHeader }
        var timestamp: Int?
        var candidates: [[UInt8]] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { throw .malformedHeader }
            let key = pair[0].trimmingCharacters(in: .whitespaces)
            let value = pair[1].trimmingCharacters(in: .whitespaces)
            switch key {
            case "t":
                guard timestamp == nil, let seconds = Int(value) else { throw .malformedHeader }
                timestamp = seconds
            case "v1":
                guard let bytes = unhex(value), bytes.count == 32 else { throw .malformedHeader }
                candidates.append(bytes)
            default:
                continue  // Other schemes are for other verifiers.
            }
        }
        guard let timestamp, !candidates.isEmpty else { throw .malformedHeader }
        guard abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { throw .timestampOutsideTolerance }
        var matched = false
        for secret in secrets {
            let expected = mac(payload: payload, secret: secret, timestamp: timestamp)
            // Every candidate is compared in full, so timing does not reveal which one matched.
            for candidate in candidates where constantTimeEqual(expected, candidate) { matched = true }
        }
        guard matched else { throw .noMatchingSignature }
    }

    /// Compares two byte strings in time independent of their contents (OpenSSL's CRYPTO_memcmp).
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 } }
    }

    private static func mac(payload: [UInt8], secret: String, timestamp: Int) -> [UInt8] {
        var message = Array("\(timestamp).".utf8)
        message.append(contentsOf: payload)
        let key = Array(secret.utf8)
        var out = [UInt8](repeating: 0, count: 32)
        let ok = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { data in
                out.withUnsafeMutableBufferPointer { output in
                    // HMAC wants a non-null key pointer even for an empty key.
                    let keyPointer = keyBytes.baseAddress ?? UnsafeRawPointer(output.baseAddress!)
                    return wxpay_hmac_sha256(keyPointer, Int32(key.count), data.baseAddress!, message.count,
                                             output.baseAddress!)
                }
            }
        }
        // HMAC only fails on allocation failure inside OpenSSL, which we cannot recover from.
        precondition(ok == 1, "HMAC-SHA256 failed inside OpenSSL")
        return out
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func unhex(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
