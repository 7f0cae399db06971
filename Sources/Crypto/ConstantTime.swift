// SPDX-License-Identifier: Apache-2.0
internal import COpenSSL

/// The one comparison of secrets: MACs, signatures, bearer and CSRF tokens, password hashes.
///
/// Equal lengths are compared in time that depends only on the length (OpenSSL's
/// `CRYPTO_memcmp`); lengths themselves are not secret (a MAC's is fixed, a token's is public).
public enum ConstantTime {
    public static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard let x = a.baseAddress, let y = b.baseAddress, a.count > 0 else { return true }
        return CRYPTO_memcmp(x, y, a.count) == 0
    }

    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in equal(x, y) } }
    }

    /// Two strings' UTF-8, compared as bytes.
    public static func equal(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { x in b.withUTF8 { y in equal(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y)) } }
    }
}
