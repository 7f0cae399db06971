// SPDX-License-Identifier: Apache-2.0

/// Why a cryptographic operation refused its input.
///
/// The description names the problem in fixed words, never the key, the plaintext, a password or
/// a secret: an error may end up in a log line or a refusal the operator reads.
public struct CryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable labels, for metrics and tests.
    public enum Code: String, Sendable, Hashable {
        case notAPrivateKey = "not_a_private_key"
        case notAPublicKey = "not_a_public_key"
        case notACertificate = "not_a_certificate"
        /// The key is of another algorithm or curve than the operation needs.
        case wrongKeyType = "wrong_key_type"
        /// An RSA key shorter than 2048 bits.
        case keyTooSmall = "key_too_small"
        /// An RSA public exponent that is even or below 3 (with 1, every padded digest is its own
        /// signature).
        case badExponent = "bad_exponent"
        /// A key, nonce or input of a length the algorithm does not take.
        case invalidLength = "invalid_length"
        /// Decryption failed: a wrong key, tampering, or bad padding (one answer, no oracle).
        case decryptionFailed = "decryption_failed"
        /// OpenSSL could not do what it always can (allocation failure and the like).
        case internalFailure = "internal_failure"
    }

    public let code: Code
    private let words: String

    private init(_ code: Code, _ words: String) {
        self.code = code
        self.words = words
    }

    public static let notAPrivateKey = CryptoError(.notAPrivateKey, "not a PEM private key")
    public static let notAPublicKey = CryptoError(.notAPublicKey, "not a PEM public key")
    public static let notACertificate = CryptoError(.notACertificate, "not a PEM or DER certificate")
    public static let privateKeyNotP256 = CryptoError(.wrongKeyType, "the private key is not an EC key on P-256")
    public static let privateKeyNotRSA = CryptoError(.wrongKeyType, "the private key is not an RSA key")
    public static let publicKeyNotRSA = CryptoError(.wrongKeyType, "the public key is not an RSA key")
    public static let rsaKeyTooSmall = CryptoError(.keyTooSmall, "the RSA key is shorter than 2048 bits")
    public static let rsaExponentUnsound = CryptoError(.badExponent, "the RSA public exponent is not an odd number of at least 3")
    public static let decryptionFailed = CryptoError(.decryptionFailed, "the ciphertext does not decrypt under this key")
    public static let internalFailure = CryptoError(.internalFailure, "OpenSSL failed internally")

    /// A key, nonce or input of the wrong length; `what` names it ("AES-256 key").
    static func invalidLength(_ what: StaticString) -> CryptoError {
        CryptoError(.invalidLength, "\(what) has the wrong length")
    }

    /// A stable label without data, for metrics and logs.
    public var shortDescription: String { code.rawValue }
    public var description: String { words }
}

/// Why DER (or the PKCS #7 around it) could not be read; `reason` is fixed text, never the input.
public struct DERError: Error, Sendable, CustomStringConvertible {
    public let reason: StaticString

    public init(_ reason: StaticString) {
        self.reason = reason
    }

    public var description: String { "\(reason)" }
}
