// SPDX-License-Identifier: Apache-2.0
import AppStore
import Crypto
import Foundation
import JSON

/// A certificate chain shaped like Apple's, made at start with Crypto's `CertificateIssuer`: a self-signed P-384 root
/// (like Apple Root CA - G3), a P-384 intermediate carrying the WWDR marker OID
/// 1.2.840.113635.100.6.2.1 (like Apple Worldwide Developer Relations CA - G6), and a P-256 leaf
/// carrying the receipt-signing OID 1.2.840.113635.100.6.11.1, which signs the JWS.
///
/// Every certificate passes OpenSSL's X509_STRICT checks (basic constraints, key usage, key
/// identifiers), as Apple's do, so verifiers that insist on them — ours and Apple's own library —
/// accept the simulator's data. ``Options`` bends one rule at a time, for the tests' hostile chains.
///
/// ```swift
/// let pki = SimulatorPKI()
/// try Data(pki.root.pem.utf8).write(to: rootFile)        // what the gateway trusts
/// let jws = pki.sign(payload: transaction.payload)
/// ```
public struct SimulatorPKI: Sendable {
    /// What to make; the defaults make a valid chain for 2000–2100.
    public struct Options: Sendable {
        /// Prefix of the certificates' common names (at most 40 characters: X.509 allows 64).
        public var name: String
        public var rootValidity: ClosedRange<Date>
        public var intermediateValidity: ClosedRange<Date>
        public var leafValidity: ClosedRange<Date>
        /// Whether the intermediate carries 1.2.840.113635.100.6.2.1.
        public var intermediateOID: Bool
        /// Whether the leaf carries 1.2.840.113635.100.6.11.1.
        public var leafOID: Bool
        /// The leaf's key curve: P-256 (the only one ES256 allows) unless a test wants another.
        public var leafCurve: ECCurve

        public static let longAgo = Date(timeIntervalSince1970: 946_684_800)  // 2000-01-01
        public static let farAway = Date(timeIntervalSince1970: 4_102_444_800)  // 2100-01-01

        public init(name: String = "App Store Simulator", rootValidity: ClosedRange<Date> = longAgo...farAway,
                    intermediateValidity: ClosedRange<Date> = longAgo...farAway,
                    leafValidity: ClosedRange<Date> = longAgo...farAway, intermediateOID: Bool = true, leafOID: Bool = true,
                    leafCurve: ECCurve = .p256) {
            self.name = name
            self.rootValidity = rootValidity
            self.intermediateValidity = intermediateValidity
            self.leafValidity = leafValidity
            self.intermediateOID = intermediateOID
            self.leafOID = leafOID
            self.leafCurve = leafCurve
        }
    }

    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    /// The leaf's private key (nil when a test asked for a curve ES256 cannot use).
    public let leafKey: ES256PrivateKey?
    /// The root's key, to issue further certificates under it (a second leaf, a second intermediate).
    let rootKey: PrivateKey
    let intermediateKey: PrivateKey
    /// The leaf's key whatever its curve, for PKCS #7 signatures (app receipts).
    let leafPrivateKey: PrivateKey

    /// Makes a fresh chain (new keys every time).
    public init(_ options: Options = Options()) {
        let rootKey = PrivateKey.generateEC(.p384)
        let intermediateKey = PrivateKey.generateEC(.p384)
        let leafKey = PrivateKey.generateEC(options.leafCurve)
        var serial = UInt64(Date().timeIntervalSince1970 * 1000)
        func next() -> UInt64 { serial += 1; return serial }
        let root = Self.issue(subject: rootKey, name: "\(options.name) Root CA", issuer: nil, issuerKey: rootKey,
                              serial: next(), validity: options.rootValidity, kind: .authority(pathLength: nil), oid: nil)
        let intermediate = Self.issue(
            subject: intermediateKey, name: "\(options.name) WWDR CA", issuer: root,
            issuerKey: rootKey, serial: next(), validity: options.intermediateValidity, kind: .authority(pathLength: 0),
            oid: options.intermediateOID ? SignedDataVerifier.intermediateOID : nil)
        let leaf = Self.issue(
            subject: leafKey, name: "\(options.name) Receipt Signing",
            issuer: intermediate, issuerKey: intermediateKey, serial: next(), validity: options.leafValidity, kind: .leaf,
            oid: options.leafOID ? SignedDataVerifier.leafOID : nil)
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafPrivateKey = leafKey
        self.leafKey = try? ES256PrivateKey(leafKey)
    }

    /// The `x5c` header value: leaf, intermediate, root, as standard base64 DER.
    public var x5c: [String] { [leaf, intermediate, root].map { Base64.encode($0.der, .standardPadded) } }

    /// The payload signed as App Store signed data: `{"alg":"ES256","x5c":[…]}` and the leaf's key.
    public func sign(payload: JSONValue) -> String {
        guard let leafKey else { preconditionFailure("this chain's leaf cannot make ES256 signatures") }
        return JWSSigner.sign(header: ["x5c": .array(x5c.map(JSONValue.string))], payload: payload, with: leafKey)
    }

    static func issue(subject: PrivateKey, name: String, issuer: Certificate?, issuerKey: PrivateKey, serial: UInt64,
                      validity: ClosedRange<Date>, kind: CertificateIssuer.Kind, oid: String?) -> Certificate {
        let subjectName = CertificateIssuer.Name(commonName: name, organization: "App Store Simulator (not Apple)", country: "US")
        guard let certificate = CertificateIssuer.issue(subjectName, key: subject, issuer: issuer, issuerKey: issuerKey, serial: serial,
                                                        validity: validity, kind: kind, markerOID: oid, digest: .sha384)
        else { preconditionFailure("OpenSSL could not issue a certificate") }
        return certificate
    }
}
