// SPDX-License-Identifier: Apache-2.0

/// Why the v3 protocol core refused something: a header, a signature, a resource, a document.
///
/// The description names the rule in fixed words and at most a field or header name, never a
/// value: no key, no plaintext, no signature, no body ends up in a log line through it.
public struct WeChatPayV3Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable labels, for metrics, logs and tests.
    public enum Code: String, Sendable, Hashable {
        /// The APIv3 key is not 32 ASCII bytes.
        case invalidAPIv3Key = "invalid_apiv3_key"
        /// A `Wechatpay-*` header is missing or empty.
        case missingHeader = "missing_header"
        /// A header is there but not what the protocol allows (a timestamp that is not seconds,
        /// a signature type other than WECHATPAY2-SHA256-RSA2048, an Authorization header that
        /// does not parse).
        case malformedHeader = "malformed_header"
        /// The signature is one of WeChat's probes (`WECHATPAY/SIGNTEST/…`): refuse it, quietly.
        case signatureProbe = "signature_probe"
        /// The timestamp is more than five minutes away from now (a replay, or a wrong clock).
        case staleTimestamp = "stale_timestamp"
        /// `Wechatpay-Serial` names neither the WeChat Pay public key nor a trusted platform certificate.
        case unknownSerial = "unknown_serial"
        /// The serial names a platform certificate that is not valid now.
        case certificateNotValidNow = "certificate_not_valid_now"
        /// The signature does not verify under the key the serial names.
        case badSignature = "bad_signature"
        /// A resource's algorithm is not AEAD_AES_256_GCM.
        case unsupportedAlgorithm = "unsupported_algorithm"
        /// The resource does not decrypt under the APIv3 key (a wrong key, or tampering).
        case decryptionFailed = "decryption_failed"
        /// The body is not the JSON document the protocol defines.
        case malformedDocument = "malformed_document"
        /// A required member is missing.
        case missingField = "missing_field"
        /// A member is there with a value the protocol does not allow.
        case invalidField = "invalid_field"
        /// A platform certificate download is not signed by a key already trusted.
        case untrustedDownload = "untrusted_download"
        /// A downloaded certificate is not what its entry says (serial, key type, validity).
        case invalidCertificate = "invalid_certificate"
        /// A downloaded bill does not hash to the `hash_value` WeChat signed.
        case billHashMismatch = "bill_hash_mismatch"
    }

    public let code: Code
    /// The field or header the refusal is about (a protocol name, never a value), or "".
    public let subject: String

    public init(_ code: Code, _ subject: String = "") {
        self.code = code
        self.subject = subject
    }

    public var description: String {
        let words: String = switch code {
        case .invalidAPIv3Key: "the APIv3 key must be 32 ASCII bytes"
        case .missingHeader: "the header is missing"
        case .malformedHeader: "the header is malformed"
        case .signatureProbe: "the signature is a WeChat Pay signature probe"
        case .staleTimestamp: "the timestamp is more than 5 minutes from now"
        case .unknownSerial: "the serial names no trusted key"
        case .certificateNotValidNow: "the platform certificate is not valid now"
        case .badSignature: "the signature does not verify"
        case .unsupportedAlgorithm: "the algorithm is not AEAD_AES_256_GCM"
        case .decryptionFailed: "the resource does not decrypt under the APIv3 key"
        case .malformedDocument: "the body is not the expected JSON document"
        case .missingField: "a required field is missing"
        case .invalidField: "a field has a value the protocol does not allow"
        case .untrustedDownload: "the certificate download is not signed by a trusted key"
        case .invalidCertificate: "a downloaded certificate does not match its entry"
        case .billHashMismatch: "the bill does not match its SHA-1 hash_value"
        }
        return subject.isEmpty ? words : "\(words): \(subject)"
    }

    /// A stable label without data.
    public var shortDescription: String { code.rawValue }

    static func missing(_ field: String) -> WeChatPayV3Error { WeChatPayV3Error(.missingField, field) }
    static func invalid(_ field: String) -> WeChatPayV3Error { WeChatPayV3Error(.invalidField, field) }
}
