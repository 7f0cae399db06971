// SPDX-License-Identifier: Apache-2.0
import COpenSSL
import Foundation

/// One X.509 certificate, owned (freed when the last reference goes).
///
/// Parsing is OpenSSL's (`d2i_X509`); the DER bytes are kept, so comparisons and cache keys use
/// exactly what was received.
public final class Certificate: @unchecked Sendable, Hashable {
    // @unchecked: the X509 is never mutated after parsing; OpenSSL's read-only accessors are
    // thread-safe.
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

    /// Takes ownership of an X509 made by OpenSSL (the simulator's PKI).
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

    /// The first certificate of a PEM text, or the certificate of a DER file.
    public convenience init?(pemOrDER bytes: [UInt8]) {
        if let text = String(validating: bytes, as: UTF8.self), text.contains("-----BEGIN CERTIFICATE-----") {
            guard let x509 = bytes.withUnsafeBufferPointer({ buffer in
                buffer.withMemoryRebound(to: CChar.self) { wxpay_x509_from_pem($0.baseAddress!, $0.count) }
            }) else { return nil }
            self.init(owning: x509)
        } else {
            self.init(der: bytes)
        }
    }

    deinit { X509_free(x509) }

    /// SHA-256 of the DER encoding, as lowercase hex (the fingerprint Apple publishes).
    public var sha256Fingerprint: String {
        SHA256Digest(der).hex
    }

    /// PEM text of the certificate.
    public var pem: String {
        var buffer: UnsafeMutablePointer<CChar>?
        let length = wxpay_x509_to_pem(x509, &buffer)
        defer { wxpay_openssl_free(buffer) }
        guard length > 0, let buffer else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: buffer, count: Int(length)), as: UTF8.self)
    }

    /// notBefore and notAfter.
    public var validity: (notBefore: Date, notAfter: Date) {
        var notBefore: Int64 = 0
        var notAfter: Int64 = 0
        guard wxpay_x509_validity(x509, &notBefore, &notAfter) == 1 else { return (.distantFuture, .distantPast) }
        return (Date(timeIntervalSince1970: TimeInterval(notBefore)), Date(timeIntervalSince1970: TimeInterval(notAfter)))
    }

    /// Whether the certificate carries the extension `oid` (dotted form).
    public func hasExtension(_ oid: String) -> Bool { wxpay_x509_has_extension(x509, oid) == 1 }

    public static func == (lhs: Certificate, rhs: Certificate) -> Bool { lhs.der == rhs.der }
    public func hash(into hasher: inout Hasher) { hasher.combine(der) }
}

/// A SHA-256 digest (OpenSSL's one-shot `SHA256`).
struct SHA256Digest: Hashable, Sendable {
    let bytes: [UInt8]

    init(_ buffer: UnsafeRawBufferPointer) {
        var digest = [UInt8](repeating: 0, count: 32)
        if let base = buffer.baseAddress {
            wxpay_sha256(base, buffer.count, &digest)
        } else {
            // An empty buffer may have no base address; hash a zero-length range of a real one.
            let empty: UInt8 = 0
            withUnsafePointer(to: empty) { wxpay_sha256($0, 0, &digest) }
        }
        bytes = digest
    }

    init(_ bytes: [UInt8]) {
        self = bytes.withUnsafeBytes { SHA256Digest($0) }
    }

    var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
