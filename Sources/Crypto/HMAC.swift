// SPDX-License-Identifier: Apache-2.0
internal import CCrypto
internal import COpenSSL

/// An HMAC-SHA256 key with its inner and outer SHA-256 states computed once (the key schedule),
/// so each MAC costs only the hashing of its message: OpenSSL's one-shot `HMAC()` re-derives both
/// pads and, in OpenSSL 3, fetches the digest and allocates a context on every call, which costs
/// more than hashing a 450-byte signing string. The v2 signer and the app tokens keep one per key.
/// The two steps are CCrypto's (`hmac.c`).
///
/// The states are as secret as the key (they forge MACs without it): nothing prints them.
///
/// ```swift
/// let key = HMACSHA256Key(Array(secret.utf8))
/// let mac = key.authenticationCode(for: Array(message.utf8))
/// ```
public struct HMACSHA256Key: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let byteCount = 32

    /// The two states live in one buffer allocated with the key, so a MAC hands C their addresses
    /// rather than copying 224 bytes of struct through Swift per call; with the states inline the
    /// HMAC signature measured 11 % slower than before Crypto (wxpay-bench sign).
    private let schedule: Schedule

    public init(_ key: [UInt8]) {
        self = key.withUnsafeBytes { HMACSHA256Key($0) }
    }

    public init(_ key: UnsafeRawBufferPointer) {
        schedule = Schedule(key)
    }

    /// Writes the 32-byte MAC of `message` into `mac`, without allocating.
    public func authenticationCode(for message: UnsafeRawBufferPointer, into mac: UnsafeMutableRawPointer) {
        wxpay_hmac_sha256_keyed(schedule.states, schedule.states + 1, message.baseAddress, message.count,
                                mac.assumingMemoryBound(to: UInt8.self))
    }

    /// The 32-byte MAC of `message`.
    public func authenticationCode(for message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { message in
            [UInt8](unsafeUninitializedCapacity: Self.byteCount) { mac, count in
                authenticationCode(for: message, into: mac.baseAddress!)
                count = Self.byteCount
            }
        }
    }

    public var description: String { "HMACSHA256Key(…)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// The inner and outer SHA-256 states, written once by `wxpay_hmac_sha256_key`.
    private final class Schedule: @unchecked Sendable {
        // @unchecked: a C buffer written only in init; wxpay_hmac_sha256_keyed copies the states
        // and never writes them, so any number of threads may MAC with one key at once.
        let states: UnsafeMutablePointer<SHA256_CTX>

        init(_ key: UnsafeRawBufferPointer) {
            states = .allocate(capacity: 2)
            states.initialize(repeating: SHA256_CTX(), count: 2)
            wxpay_hmac_sha256_key(key.baseAddress, key.count, states, states + 1)
        }

        deinit {
            // As secret as the key: wiped before the memory goes back.
            OPENSSL_cleanse(states, 2 * MemoryLayout<SHA256_CTX>.stride)
            states.deallocate()
        }
    }
}

/// HMAC with a digest chosen at run time, in one shot (OpenSSL's `HMAC()`): for occasional MACs
/// and other algorithms. A key used for many messages belongs in an ``HMACSHA256Key``.
public enum HMAC {
    public static func authenticationCode(_ digest: DigestAlgorithm, key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: digest.byteCount)
        var length = UInt32(out.count)
        let ok = key.withUnsafeBytes { key in
            message.withUnsafeBytes { message in
                out.withUnsafeMutableBytes { mac in
                    // HMAC wants a non-null key pointer even for an empty key.
                    HMAC_(digest.evp, key.baseAddress ?? UnsafeRawPointer(mac.baseAddress!), Int32(key.count),
                          message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                          mac.baseAddress!.assumingMemoryBound(to: UInt8.self), &length) != nil
                }
            }
        }
        // HMAC only fails on allocation failure inside OpenSSL, which nothing can recover from.
        precondition(ok && Int(length) == digest.byteCount, "HMAC failed inside OpenSSL")
        return out
    }
}

/// OpenSSL's `HMAC()`, which the enum above shadows.
private func HMAC_(_ md: OpaquePointer, _ key: UnsafeRawPointer, _ keyLength: Int32, _ data: UnsafePointer<UInt8>?,
                   _ count: Int, _ out: UnsafeMutablePointer<UInt8>, _ length: inout UInt32) -> UnsafeMutablePointer<UInt8>? {
    COpenSSL.HMAC(md, key, keyLength, data, count, out, &length)
}
