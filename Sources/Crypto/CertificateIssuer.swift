// SPDX-License-Identifier: Apache-2.0
internal import CCrypto
internal import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Issues X.509 v3 certificates the way a small CA does: the App Store simulator's PKI (shaped like
/// Apple's), and the tests' hostile chains. Every certificate passes OpenSSL's X509_STRICT checks
/// (basic constraints, key usage, key identifiers).
///
/// ```swift
/// let rootKey = PrivateKey.generateEC(.p384)
/// let root = CertificateIssuer.issue(.init(commonName: "Test Root", organization: "Tests", country: "US"),
///                                    key: rootKey, issuer: nil, issuerKey: rootKey, serial: 1,
///                                    validity: start...end, kind: .authority(pathLength: nil))
/// ```
public enum CertificateIssuer {
    /// The subject's distinguished name.
    public struct Name: Sendable, Hashable {
        public var commonName: String
        public var organization: String
        public var country: String

        public init(commonName: String, organization: String, country: String) {
            self.commonName = commonName
            self.organization = organization
            self.country = country
        }
    }

    public enum Kind: Sendable, Hashable {
        /// A CA: basicConstraints critical CA:TRUE (with the path length when given), keyUsage
        /// keyCertSign and cRLSign.
        case authority(pathLength: Int?)
        /// An end entity: CA:FALSE, keyUsage digitalSignature.
        case leaf
    }

    /// A certificate for `key`'s public half, signed by `issuerKey` (self-signed when `issuer` is
    /// nil), SHA-384 when `digest` says so, else SHA-256. `markerOID` adds that non-critical
    /// extension with a DER NULL value (Apple marks its receipt-signing leaves and WWDR
    /// intermediates so). Nil only when OpenSSL refuses (a name longer than X.509 allows).
    public static func issue(_ subject: Name, key: PrivateKey, issuer: Certificate?, issuerKey: PrivateKey, serial: UInt64,
                             validity: ClosedRange<Date>, kind: Kind, markerOID: String? = nil,
                             digest: DigestAlgorithm = .sha256) -> Certificate? {
        precondition(digest != .sha512, "certificates are signed with SHA-256 or SHA-384")
        // A fresh X509 of the issuer, so the shared one is never written to (X509V3_set_ctx and
        // the authority key identifier read and cache through a non-const pointer).
        let issuerX509 = issuer.flatMap { certificate in
            certificate.der.withUnsafeBufferPointer { wxpay_x509_from_der($0.baseAddress!, $0.count) }
        }
        defer { if let issuerX509 { X509_free(issuerX509) } }
        if issuer != nil && issuerX509 == nil { return nil }
        let serialBytes = withUnsafeBytes(of: serial.bigEndian) { Array($0) }
        let (isCA, pathLength): (Int32, Int32) = switch kind {
        case .authority(let length): (1, Int32(length ?? -1))
        case .leaf: (0, -1)
        }
        let x509 = serialBytes.withUnsafeBufferPointer { serial in
            wxpay_x509_issue(key.pointer, subject.commonName, subject.organization, subject.country, issuerX509, issuerKey.pointer,
                             serial.baseAddress!, serial.count, Int64(validity.lowerBound.timeIntervalSince1970),
                             Int64(validity.upperBound.timeIntervalSince1970), isCA, pathLength, markerOID,
                             digest == .sha384 ? 1 : 0)
        }
        return x509.flatMap { Certificate(owning: $0) }
    }
}
