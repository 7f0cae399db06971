// SPDX-License-Identifier: Apache-2.0
internal import CCurl
internal import COpenSSL
import Foundation

/// OpenSSL 3's legacy provider, loaded once, for RC2/3DES PKCS#12 bundles (as libcurl needs it too).
private let legacyProviderLoaded: Bool = wxpay_curl_enable_legacy_pkcs12() == 1

/// What a client identity's certificate says, read once at start-up.
public struct TLSClientCertificate: Sendable, Hashable {
    /// The subject's common name (WeChat Pay's merchant certificates carry the mch_id there).
    public var commonName: String?
    /// The end of the certificate's validity.
    public var notAfter: Date

    public init(commonName: String?, notAfter: Date) {
        self.commonName = commonName
        self.notAfter = notAfter
    }

    /// Seconds from `now` until the certificate expires (negative once it has).
    public func secondsUntilExpiry(now: Date = Date()) -> Double {
        notAfter.timeIntervalSince(now)
    }
}

/// Why a client identity cannot be used. The description names the problem, never the password.
public struct TLSClientIdentityError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The certificate file is missing, unreadable or not a PEM certificate.
        case unreadableCertificate = "unreadable_certificate"
        /// The key file is missing, unreadable, not a PEM private key, or encrypted with another password.
        case unreadableKey = "unreadable_key"
        /// The PKCS#12 file is missing or unreadable, or its password is wrong.
        case unreadablePKCS12 = "unreadable_pkcs12"
        /// The private key is not the certificate's.
        case keyMismatch = "key_mismatch"
    }

    public let code: Code

    public static let unreadableCertificate = Self(code: .unreadableCertificate)
    public static let unreadableKey = Self(code: .unreadableKey)
    public static let unreadablePKCS12 = Self(code: .unreadablePKCS12)
    public static let keyMismatch = Self(code: .keyMismatch)

    /// A stable label without data, for metrics and logs.
    public var shortDescription: String { code.rawValue }

    public var description: String {
        switch code {
        case .unreadableCertificate: "the client certificate cannot be read as a PEM certificate"
        case .unreadableKey: "the client key cannot be read as a PEM private key (or its password is wrong)"
        case .unreadablePKCS12: "the PKCS#12 file cannot be read (missing, damaged, or a wrong password)"
        case .keyMismatch: "the private key does not belong to the client certificate"
        }
    }
}

extension TLSClientIdentity {
    /// Reads the certificate and key now (libcurl reads them again per connection) and checks that
    /// they belong together, so a wrong file or password stops start-up instead of the first refund.
    ///
    /// ```swift
    /// let certificate = try identity.inspect()
    /// if certificate.secondsUntilExpiry() < 30 * 86400 { logger.warning("renew the merchant certificate") }
    /// ```
    public func inspect() throws(TLSClientIdentityError) -> TLSClientCertificate {
        // OpenSSL's reading failures leave entries on this thread's error queue, which libcurl reads
        // after its own TLS calls on the same thread: never leave them behind.
        defer { ERR_clear_error() }
        let certificate: OpaquePointer
        let key: OpaquePointer
        switch storage {
        case .pem(let certificateFile, let keyFile, let keyPassword):
            guard let read = Self.readPEMCertificate(certificateFile) else { throw .unreadableCertificate }
            certificate = read
            guard let readKey = Self.readPEMKey(keyFile, password: keyPassword) else {
                X509_free(certificate)
                throw .unreadableKey
            }
            key = readKey
        case .pkcs12(let file, let password):
            // RC2/3DES bundles (older tools) need OpenSSL 3's legacy provider, as libcurl does.
            _ = legacyProviderLoaded
            guard let pair = Self.readPKCS12(file, password: password) else { throw .unreadablePKCS12 }
            (certificate, key) = pair
        }
        defer {
            X509_free(certificate)
            EVP_PKEY_free(key)
        }
        guard X509_check_private_key(certificate, key) == 1 else { throw .keyMismatch }
        guard let notAfter = Self.date(X509_get0_notAfter(certificate)) else {
            throw .unreadableCertificate
        }
        return TLSClientCertificate(commonName: Self.commonName(certificate), notAfter: notAfter)
    }

    private static func readPEMCertificate(_ path: String) -> OpaquePointer? {
        guard let bio = BIO_new_file(path, "r") else { return nil }
        defer { BIO_free(bio) }
        return PEM_read_bio_X509(bio, nil, nil, nil)
    }

    private static func readPEMKey(_ path: String, password: String?) -> OpaquePointer? {
        guard let bio = BIO_new_file(path, "r") else { return nil }
        defer { BIO_free(bio) }
        guard let password else { return PEM_read_bio_PrivateKey(bio, nil, nil, nil) }
        // With no callback, OpenSSL takes the last argument as the pass phrase itself.
        return password.withCString { phrase in
            PEM_read_bio_PrivateKey(bio, nil, nil, UnsafeMutableRawPointer(mutating: phrase))
        }
    }

    private static func readPKCS12(_ path: String, password: String) -> (OpaquePointer, OpaquePointer)? {
        guard let bio = BIO_new_file(path, "rb") else { return nil }
        defer { BIO_free(bio) }
        guard let bundle = d2i_PKCS12_bio(bio, nil) else { return nil }
        defer { PKCS12_free(bundle) }
        var key: OpaquePointer?
        var certificate: OpaquePointer?
        // The CA certificates in the bundle are not needed here (nil: OpenSSL discards them).
        guard PKCS12_parse(bundle, password, &key, &certificate, nil) == 1, let key, let certificate else {
            if let key { EVP_PKEY_free(key) }
            if let certificate { X509_free(certificate) }
            return nil
        }
        return (certificate, key)
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    private static func commonName(_ certificate: OpaquePointer) -> String? {
        guard let name = X509_get_subject_name(certificate) else { return nil }
        var buffer = [CChar](repeating: 0, count: 256)
        let length = X509_NAME_get_text_by_NID(name, NID_commonName, &buffer, Int32(buffer.count))
        guard length > 0 else { return nil }
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
