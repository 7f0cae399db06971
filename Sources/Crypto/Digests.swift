// SPDX-License-Identifier: Apache-2.0
internal import COpenSSL

/// A hash function OpenSSL computes in one shot.
///
/// The one-shot low-level entry points (`MD5()`, `SHA1()`, `SHA256()`) run the digest directly;
/// the EVP path pays a provider fetch and a context allocation per call, which is most of the cost
/// of hashing a 400-byte signing string. OpenSSL 3 marks them deprecated (the COpenSSL shim
/// suppresses that); revisit if they are removed.
public protocol HashFunction {
    /// The digest's length in bytes.
    static var byteCount: Int { get }
    /// Hashes `bytes` into `digest`, which holds at least `byteCount` bytes.
    static func hash(_ bytes: UnsafeRawBufferPointer, into digest: UnsafeMutableRawPointer)
}

extension HashFunction {
    /// The digest of `bytes`.
    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        if let digest = bytes.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0)) }) { return digest }
        return Array(bytes).withUnsafeBytes { hash($0) }
    }

    /// The digest of a string's UTF-8.
    public static func hash(_ text: String) -> [UInt8] {
        var text = text
        return text.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
    }

    public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: byteCount) { digest, count in
            hash(bytes, into: digest.baseAddress!)
            count = byteCount
        }
    }
}

public enum MD5: HashFunction {
    public static let byteCount = 16

    public static func hash(_ bytes: UnsafeRawBufferPointer, into digest: UnsafeMutableRawPointer) {
        COpenSSL.MD5(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count,
                     digest.assumingMemoryBound(to: UInt8.self))
    }
}

/// SHA-1: for interoperability only (nothing here signs with it).
public enum SHA1: HashFunction {
    public static let byteCount = 20

    public static func hash(_ bytes: UnsafeRawBufferPointer, into digest: UnsafeMutableRawPointer) {
        COpenSSL.SHA1(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count,
                      digest.assumingMemoryBound(to: UInt8.self))
    }
}

public enum SHA256: HashFunction {
    public static let byteCount = 32

    public static func hash(_ bytes: UnsafeRawBufferPointer, into digest: UnsafeMutableRawPointer) {
        COpenSSL.SHA256(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count,
                        digest.assumingMemoryBound(to: UInt8.self))
    }

    /// SHA-256 over input that arrives in pieces; a value (copying it forks the computation).
    ///
    /// ```swift
    /// var hasher = SHA256.Hasher()
    /// hasher.update(header)
    /// hasher.update(body)
    /// let digest = hasher.finalize()
    /// ```
    public struct Hasher: Sendable {
        var context: SHA256_CTX

        public init() {
            context = SHA256_CTX()
            SHA256_Init(&context)
        }

        public mutating func update(_ bytes: UnsafeRawBufferPointer) {
            SHA256_Update(&context, bytes.baseAddress, bytes.count)
        }

        public mutating func update(_ bytes: some Sequence<UInt8>) {
            if bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) == nil {
                Array(bytes).withUnsafeBytes { update($0) }
            }
        }

        /// Writes the digest (32 bytes) into `digest`; the hasher is used up.
        public consuming func finalize(into digest: UnsafeMutableRawPointer) {
            SHA256_Final(digest.assumingMemoryBound(to: UInt8.self), &context)
            OPENSSL_cleanse(&context, MemoryLayout<SHA256_CTX>.size)
        }

        public consuming func finalize() -> [UInt8] {
            [UInt8](unsafeUninitializedCapacity: SHA256.byteCount) { digest, count in
                finalize(into: digest.baseAddress!)
                count = SHA256.byteCount
            }
        }
    }
}

/// A digest named where one is chosen at run time: HMAC and signatures.
public enum DigestAlgorithm: Sendable, Hashable {
    case sha256, sha384, sha512

    public var byteCount: Int {
        switch self {
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }

    var evp: OpaquePointer {
        switch self {
        case .sha256: EVP_sha256()
        case .sha384: EVP_sha384()
        case .sha512: EVP_sha512()
        }
    }
}
