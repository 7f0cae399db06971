// SPDX-License-Identifier: Apache-2.0
import Crypto

/// The root certificates App Store signed data must chain to.
///
/// Production trusts Apple Root CA - G3 alone: ``load(_:allowUntrustedRoot:)`` accepts a file
/// whose certificate's DER SHA-256 is Apple's published fingerprint and refuses any other root
/// unless the caller says, explicitly, that an untrusted root is allowed (the App Store simulator,
/// tests). A root is trusted because it was configured, never because a token carries it.
///
/// ```swift
/// let roots = try TrustedRoots.load(Array(try Data(contentsOf: url)))   // AppleRootCA-G3.cer
/// let simulator = try TrustedRoots.load(pem, allowUntrustedRoot: true)
/// ```
public struct TrustedRoots: Sendable {
    /// SHA-256 of Apple Root CA - G3's DER encoding, as Apple publishes it.
    public static let appleRootCAG3Fingerprint = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"

    /// The trusted roots, in configuration order.
    public let certificates: [Certificate]
    /// Whether a root other than Apple Root CA - G3 is among them.
    public let includesUntrustedRoot: Bool

    /// - Throws: ``AppStoreConfigurationError`` when `certificates` is empty, or holds a root that
    ///   is not Apple Root CA - G3 and `allowUntrustedRoot` is false.
    public init(_ certificates: [Certificate], allowUntrustedRoot: Bool = false) throws(AppStoreConfigurationError) {
        guard !certificates.isEmpty else { throw AppStoreConfigurationError("no trusted root configured") }
        let foreign = certificates.contains { $0.sha256Fingerprint != Self.appleRootCAG3Fingerprint }
        if foreign && !allowUntrustedRoot {
            throw AppStoreConfigurationError(
                "the root certificate is not Apple Root CA - G3 (SHA-256 \(Self.appleRootCAG3Fingerprint)); "
                    + "another root needs the explicit untrusted-root flag")
        }
        self.certificates = certificates
        includesUntrustedRoot = foreign
    }

    /// One root from the bytes of a PEM or DER file.
    public static func load(_ bytes: [UInt8], allowUntrustedRoot: Bool = false) throws(AppStoreConfigurationError) -> TrustedRoots {
        guard let certificate = Certificate(pemOrDER: bytes) else {
            throw AppStoreConfigurationError("the root file holds no PEM or DER certificate")
        }
        return try TrustedRoots([certificate], allowUntrustedRoot: allowUntrustedRoot)
    }
}
