// SPDX-License-Identifier: Apache-2.0
internal import CCrypto
internal import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One X.509 certificate, owned (freed when the last reference goes).
///
/// Parsing is OpenSSL's (`d2i_X509`); the DER bytes are kept, so comparisons and cache keys use
/// exactly what was received.
public final class Certificate: @unchecked Sendable, Hashable {
    // @unchecked: the X509 is never mutated after init; OpenSSL's read-only accessors are thread-safe.
    let x509: OpaquePointer
    /// The certificate's DER encoding.
    public let der: [UInt8]

    /// Parses DER; trailing bytes are refused.
    public init?(der: [UInt8]) {
        guard !der.isEmpty, let x509 = der.withUnsafeBufferPointer({ wxpay_x509_from_der($0.baseAddress!, $0.count) })
        else { return nil }
        self.x509 = x509
        self.der = der
    }

    /// Takes ownership of an X509 made by OpenSSL.
    init?(owning x509: OpaquePointer) {
        var buffer: UnsafeMutablePointer<UInt8>?
        let length = wxpay_x509_to_der(x509, &buffer)
        guard length > 0, let buffer else {
            X509_free(x509)
            return nil
        }
        der = Array(UnsafeBufferPointer(start: buffer, count: Int(length)))
        wxpay_openssl_free(buffer)
        self.x509 = x509
    }

    /// The first certificate of a PEM text.
    public convenience init?(pem: String) {
        var pem = pem
        let x509: OpaquePointer? = pem.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { text in text.baseAddress.flatMap { wxpay_x509_from_pem($0, text.count) } }
        }
        guard let x509 else { return nil }
        self.init(owning: x509)
    }

    /// The first certificate of a PEM text, or the certificate of a DER file.
    public convenience init?(pemOrDER bytes: [UInt8]) {
        if let text = String(validating: bytes, as: UTF8.self), text.contains("-----BEGIN CERTIFICATE-----") {
            self.init(pem: text)
        } else {
            self.init(der: bytes)
        }
    }

    deinit { X509_free(x509) }

    /// SHA-256 of the DER encoding, as lowercase hex (the fingerprint Apple publishes).
    public var sha256Fingerprint: String { Hex.encode(SHA256.hash(der)) }

    /// PEM text of the certificate.
    public var pem: String { PEMText.take { wxpay_x509_to_pem(x509, &$0) } }

    /// notBefore and notAfter; an empty window (never valid) when OpenSSL cannot read them.
    public var validity: (notBefore: Date, notAfter: Date) { readableValidity ?? (.distantFuture, .distantPast) }

    /// notBefore and notAfter, or nil when OpenSSL cannot read them.
    public var readableValidity: (notBefore: Date, notAfter: Date)? {
        var notBefore: Int64 = 0
        var notAfter: Int64 = 0
        guard wxpay_x509_validity(x509, &notBefore, &notAfter) == 1 else { return nil }
        return (Date(timeIntervalSince1970: TimeInterval(notBefore)), Date(timeIntervalSince1970: TimeInterval(notAfter)))
    }

    /// Whether the certificate carries the extension `oid` (dotted form).
    public func hasExtension(_ oid: String) -> Bool { wxpay_x509_has_extension(x509, oid) == 1 }

    /// The serial number as uppercase hex without leading zeros, the way WeChat Pay API v3 names a
    /// certificate (`Wechatpay-Serial`, `serial_no`) and its own SDKs print `BigInteger`s; nil for a
    /// negative serial, which RFC 5280 forbids.
    public var serialNumberHex: String? {
        var bytes = [UInt8](repeating: 0, count: 64)
        let length = wxpay_x509_serial(x509, &bytes, bytes.count)
        guard length > 0 else { return nil }
        let hex = Hex.encode(bytes.prefix(Int(length)), uppercase: true)
        let digits = hex.drop { $0 == "0" }
        return digits.isEmpty ? "0" : String(digits)
    }

    /// The subject's common name (WeChat Pay's merchant certificates carry the mch_id there).
    public var commonName: String? {
        guard let name = X509_get_subject_name(x509) else { return nil }
        var buffer = [CChar](repeating: 0, count: 256)
        let length = X509_NAME_get_text_by_NID(name, NID_commonName, &buffer, Int32(buffer.count))
        ERR_clear_error()
        guard length > 0 else { return nil }
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The key the certificate certifies.
    public var publicKey: PublicKey {
        guard let key = X509_get_pubkey(x509) else { preconditionFailure("a parsed certificate without a public key") }
        return PublicKey(owning: key)
    }

    /// Whether `privateKey` is the private half of the certificate's key (a merchant's
    /// `apiclient_cert.pem` and `apiclient_key.pem`, a TLS identity).
    public func matches(_ privateKey: PrivateKey) -> Bool {
        defer { ERR_clear_error() }
        return X509_check_private_key(x509, privateKey.pointer) == 1
    }

    public static func == (lhs: Certificate, rhs: Certificate) -> Bool { lhs.der == rhs.der }
    public func hash(into hasher: inout Hasher) { hasher.combine(der) }
}
