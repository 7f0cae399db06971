// SPDX-License-Identifier: Apache-2.0

/// Why App Store signed data (a `signedTransactionInfo`, `signedRenewalInfo` or notification
/// `signedPayload`) was refused: the rule it broke, and a short fixed detail.
///
/// The description names the rule (`invalid_chain: certificate expired at signedDate`) and never
/// echoes the token or any value from it: what an attacker sends must not reach a log line
/// verbatim, and a JWS is a bearer credential of sorts.
///
/// ```swift
/// do {
///     let transaction = try verifier.verifyTransaction(jws)
/// } catch where error.rule == .environmentMismatch {
///     // a sandbox purchase reached the production endpoint
/// }
/// ```
public struct SignedDataError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The rules, named as they appear in logs, metrics and the CLI's output.
    public enum Rule: String, Sendable, Hashable, CaseIterable {
        /// Shape, size, encoding or JSON (including duplicate keys) is wrong.
        case malformed
        /// The header's `alg` is not ES256.
        case unsupportedAlgorithm = "unsupported_algorithm"
        /// The x5c chain is not exactly leaf, intermediate and a configured root, valid at the
        /// validation time, or its leaf key is not P-256.
        case invalidChain = "invalid_chain"
        /// The signature is not 64 raw bytes or does not verify with the leaf's key.
        case invalidSignature = "invalid_signature"
        /// The leaf lacks 1.2.840.113635.100.6.11.1 or the intermediate 1.2.840.113635.100.6.2.1.
        case missingAppleOID = "missing_apple_oid"
        /// The payload's bundle id is not the expected one.
        case bundleMismatch = "bundle_mismatch"
        /// The payload's environment is not the expected one.
        case environmentMismatch = "environment_mismatch"
        /// A production notification names another app (`appAppleId`).
        case appAppleIDMismatch = "app_apple_id_mismatch"
    }

    public let rule: Rule
    /// A fixed phrase saying what exactly failed (never input).
    public let detail: String

    public init(_ rule: Rule, _ detail: StaticString) {
        self.rule = rule
        self.detail = "\(detail)"
    }

    /// For details built from OpenSSL's fixed verification texts.
    init(_ rule: Rule, openSSLDetail: String) {
        self.rule = rule
        detail = String(openSSLDetail.prefix(80))
    }

    public var description: String { "\(rule.rawValue): \(detail)" }
}

/// Why a trust or verifier configuration is unusable (the CLI exits 2 on these).
public struct AppStoreConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}
