// SPDX-License-Identifier: Apache-2.0
internal import CCrypto
internal import COpenSSL

/// The curves the gateway's keys live on.
public enum ECCurve: Sendable, Hashable {
    /// P-256 (prime256v1): ES256, App Store keys and leaves.
    case p256
    /// P-384 (secp384r1): Apple's root and intermediate CAs, and the simulator's.
    case p384

    var nid: Int32 {
        switch self {
        case .p256: NID_X9_62_prime256v1
        case .p384: NID_secp384r1
        }
    }

    init?(nid: Int32) {
        switch nid {
        case NID_X9_62_prime256v1: self = .p256
        case NID_secp384r1: self = .p384
        default: return nil
        }
    }
}

/// What kind of key OpenSSL holds.
public enum KeyAlgorithm: Sendable, Hashable {
    case rsa(bits: Int)
    /// An EC key; nil for a curve other than P-256 and P-384.
    case ec(ECCurve?)
    case other

    init(_ key: OpaquePointer) {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA: self = .rsa(bits: Int(EVP_PKEY_get_bits(key)))
        case EVP_PKEY_EC: self = .ec(ECCurve(nid: wxpay_pkey_ec_curve(key)))
        default: self = .other
        }
    }
}

/// A private key (RSA or EC) as OpenSSL holds it: loaded from PEM or generated, then only read.
///
/// Typed views say what a key is for: ``RSAPrivateKey`` (SHA256withRSA) and ``ES256PrivateKey``.
public final class PrivateKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is never mutated after init; OpenSSL 3 signs with a shared key from any thread.
    let pointer: OpaquePointer

    /// Loads PKCS#8 (`BEGIN PRIVATE KEY`, or `BEGIN ENCRYPTED PRIVATE KEY` with `password`), PKCS#1
    /// (`BEGIN RSA PRIVATE KEY`) or SEC1 (`BEGIN EC PRIVATE KEY`) PEM.
    /// - Throws: ``CryptoError/notAPrivateKey`` (never quoting the text).
    public init(pem: String, password: String? = nil) throws(CryptoError) {
        var pem = pem
        let parsed: OpaquePointer? = pem.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { text in
                guard let base = text.baseAddress else { return nil }
                if let password { return password.withCString { wxpay_pkey_private_from_pem(base, text.count, $0) } }
                return wxpay_pkey_private_from_pem(base, text.count, nil)
            }
        }
        guard let parsed else { throw .notAPrivateKey }
        pointer = parsed
    }

    /// Takes ownership of a key OpenSSL made.
    init(owning pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit { EVP_PKEY_free(pointer) }

    /// A new random EC key (simulators and tests).
    public static func generateEC(_ curve: ECCurve) -> PrivateKey {
        guard let key = wxpay_ec_generate(curve.nid) else { preconditionFailure("EC key generation failed") }
        return PrivateKey(owning: key)
    }

    /// A new random RSA key with public exponent 65537 (simulators and tests).
    public static func generateRSA(bits: Int = 2048) -> PrivateKey {
        guard let key = wxpay_rsa_generate(UInt32(bits)) else { preconditionFailure("RSA key generation failed") }
        return PrivateKey(owning: key)
    }

    public var algorithm: KeyAlgorithm { KeyAlgorithm(pointer) }

    /// The key as PKCS#8 PEM (`BEGIN PRIVATE KEY`, unencrypted).
    public var pkcs8PEM: String { PEMText.take { wxpay_pkey_to_pem(pointer, 1, &$0) } }

    /// The public half as SubjectPublicKeyInfo PEM (`BEGIN PUBLIC KEY`).
    public var publicKeyPEM: String { PEMText.take { wxpay_pkey_to_pem(pointer, 0, &$0) } }

    /// The public half.
    public var publicKey: PublicKey {
        guard let key = try? PublicKey(pem: publicKeyPEM) else { preconditionFailure("a private key without a public half") }
        return key
    }

    /// A signature of `message` with `digest`: PKCS#1 v1.5 for RSA, a DER ECDSA-Sig-Value for EC.
    /// ECDSA draws a fresh random nonce each time (OpenSSL 3.0 has no RFC 6979).
    public func signature(for message: some Sequence<UInt8>, digest: DigestAlgorithm = .sha256) -> [UInt8] {
        let bytes = Array(message)
        let capacity = Int(EVP_PKEY_get_size(pointer))
        var signature = [UInt8](repeating: 0, count: max(capacity, 1))
        let length = bytes.withUnsafeBytes { input in
            signature.withUnsafeMutableBufferPointer { out in
                // A zero-length message still needs an address.
                wxpay_pkey_sign(pointer, digest.evp, input.baseAddress ?? UnsafeRawPointer(out.baseAddress!), input.count,
                                out.baseAddress!, out.count)
            }
        }
        guard length > 0 else { preconditionFailure("signing failed inside OpenSSL") }
        return Array(signature.prefix(Int(length)))
    }
}

/// A public key (RSA or EC) as OpenSSL holds it.
public final class PublicKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is never mutated after init; EVP_DigestVerify on a shared key is thread-safe.
    let pointer: OpaquePointer

    /// Loads SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`) or PKCS#1 (`BEGIN RSA PUBLIC KEY`) PEM.
    /// - Throws: ``CryptoError/notAPublicKey``.
    public init(pem: String) throws(CryptoError) {
        var pem = pem
        let parsed: OpaquePointer? = pem.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { text in
                text.baseAddress.flatMap { wxpay_pkey_public_from_pem($0, text.count) }
            }
        }
        guard let parsed else { throw .notAPublicKey }
        pointer = parsed
    }

    init(owning pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit { EVP_PKEY_free(pointer) }

    public var algorithm: KeyAlgorithm { KeyAlgorithm(pointer) }

    /// SubjectPublicKeyInfo PEM (`BEGIN PUBLIC KEY`).
    public var pem: String { PEMText.take { wxpay_pkey_to_pem(pointer, 0, &$0) } }

    /// Whether `signature` signs `message` with `digest` under this key: PKCS#1 v1.5 for RSA, DER
    /// ECDSA for EC. Any malformed signature is simply invalid.
    public func isValidSignature(_ signature: some Sequence<UInt8>, for message: some Sequence<UInt8>,
                                 digest: DigestAlgorithm = .sha256) -> Bool {
        let signature = Array(signature), message = Array(message)
        guard !signature.isEmpty else { return false }
        return signature.withUnsafeBufferPointer { sig in
            message.withUnsafeBytes { input in
                wxpay_pkey_verify(pointer, digest.evp, input.baseAddress ?? UnsafeRawPointer(sig.baseAddress!), input.count,
                                  sig.baseAddress!, sig.count) == 1
            }
        }
    }

    /// Whether `privateKey` is this key's private half.
    public func matches(_ privateKey: PrivateKey) -> Bool {
        defer { ERR_clear_error() }
        return EVP_PKEY_eq(pointer, privateKey.pointer) == 1
    }
}

/// PEM text OpenSSL wrote into a buffer of its own.
enum PEMText {
    static func take(_ write: (inout UnsafeMutablePointer<CChar>?) -> Int32) -> String {
        var buffer: UnsafeMutablePointer<CChar>?
        let length = write(&buffer)
        defer { wxpay_openssl_free(buffer) }
        guard length > 0, let buffer else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: buffer, count: Int(length)), as: UTF8.self)
    }
}
