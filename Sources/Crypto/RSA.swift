// SPDX-License-Identifier: Apache-2.0
internal import CCrypto
internal import COpenSSL

/// An RSA private key of at least 2048 bits that signs with SHA256withRSA (RSASSA-PKCS1-v1_5 with
/// SHA-256), as WeChat Pay API v3 requires of a merchant's requests (`apiclient_key.pem`).
///
/// ```swift
/// let key = try RSAPrivateKey(pem: String(decoding: keyFile, as: UTF8.self))
/// let signature = Base64.encode(key.signature(for: Array(message.utf8)), .standardPadded)
/// ```
public struct RSAPrivateKey: Sendable {
    public let key: PrivateKey

    /// Loads PKCS#8 (`BEGIN PRIVATE KEY`) or PKCS#1 (`BEGIN RSA PRIVATE KEY`) PEM.
    /// - Throws: ``CryptoError`` when the text is not a private key, not RSA, or under 2048 bits.
    public init(pem: String, password: String? = nil) throws(CryptoError) {
        try self.init(try PrivateKey(pem: pem, password: password))
    }

    public init(_ key: PrivateKey) throws(CryptoError) {
        guard case .rsa(let bits) = key.algorithm else { throw .privateKeyNotRSA }
        guard bits >= 2048 else { throw .rsaKeyTooSmall }
        self.key = key
    }

    /// A new random 2048-bit key (simulators and tests).
    public static func generate(bits: Int = 2048) -> RSAPrivateKey {
        RSAPrivateKey(checked: PrivateKey.generateRSA(bits: bits))
    }

    private init(checked key: PrivateKey) {
        self.key = key
    }

    /// The SHA256withRSA signature of `message` (as long as the modulus: 256 bytes for 2048 bits),
    /// through the RSA fast path (every v3 request and app `sign` is signed here); byte for byte
    /// what `PrivateKey.signature(for:digest: .sha256)` makes, PKCS#1 v1.5 being deterministic.
    public func signature(for message: some Sequence<UInt8>) -> [UInt8] {
        let bytes = Array(message)
        let capacity = Int(EVP_PKEY_get_size(key.pointer))
        let signature = [UInt8](unsafeUninitializedCapacity: capacity) { out, count in
            count = bytes.withUnsafeBytes { input in
                // A zero-length message still needs an address.
                Int(wxpay_rsa_sha256_sign(key.pointer, input.baseAddress ?? UnsafeRawPointer(out.baseAddress!), input.count,
                                          out.baseAddress!, out.count))
            }
        }
        guard signature.count == capacity else { preconditionFailure("signing failed inside OpenSSL") }
        return signature
    }

    public var publicKey: RSAPublicKey { RSAPublicKey(checked: key.publicKey) }
}

/// An RSA public key that checks SHA256withRSA signatures: WeChat Pay API v3's platform key (from
/// its certificate or the `BEGIN PUBLIC KEY` file WeChat hands out).
public struct RSAPublicKey: Sendable {
    public let key: PublicKey
    /// The key prepared for the public operation on AVX-512 IFMA, when the CPU has it and the key
    /// is RSA-2048 (CCrypto's rsa2048_ifma.c): under half of OpenSSL's time per verify.
    private let prepared: PreparedRSA2048?

    /// Loads SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`) or PKCS#1 (`BEGIN RSA PUBLIC KEY`) PEM.
    public init(pem: String) throws(CryptoError) {
        try self.init(try PublicKey(pem: pem))
    }

    /// - Throws: ``CryptoError`` when the key is not RSA, under 2048 bits, or its public exponent
    ///   is even or below 3: with 1 anyone can sign (the padded digest is its own signature).
    public init(_ key: PublicKey) throws(CryptoError) {
        guard case .rsa(let bits) = key.algorithm else { throw .publicKeyNotRSA }
        guard bits >= 2048 else { throw .rsaKeyTooSmall }
        guard Self.hasSoundExponent(key) else { throw .rsaExponentUnsound }
        self.init(checked: key)
    }

    /// Whether the public exponent is odd and at least 3.
    private static func hasSoundExponent(_ key: PublicKey) -> Bool {
        var exponent: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key.pointer, "e", &exponent) == 1, let exponent else {
            ERR_clear_error()
            return false
        }
        defer { BN_free(exponent) }
        return BN_is_odd(exponent) == 1 && BN_num_bits(exponent) >= 2
    }

    /// The key a certificate certifies.
    public init(certificate: Certificate) throws(CryptoError) {
        try self.init(certificate.publicKey)
    }

    fileprivate init(checked key: PublicKey) {
        self.key = key
        prepared = PreparedRSA2048(key)
    }

    /// Whether verifications go through the IFMA public operation (tests and benchmarks say which
    /// path they measured).
    public var verifiesOnIFMA: Bool { prepared != nil }

    /// Whether `signature` is the SHA256withRSA signature of `message` under this key (through
    /// the RSA fast path: every v3 answer and notify is verified here). On IFMA only a match is
    /// decided there; anything else is asked of OpenSSL's RSA_verify, so the answer is always OpenSSL's.
    public func isValidSignature(_ signature: some Sequence<UInt8>, for message: some Sequence<UInt8>) -> Bool {
        let signature = Array(signature), message = Array(message)
        guard !signature.isEmpty else { return false }
        return signature.withUnsafeBufferPointer { sig in
            message.withUnsafeBytes { input in
                wxpay_rsa_sha256_verify_prepared(prepared?.pointer, key.pointer,
                                                 input.baseAddress ?? UnsafeRawPointer(sig.baseAddress!), input.count,
                                                 sig.baseAddress!, sig.count) == 1
            }
        }
    }

    /// Whether `privateKey` is this key's private half.
    public func matches(_ privateKey: RSAPrivateKey) -> Bool { key.matches(privateKey.key) }
}

/// An RSA-2048 public key prepared for the IFMA public operation. Never changed after it is made,
/// so any thread may verify with it.
private final class PreparedRSA2048: @unchecked Sendable {
    let pointer: OpaquePointer

    init?(_ key: PublicKey) {
        guard let pointer = wxpay_rsa2048_ifma_new(key.pointer) else { return nil }
        self.pointer = pointer
    }

    deinit { wxpay_rsa2048_ifma_free(pointer) }
}
