// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import JSON

/// Verifies App Store signed data — `signedTransactionInfo`, `signedRenewalInfo` and notification
/// `signedPayload` — and decodes it into typed values.
///
/// The rules, in the order they are applied (each failure is a ``SignedDataError`` naming it):
/// 1. shape: at most 64 KiB, three strict unpadded base64url segments, JSON header and payload
///    without duplicate keys (`malformed`); `alg` ES256 (`unsupported_algorithm`);
/// 2. `x5c` holds exactly three certificates, each at most 8 KiB of strict base64 DER; x5c[2] must
///    equal a configured root — it is never trusted because it is there; x5c[0] is verified
///    through x5c[1] to that root by OpenSSL's `X509_STORE` (X509_STRICT), at the payload's
///    `signedDate` unless the caller passes `now` (`invalid_chain`);
/// 3. the leaf carries 1.2.840.113635.100.6.11.1 and the intermediate 1.2.840.113635.100.6.2.1
///    (`missing_apple_oid`);
/// 4. the signature is 64 raw bytes r‖s over `header.payload`, valid for the leaf's P-256 key
///    (`invalid_signature`);
/// 5. `bundleId` (`bundle_mismatch`), `environment` (`environment_mismatch`) and, for production
///    notifications, `appAppleId` (`app_apple_id_mismatch`) are what the caller expects.
///
/// A verified chain is cached by the leaf's DER hash until it expires, so a known chain costs one
/// ECDSA verification. The verifier is pure apart from that cache: no clock (the caller passes
/// `now` for online checks), no file, no network (no OCSP).
///
/// ```swift
/// let verifier = try SignedDataVerifier(roots: try TrustedRoots.load(appleRootG3),
///                                       bundleID: "com.example.courses", environment: nil, appAppleID: 1234567890)
/// let transaction = try verifier.verifyTransaction(body.signedTransaction)
/// let notification = try verifier.verifyNotification(signedPayload)
/// ```
public final class SignedDataVerifier: Sendable {
    /// The leaf's marker OID (Mac App Store and iTunes Store receipt signing).
    public static let leafOID = "1.2.840.113635.100.6.11.1"
    /// The intermediate's marker OID (Apple Worldwide Developer Relations CA).
    public static let intermediateOID = "1.2.840.113635.100.6.2.1"

    public let roots: TrustedRoots
    public let bundleID: String
    /// The one environment accepted, or nil for both (the payload says which).
    public let environment: AppStoreEnvironment?
    /// The app's Apple id, checked on production notifications when set.
    public let appAppleID: Int64?

    private let store: TrustStore
    private let cache: LeafCache

    /// - Parameters:
    ///   - roots: the trusted roots (Apple Root CA - G3 in production).
    ///   - bundleID: the app's bundle id; every transaction and notification must name it.
    ///   - environment: `.production` or `.sandbox` to accept one only; nil (default) accepts both.
    ///   - appAppleID: the app's numeric Apple id. Required when `environment` is `.production`, as
    ///     Apple's own library requires it.
    ///   - leafCacheCapacity: verified leaves kept (default 64; 0 verifies every chain in full).
    /// - Throws: ``AppStoreConfigurationError`` for an empty bundle id, a production verifier
    ///   without an app id, or roots OpenSSL cannot load.
    public init(roots: TrustedRoots, bundleID: String, environment: AppStoreEnvironment? = nil, appAppleID: Int64? = nil,
                leafCacheCapacity: Int = 64) throws(AppStoreConfigurationError) {
        guard !bundleID.isEmpty else { throw AppStoreConfigurationError("the bundle id is empty") }
        if environment == .production && appAppleID == nil {
            throw AppStoreConfigurationError("verifying production data needs the app's Apple id (appAppleId)")
        }
        self.roots = roots
        self.bundleID = bundleID
        self.environment = environment
        self.appAppleID = appAppleID
        do {
            store = try TrustStore(roots.certificates)
        } catch {
            throw AppStoreConfigurationError("OpenSSL refused a root certificate")
        }
        cache = LeafCache(capacity: max(0, leafCacheCapacity))
    }

    /// How many verified leaves are cached (for tests and metrics).
    public var cachedLeafCount: Int { cache.count }

    // MARK: - Typed verification

    /// Verifies a `signedTransactionInfo` and checks its bundle id and environment.
    /// - Parameter now: validate the chain at this time instead of the payload's `signedDate`.
    public func verifyTransaction(_ jws: String, now: Date? = nil) throws(SignedDataError) -> AppStoreTransaction {
        try transaction(from: try verifiedPayload(jws, now: now))
    }

    /// Verifies a `signedRenewalInfo` and checks its environment (it carries no bundle id).
    public func verifyRenewalInfo(_ jws: String, now: Date? = nil) throws(SignedDataError) -> AppStoreRenewalInfo {
        try renewalInfo(from: try verifiedPayload(jws, now: now))
    }

    /// Verifies a notification's `signedPayload`, checks its bundle id, environment and (in
    /// production) app id, then verifies the transaction and renewal info inside it.
    public func verifyNotification(_ jws: String, now: Date? = nil) throws(SignedDataError) -> AppStoreNotification {
        try notification(from: try verifiedPayload(jws, now: now), now: now)
    }

    /// What a signed payload turned out to be.
    public enum Verified: Sendable, Hashable {
        case transaction(AppStoreTransaction)
        case renewalInfo(AppStoreRenewalInfo)
        case notification(AppStoreNotification)
    }

    /// Verifies any of the three, told apart by the payload: `notificationType` makes a
    /// notification, `transactionId` a transaction, `originalTransactionId` alone renewal info.
    public func verify(_ jws: String, now: Date? = nil) throws(SignedDataError) -> Verified {
        let payload = try verifiedPayload(jws, now: now)
        if payload["notificationType"] != nil { return .notification(try notification(from: payload, now: now)) }
        if payload["transactionId"] != nil { return .transaction(try transaction(from: payload)) }
        if payload["originalTransactionId"] != nil { return .renewalInfo(try renewalInfo(from: payload)) }
        throw SignedDataError(.malformed, "payload is neither a transaction, renewal info nor a notification")
    }

    private func transaction(from payload: JSONValue) throws(SignedDataError) -> AppStoreTransaction {
        let transaction = try AppStoreTransaction(payload: payload)
        guard transaction.bundleID == bundleID else { throw SignedDataError(.bundleMismatch, "bundleId is not the app's") }
        try check(transaction.environment)
        return transaction
    }

    private func renewalInfo(from payload: JSONValue) throws(SignedDataError) -> AppStoreRenewalInfo {
        let info = try AppStoreRenewalInfo(payload: payload)
        try check(info.environment)
        return info
    }

    private func notification(from payload: JSONValue, now: Date?) throws(SignedDataError) -> AppStoreNotification {
        let envelope = try NotificationEnvelope(payload: payload)
        guard envelope.bundleID == bundleID else { throw SignedDataError(.bundleMismatch, "data.bundleId is not the app's") }
        if envelope.environment == .production, let appAppleID, envelope.appAppleID != appAppleID {
            throw SignedDataError(.appAppleIDMismatch, "data.appAppleId is not the app's")
        }
        try check(envelope.environment)
        let transaction = try envelope.signedTransactionInfo.map { jws throws(SignedDataError) in
            try verifyTransaction(jws, now: now)
        }
        let renewal = try envelope.signedRenewalInfo.map { jws throws(SignedDataError) in
            try verifyRenewalInfo(jws, now: now)
        }
        // The inner data must be about the same environment as the notification itself.
        if let transaction, transaction.environment != envelope.environment {
            throw SignedDataError(.environmentMismatch, "the notification's transaction is from the other environment")
        }
        return AppStoreNotification(
            notificationType: envelope.notificationType, subtype: envelope.subtype,
            notificationUUID: envelope.notificationUUID, version: envelope.version, signedDate: envelope.signedDate,
            bundleID: envelope.bundleID, appAppleID: envelope.appAppleID, environment: envelope.environment,
            bundleVersion: envelope.bundleVersion, transaction: transaction, renewalInfo: renewal,
            consumptionRequestReason: envelope.consumptionRequestReason)
    }

    private func check(_ payloadEnvironment: AppStoreEnvironment) throws(SignedDataError) {
        if let environment, environment != payloadEnvironment {
            throw SignedDataError(.environmentMismatch, "environment is not the expected one")
        }
    }

    // MARK: - Signature and chain

    /// Rules 1–4: the payload of a JWS whose chain and signature are valid, before any check of
    /// what it says.
    public func verifiedPayload(_ jws: String, now: Date? = nil) throws(SignedDataError) -> JSONValue {
        let token = try CompactJWS(jws)
        let time: Date
        if let now {
            time = now
        } else {
            guard let signed = token.payload["signedDate"]?.intValue else {
                throw SignedDataError(.malformed, "payload has no signedDate to validate the chain at")
            }
            time = Date(millisecondsSince1970: Int64(signed))
        }
        let key = try leafKey(token.chain, at: time)
        guard key.isValidSignature(token.signature, digest: token.signingInputDigest) else {
            throw SignedDataError(.invalidSignature, "signature does not verify with the leaf's key")
        }
        return token.payload
    }

    private func leafKey(_ chain: [[UInt8]], at time: Date) throws(SignedDataError) -> ES256PublicKey {
        let leafHash = SHA256.hash(chain[0])
        guard let root = roots.certificates.first(where: { $0.der == chain[2] }) else {
            throw SignedDataError(.invalidChain, "x5c[2] is not a configured root")
        }
        if let key = cache.key(leaf: leafHash, intermediate: chain[1], root: chain[2], at: time) { return key }

        guard let leaf = Certificate(der: chain[0]), let intermediate = Certificate(der: chain[1]) else {
            throw SignedDataError(.malformed, "an x5c element is not a DER certificate")
        }
        do {
            try store.verify(leaf: leaf, intermediate: intermediate, root: root, at: time)
        } catch {
            switch error.reason {
            case .wrongPath: throw SignedDataError(.invalidChain, "the chain is not leaf, x5c[1], root")
            case .internalFailure: throw SignedDataError(.invalidChain, "the chain could not be checked")
            default: throw SignedDataError(.invalidChain, openSSLDetail: Self.chainFailure(error))
            }
        }
        guard leaf.hasExtension(Self.leafOID) else {
            throw SignedDataError(.missingAppleOID, "the leaf lacks 1.2.840.113635.100.6.11.1")
        }
        guard intermediate.hasExtension(Self.intermediateOID) else {
            throw SignedDataError(.missingAppleOID, "the intermediate lacks 1.2.840.113635.100.6.2.1")
        }
        guard let key = ES256PublicKey(certificate: leaf) else {
            throw SignedDataError(.invalidChain, "the leaf key is not EC P-256")
        }
        let windows = [leaf.validity, intermediate.validity, root.validity]
        cache.insert(
            LeafCache.Entry(key: key, intermediateDER: chain[1], rootDER: chain[2],
                            notBefore: windows.map(\.notBefore).max()!, notAfter: windows.map(\.notAfter).min()!),
            leaf: leafHash, now: time)
        return key
    }

    /// OpenSSL's reason, with the ones the App Store's rules name said in their terms.
    private static func chainFailure(_ error: ChainError) -> String {
        switch error.reason {
        case .expired: "a certificate had expired at the validation time"
        case .notYetValid: "a certificate was not yet valid at the validation time"
        case .untrustedIssuer: "the chain does not lead to a configured root"
        case .badSignature: "a certificate's signature is invalid"
        default: error.description
        }
    }
}
