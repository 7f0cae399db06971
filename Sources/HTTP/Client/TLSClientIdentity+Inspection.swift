// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import OperatorFiles

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
        let certificate: Certificate
        let key: PrivateKey
        switch storage {
        case .pem(let certificateFile, let keyFile, let keyPassword):
            guard let text = Self.read(certificateFile), let read = Certificate(pem: text) else { throw .unreadableCertificate }
            certificate = read
            guard let text = Self.read(keyFile), let readKey = try? PrivateKey(pem: text, password: keyPassword) else {
                throw .unreadableKey
            }
            key = readKey
        case .pkcs12(let file, let password):
            guard let bytes = try? OperatorFile.read(file, maximumBytes: Self.maximumFileBytes),
                  let pair = PKCS12.read(bytes, password: password)
            else { throw .unreadablePKCS12 }
            (certificate, key) = pair
        }
        guard certificate.matches(key) else { throw .keyMismatch }
        guard let validity = certificate.readableValidity else { throw .unreadableCertificate }
        return TLSClientCertificate(commonName: certificate.commonName, notAfter: validity.notAfter)
    }

    /// Never blocks on a FIFO at the configured path (OperatorFile), and no certificate or key
    /// comes near a mebibyte.
    private static func read(_ path: String) -> String? {
        (try? OperatorFile.read(path, maximumBytes: maximumFileBytes)).map { String(decoding: $0, as: UTF8.self) }
    }

    private static let maximumFileBytes = 1024 * 1024
}
