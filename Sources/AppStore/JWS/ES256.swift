// SPDX-License-Identifier: Apache-2.0
import COpenSSL

/// A P-256 public key that checks ES256 signatures: raw r‖s (64 bytes, RFC 7518 §3.4) over the
/// SHA-256 of a message.
public final class ES256PublicKey: @unchecked Sendable {
    // @unchecked: the EC_KEY holds only a public point after creation; ECDSA_do_verify reads it.
    private let key: OpaquePointer

    /// The leaf key of a certificate, or nil when it is not EC on P-256.
    public init?(certificate: Certificate) {
        guard let key = wxpay_x509_p256_key(certificate.x509) else { return nil }
        self.key = key
    }

    /// A key from PEM: a public key (`BEGIN PUBLIC KEY`) or a private one (its public half).
    public init?(pem: String) {
        var pem = pem
        let parsed: OpaquePointer? = pem.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { text in
                wxpay_pkey_public_from_pem(text.baseAddress!, text.count)
                    ?? wxpay_pkey_private_from_pem(text.baseAddress!, text.count)
            }
        }
        guard let pkey = parsed else { return nil }
        defer { EVP_PKEY_free(pkey) }
        guard let key = wxpay_pkey_p256_key(pkey) else { return nil }
        self.key = key
    }

    deinit { EC_KEY_free(key) }

    /// Whether `signature` (raw r‖s) signs `message`. Any other length is simply invalid.
    public func isValidSignature(_ signature: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
        guard signature.count == 64 else { return false }
        let digest = SHA256Digest(Array(message)).bytes
        return isValidSignature(Array(signature), digest: digest)
    }

    /// Verification on a precomputed SHA-256 digest (32 bytes).
    func isValidSignature(_ signature: [UInt8], digest: [UInt8]) -> Bool {
        guard signature.count == 64, digest.count == 32 else { return false }
        return signature.withUnsafeBufferPointer { sig in
            digest.withUnsafeBufferPointer { wxpay_p256_verify_raw(key, $0.baseAddress!, sig.baseAddress!) == 1 }
        }
    }
}

/// A P-256 private key that makes ES256 signatures, e.g. the In-App Purchase key (`.p8`) App Store
/// Connect hands out for the Server API.
///
/// OpenSSL signs with a fresh random nonce each time (OpenSSL 3.0 has no RFC 6979), so signatures
/// differ between calls; that is the only randomness in this module.
public final class ES256PrivateKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is never mutated after loading; EVP_DigestSign on a shared key is
    // thread-safe in OpenSSL 3.
    let pkey: OpaquePointer

    /// Loads a PKCS#8 (`.p8`) or SEC1 PEM private key on P-256.
    /// - Throws: ``AppStoreConfigurationError`` when the text is not such a key (the message
    ///   never contains the key).
    public init(pem: String) throws(AppStoreConfigurationError) {
        var pem = pem
        let parsed: OpaquePointer? = pem.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { wxpay_pkey_private_from_pem($0.baseAddress!, $0.count) }
        }
        guard let pkey = parsed else { throw AppStoreConfigurationError("not a PEM private key") }
        guard let ec = wxpay_pkey_p256_key(pkey) else {
            EVP_PKEY_free(pkey)
            throw AppStoreConfigurationError("the private key is not an EC key on P-256")
        }
        EC_KEY_free(ec)
        self.pkey = pkey
    }

    /// Takes ownership of a key made by OpenSSL (the simulator generates its own).
    init(owning pkey: OpaquePointer) { self.pkey = pkey }

    /// A new random P-256 key (for simulators and tests).
    public static func generate() -> ES256PrivateKey {
        guard let pkey = wxpay_ec_generate(NID_X9_62_prime256v1) else { preconditionFailure("EC key generation failed") }
        return ES256PrivateKey(owning: pkey)
    }

    deinit { EVP_PKEY_free(pkey) }

    /// The key as PKCS#8 PEM (the `.p8` format).
    public var pkcs8PEM: String { Self.pem(pkey, privatePart: true) }

    /// The public half as SubjectPublicKeyInfo PEM.
    public var publicKeyPEM: String { Self.pem(pkey, privatePart: false) }

    /// The public half, for verification.
    public var publicKey: ES256PublicKey {
        guard let key = ES256PublicKey(pem: publicKeyPEM) else { preconditionFailure("a P-256 key without a public half") }
        return key
    }

    /// An ES256 signature of `message`: OpenSSL's DER ECDSA-Sig-Value, converted to raw r‖s.
    public func signature(for message: some Collection<UInt8>) -> [UInt8] {
        let bytes = Array(message)
        var der = [UInt8](repeating: 0, count: 80)
        let length = bytes.withUnsafeBufferPointer { input in
            wxpay_pkey_sign_sha256(pkey, input.baseAddress ?? UnsafePointer(bitPattern: 1)!, input.count, &der, der.count)
        }
        guard length > 0, let raw = ECDSASignature.raw(fromDER: der.prefix(Int(length))) else {
            preconditionFailure("ECDSA signing failed")
        }
        return raw
    }

    private static func pem(_ pkey: OpaquePointer, privatePart: Bool) -> String {
        var buffer: UnsafeMutablePointer<CChar>?
        let length = wxpay_pkey_to_pem(pkey, privatePart ? 1 : 0, &buffer)
        defer { wxpay_openssl_free(buffer) }
        guard length > 0, let buffer else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: buffer, count: Int(length)), as: UTF8.self)
    }
}

/// Conversions between the two encodings of an ECDSA signature: DER (what OpenSSL and X.509
/// use) and raw r‖s (what JWS uses). Confusing them is a classic JWT bug, in both directions.
public enum ECDSASignature {
    /// Raw r‖s (each `coordinateSize` bytes) from DER, or nil for malformed DER.
    public static func raw(fromDER der: some Collection<UInt8>, coordinateSize: Int = 32) -> [UInt8]? {
        let bytes = Array(der)
        guard !bytes.isEmpty else { return nil }
        var raw = [UInt8](repeating: 0, count: 2 * coordinateSize)
        let ok = bytes.withUnsafeBufferPointer { wxpay_ecdsa_der_to_raw($0.baseAddress!, $0.count, &raw, Int32(coordinateSize)) }
        return ok == 1 ? raw : nil
    }

    /// DER from raw r‖s.
    public static func der(fromRaw raw: some Collection<UInt8>) -> [UInt8]? {
        let bytes = Array(raw)
        guard !bytes.isEmpty, bytes.count % 2 == 0 else { return nil }
        var der = [UInt8](repeating: 0, count: bytes.count + 16)
        let length = bytes.withUnsafeBufferPointer { wxpay_ecdsa_raw_to_der($0.baseAddress!, Int32(bytes.count / 2), &der) }
        return length > 0 ? Array(der.prefix(Int(length))) : nil
    }
}
