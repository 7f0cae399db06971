// SPDX-License-Identifier: Apache-2.0
import Crypto
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
        Hex.encode(mac(payload: payload, secret: secret, timestamp: timestamp))
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
                guard let bytes = Hex.decode(value), bytes.count == 32 else { throw .malformedHeader }
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
            for candidate in candidates where ConstantTime.equal(expected, candidate) { matched = true }
        }
        guard matched else { throw .noMatchingSignature }
    }

    private static func mac(payload: [UInt8], secret: String, timestamp: Int) -> [UInt8] {
        var message = Array("\(timestamp).".utf8)
        message.append(contentsOf: payload)
        return HMAC.authenticationCode(.sha256, key: Array(secret.utf8), message: message)
    }
}
