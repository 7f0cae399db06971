// SPDX-License-Identifier: Apache-2.0
internal import CCrypto
internal import COpenSSL

/// A P-256 public key that checks ES256 signatures: raw r‖s (64 bytes, RFC 7518 §3.4) over the
/// SHA-256 of a message.
///
/// It holds an EC_KEY rather than an EVP_PKEY: `ECDSA_do_verify` skips the provider fetch and the
/// context allocation a one-shot EVP verify pays, a measurable part of one App Store verification.
public final class ES256PublicKey: @unchecked Sendable {
    // @unchecked: the EC_KEY holds only a public point after init; ECDSA_do_verify only reads it.
    private let key: OpaquePointer

    /// The leaf key of a certificate, or nil when it is not EC on P-256.
    public init?(certificate: Certificate) {
        guard let key = wxpay_x509_p256_key(certificate.x509) else { return nil }
        self.key = key
    }

    /// A key from PEM: a public key (`BEGIN PUBLIC KEY`) or a private one (its public half).
    public convenience init?(pem: String) {
        guard let ec = (try? PublicKey(pem: pem))?.p256Key() ?? (try? PrivateKey(pem: pem))?.p256Key() else { return nil }
        self.init(owning: ec)
    }

    fileprivate init(owning key: OpaquePointer) {
        self.key = key
    }

    deinit { EC_KEY_free(key) }

    /// Whether `signature` (raw r‖s) signs `message`. Any other length is simply invalid.
    public func isValidSignature(_ signature: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
        guard signature.count == 64 else { return false }
        return isValidSignature(Array(signature), digest: SHA256.hash(message))
    }

    /// Verification on a precomputed SHA-256 digest (32 bytes).
    public func isValidSignature(_ signature: [UInt8], digest: [UInt8]) -> Bool {
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
/// differ between calls.
public struct ES256PrivateKey: Sendable {
    public let key: PrivateKey

    /// Loads a PKCS#8 (`.p8`) or SEC1 PEM private key on P-256.
    /// - Throws: ``CryptoError`` when the text is not such a key (the message never contains the key).
    public init(pem: String) throws(CryptoError) {
        try self.init(try PrivateKey(pem: pem))
    }

    public init(_ key: PrivateKey) throws(CryptoError) {
        guard key.algorithm == .ec(.p256) else { throw .privateKeyNotP256 }
        self.key = key
    }

    /// A new random P-256 key (for simulators and tests).
    public static func generate() -> ES256PrivateKey {
        guard let key = try? ES256PrivateKey(PrivateKey.generateEC(.p256)) else { preconditionFailure("P-256 key generation failed") }
        return key
    }

    /// The key as PKCS#8 PEM (the `.p8` format).
    public var pkcs8PEM: String { key.pkcs8PEM }

    /// The public half as SubjectPublicKeyInfo PEM.
    public var publicKeyPEM: String { key.publicKeyPEM }

    /// The public half, for verification.
    public var publicKey: ES256PublicKey {
        guard let ec = key.p256Key() else { preconditionFailure("a P-256 key without a public half") }
        return ES256PublicKey(owning: ec)
    }

    /// An ES256 signature of `message`: OpenSSL's DER ECDSA-Sig-Value, converted to raw r‖s.
    public func signature(for message: some Collection<UInt8>) -> [UInt8] {
        guard let raw = ECDSASignature.raw(fromDER: key.signature(for: message, digest: .sha256)) else {
            preconditionFailure("ECDSA signing failed")
        }
        return raw
    }
}

extension PrivateKey {
    /// The key as an EC_KEY the caller owns, when it is EC on P-256.
    fileprivate func p256Key() -> OpaquePointer? { wxpay_pkey_p256_key(pointer) }
}

extension PublicKey {
    fileprivate func p256Key() -> OpaquePointer? { wxpay_pkey_p256_key(pointer) }
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
