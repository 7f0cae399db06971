// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation

/// Reads an app receipt with its signature verified: what makes a StoreKit 1 receipt the device's
/// evidence of a purchase, when the gateway reads receipts itself instead of sending them to
/// verifyReceipt.
///
/// The rules, in order (each failure an ``AppReceiptError``):
/// 1. the receipt decodes as `AppReceipt` does (bounded: 512 KiB of base64, PKCS #7 signed data
///    with its content attached, Apple's attribute set), else `malformed`, `not_base64`, `too_large`;
/// 2. exactly one signer, whose certificate the receipt carries, and whose signature over the
///    content verifies (OpenSSL's `CMS_verify`), else `invalid_signature`;
/// 3. the signer's certificate chains, through a certificate the receipt carries that issued it,
///    to a configured root — Apple Root CA ("Apple Inc. Root") in production, never a root the
///    receipt carries — as exactly leaf, intermediate, root, at the receipt's creation date
///    (attribute 12, signed with it; the time of the check when absent), else `invalid_chain`;
/// 4. the leaf carries Apple's receipt-signing marker 1.2.840.113635.100.6.11.1 and the
///    intermediate Apple's WWDR marker 1.2.840.113635.100.6.2.1, else `invalid_chain`.
///
/// The chain is checked without OpenSSL's X509_STRICT profile: Apple's receipt chain is older than
/// its JWS chain (a 2006 root and the WWDR intermediates under it), and a genuine receipt refused
/// over a profile detail would keep a paying customer's transaction unfinished for good; every
/// signature, validity window and CA constraint on the path is still verified.
///
/// ```swift
/// let verifier = try ReceiptSignatureVerifier(roots: TrustedRoots.load(appleIncRoot, apple: .appleRootCA))
/// let receipt = try verifier.verify(base64: body.receipt, now: Date())
/// ```
public final class ReceiptSignatureVerifier: Sendable {
    public let roots: TrustedRoots
    private let store: TrustStore

    /// - Throws: ``AppStoreConfigurationError`` for roots OpenSSL cannot load.
    public init(roots: TrustedRoots) throws(AppStoreConfigurationError) {
        self.roots = roots
        do {
            store = try TrustStore(roots.certificates)
        } catch {
            throw AppStoreConfigurationError("OpenSSL refused a root certificate")
        }
    }

    /// The receipt the app sent (standard base64), read once its signature and chain verified.
    /// - Parameter now: the time to check the chain at when the receipt names no creation date.
    public func verify(base64: String, now: Date) throws(AppReceiptError) -> AppReceipt {
        try verify(der: try AppReceipt.der(base64: base64), now: now)
    }

    /// The receipt's DER (PKCS #7 ContentInfo), read once its signature and chain verified.
    public func verify(der: [UInt8], now: Date) throws(AppReceiptError) -> AppReceipt {
        // Read first (bounded, and the creation date the chain is checked at), then verified.
        let receipt = try AppReceipt(der: der)
        let signer: (leaf: Certificate, intermediate: Certificate)
        do {
            signer = try CMSSignedData.verifiedSigner(of: der, trustStore: store, at: receipt.creationDate ?? now, strict: false)
        } catch {
            switch error {
            case .notOneSigner: throw AppReceiptError(.invalidSignature, "not exactly one signer")
            case .badSignature:
                throw AppReceiptError(.invalidSignature, "its PKCS #7 signature does not verify with a certificate it carries")
            case .chainRefused: throw AppReceiptError(.invalidChain, "its signer does not chain to the configured receipt root")
            case .unreadable: throw AppReceiptError(.invalidChain, "its certificate chain could not be checked")
            }
        }
        guard signer.leaf.hasExtension(SignedDataVerifier.leafOID), signer.intermediate.hasExtension(SignedDataVerifier.intermediateOID) else {
            throw AppReceiptError(.invalidChain, "its chain lacks Apple's receipt-signing and WWDR markers")
        }
        return receipt
    }
}
