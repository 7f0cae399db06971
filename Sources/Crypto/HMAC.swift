// SPDX-License-Identifier: Apache-2.0
internal import COpenSSL

/// An HMAC-SHA256 key with its inner and outer SHA-256 states computed once (the key schedule),
/// so each MAC costs only the hashing of its message: OpenSSL's one-shot `HMAC()` re-derives both
/// pads and, in OpenSSL 3, fetches the digest and allocates a context on every call, which costs
/// more than hashing a 450-byte signing string. The v2 signer and the app tokens keep one per key.
///
/// The states are as secret as the key (they forge MACs without it): nothing prints them.
///
/// ```swift
/// let key = HMACSHA256Key(Array(secret.utf8))
/// let mac = key.authenticationCode(for: Array(message.utf8))
/// ```
public struct HMACSHA256Key: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let byteCount = 32
    private static let blockSize = 64

    private let inner: SHA256_CTX
    private let outer: SHA256_CTX

    public init(_ key: [UInt8]) {
        self = key.withUnsafeBytes { HMACSHA256Key($0) }
    }

    public init(_ key: UnsafeRawBufferPointer) {
        // RFC 2104: a key longer than the block is hashed first; a shorter one is zero-padded
        // (an empty key is still a key: the all-zero block).
        var block = [UInt8](repeating: 0, count: Self.blockSize)
        var pad = [UInt8](repeating: 0, count: Self.blockSize)
        var inner = SHA256_CTX()
        var outer = SHA256_CTX()
        block.withUnsafeMutableBytes { block in
            pad.withUnsafeMutableBytes { pad in
                if key.count > Self.blockSize {
                    SHA256.hash(key, into: block.baseAddress!)
                } else if let base = key.baseAddress, key.count > 0 {
                    block.baseAddress!.copyMemory(from: base, byteCount: key.count)
                }
                for index in 0..<Self.blockSize { pad[index] = block[index] ^ 0x36 }
                SHA256_Init(&inner)
                SHA256_Update(&inner, pad.baseAddress, Self.blockSize)
                for index in 0..<Self.blockSize { pad[index] = block[index] ^ 0x5C }
                SHA256_Init(&outer)
                SHA256_Update(&outer, pad.baseAddress, Self.blockSize)
                OPENSSL_cleanse(block.baseAddress, Self.blockSize)
                OPENSSL_cleanse(pad.baseAddress, Self.blockSize)
            }
        }
        self.inner = inner
        self.outer = outer
    }

    /// Writes the 32-byte MAC of `message` into `mac`, without allocating.
    public func authenticationCode(for message: UnsafeRawBufferPointer, into mac: UnsafeMutableRawPointer) {
        var context = inner
        withUnsafeTemporaryAllocation(byteCount: Self.byteCount, alignment: 8) { digest in
            let digest = digest.baseAddress!.assumingMemoryBound(to: UInt8.self)
            SHA256_Update(&context, message.baseAddress, message.count)
            SHA256_Final(digest, &context)
            context = outer
            SHA256_Update(&context, digest, Self.byteCount)
            SHA256_Final(mac.assumingMemoryBound(to: UInt8.self), &context)
            OPENSSL_cleanse(digest, Self.byteCount)
        }
        OPENSSL_cleanse(&context, MemoryLayout<SHA256_CTX>.size)
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
