// SPDX-License-Identifier: Apache-2.0
import COpenSSL

/// An HMAC-SHA256 key with its inner and outer SHA-256 states computed once, so each MAC costs
/// only the hashing of its message (OpenSSL's one-shot `HMAC()` re-derives both pads and
/// allocates a context every call). The states are as secret as the key: nothing prints them.
struct HMACSHA256Key: Sendable, CustomStringConvertible {
    private let inner: SHA256_CTX
    private let outer: SHA256_CTX

    init(_ secret: [UInt8]) {
        var inner = SHA256_CTX()
        var outer = SHA256_CTX()
        secret.withUnsafeBytes { bytes in
            withUnsafeBytes(of: 0) { zero in
                wxpay_hmac_sha256_key(bytes.count > 0 ? bytes.baseAddress! : zero.baseAddress!, bytes.count, &inner, &outer)
            }
        }
        self.inner = inner
        self.outer = outer
    }

    /// The 32-byte MAC of `message`.
    func mac(_ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        withUnsafePointer(to: inner) { inner in
            withUnsafePointer(to: outer) { outer in
                message.withUnsafeBytes { data in
                    withUnsafeBytes(of: 0) { zero in
                        out.withUnsafeMutableBufferPointer { output in
                            wxpay_hmac_sha256_keyed(inner, outer, data.count > 0 ? data.baseAddress! : zero.baseAddress!,
                                                    data.count, output.baseAddress!)
                        }
                    }
                }
            }
        }
        return out
    }

    var description: String { "HMACSHA256Key(…)" }
}

/// Compares two byte strings in time that depends only on their lengths (OpenSSL's CRYPTO_memcmp).
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    if a.isEmpty { return true }
    return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 } }
}
