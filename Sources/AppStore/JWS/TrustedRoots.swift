// SPDX-License-Identifier: Apache-2.0
import Crypto

/// The root certificates App Store signed data must chain to.
///
/// Production trusts one Apple root alone: ``load(_:allowUntrustedRoot:apple:)`` accepts a file
/// whose certificate's DER SHA-256 is Apple's published fingerprint of the expected root — Apple
/// Root CA - G3 for signed transactions and notifications (JWS), Apple Root CA (the older "Apple
/// Inc. Root") for app receipts (PKCS #7) — and refuses any other root unless the caller says,
/// explicitly, that an untrusted root is allowed (the App Store simulator, tests). A root is
/// trusted because it was configured, never because a token or a receipt carries it.
///
/// ```swift
/// let roots = try TrustedRoots.load(Array(try Data(contentsOf: url)))   // AppleRootCA-G3.cer
/// let receipts = try TrustedRoots.load(appleIncRoot, apple: .appleRootCA) // AppleIncRootCertificate.cer
/// let simulator = try TrustedRoots.load(pem, allowUntrustedRoot: true)
/// ```
public struct TrustedRoots: Sendable {
    /// The Apple root a kind of signed data chains to, by its published name and fingerprint.
    public struct AppleRoot: Sendable, Hashable {
        public let name: String
        /// SHA-256 of the root's DER encoding, lowercase hex, as Apple publishes it.
        public let fingerprint: String

        /// Apple Root CA - G3 (`AppleRootCA-G3.cer`): StoreKit 2's signed transactions, the App Store
        /// Server API's answers and App Store Server Notifications V2.
        public static let g3 = AppleRoot(name: "Apple Root CA - G3", fingerprint: TrustedRoots.appleRootCAG3Fingerprint)
        /// Apple Root CA (`AppleIncRootCertificate.cer`, "Apple Inc. Root"): app receipts, signed by
        /// the Mac App Store and iTunes Store Receipt Signing certificate under Apple's WWDR CA.
        public static let appleRootCA = AppleRoot(name: "Apple Root CA", fingerprint: TrustedRoots.appleRootCAFingerprint)
    }

    /// SHA-256 of Apple Root CA - G3's DER encoding, as Apple publishes it.
    public static let appleRootCAG3Fingerprint = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"
    /// SHA-256 of Apple Root CA's (Apple Inc. Root's) DER encoding, as Apple publishes it.
    public static let appleRootCAFingerprint = "b0b1730ecbc7ff4505142c49f1295e6eda6bcaed7e2c68c5be91b5a11001f024"

    /// The trusted roots, in configuration order.
    public let certificates: [Certificate]
    /// The Apple root these roots stand for.
    public let apple: AppleRoot
    /// Whether a root other than `apple` is among them.
    public let includesUntrustedRoot: Bool

    /// - Throws: ``AppStoreConfigurationError`` when `certificates` is empty, or holds a root that
    ///   is not `apple` and `allowUntrustedRoot` is false.
    public init(_ certificates: [Certificate], allowUntrustedRoot: Bool = false, apple: AppleRoot = .g3)
        throws(AppStoreConfigurationError)
    {
        guard !certificates.isEmpty else { throw AppStoreConfigurationError("no trusted root configured") }
        let foreign = certificates.contains { $0.sha256Fingerprint != apple.fingerprint }
        if foreign && !allowUntrustedRoot {
            throw AppStoreConfigurationError(
                "the root certificate is not \(apple.name) (SHA-256 \(apple.fingerprint)); "
                    + "another root needs the explicit untrusted-root flag")
        }
        self.certificates = certificates
        self.apple = apple
        includesUntrustedRoot = foreign
    }

    /// One root from the bytes of a PEM or DER file.
    public static func load(_ bytes: [UInt8], allowUntrustedRoot: Bool = false, apple: AppleRoot = .g3)
        throws(AppStoreConfigurationError) -> TrustedRoots
    {
        guard let certificate = Certificate(pemOrDER: bytes) else {
            throw AppStoreConfigurationError("the root file holds no PEM or DER certificate")
        }
        return try TrustedRoots([certificate], allowUntrustedRoot: allowUntrustedRoot, apple: apple)
    }

    /// The first root that is not `apple`, if any: what a production configuration must acknowledge.
    public var untrustedRoot: Certificate? {
        certificates.first { $0.sha256Fingerprint != apple.fingerprint }
    }
}
