// SPDX-License-Identifier: Apache-2.0
internal import CCrypto
internal import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An OpenSSL `X509_STORE` holding trusted roots, and the chain check against it.
///
/// ```swift
/// let store = try TrustStore([appleRootG3])
/// try store.verify(leaf: leaf, intermediate: intermediate, root: appleRootG3, at: signedDate)
/// ```
public final class TrustStore: @unchecked Sendable {
    // @unchecked: built once, then only read by X509_verify_cert, which locks internally.
    private let pointer: OpaquePointer
    /// Kept alive as long as the store that references them.
    private let roots: [Certificate]

    /// - Throws: ``CryptoError/notACertificate`` when OpenSSL refuses a root.
    public init(_ roots: [Certificate]) throws(CryptoError) {
        let pointers: [OpaquePointer?] = roots.map { $0.x509 }
        let store = pointers.withUnsafeBufferPointer { buffer in
            wxpay_x509_store_new(UnsafePointer(OpaquePointer(buffer.baseAddress!)), Int32(buffer.count))
        }
        guard let store else { throw .notACertificate }
        pointer = store
        self.roots = roots
    }

    deinit { X509_STORE_free(pointer) }

    /// Verifies `leaf` through `intermediate` (the only untrusted certificate offered) to a root of
    /// this store, at `time`, with X509_V_FLAG_X509_STRICT. The verified path must be exactly leaf,
    /// `intermediate`, a root, and that root `root` when it is given.
    public func verify(leaf: Certificate, intermediate: Certificate, root: Certificate?, at time: Date) throws(ChainError) {
        var error: Int32 = 0
        let seconds = Int64(time.timeIntervalSince1970.rounded(.down))
        let outcome = wxpay_x509_verify_chain(pointer, leaf.x509, intermediate.x509, root?.x509, seconds, &error)
        switch Int(outcome) {
        case Int(WXPAY_CHAIN_OK): return
        case Int(WXPAY_CHAIN_REFUSED): throw ChainError(openSSLCode: error)
        case Int(WXPAY_CHAIN_WRONG_PATH): throw ChainError(.wrongPath)
        default: throw ChainError(.internalFailure)
        }
    }
}

/// Why a certificate chain was refused.
public struct ChainError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        case expired
        case notYetValid
        /// The chain does not lead to a trusted root.
        case untrustedIssuer
        /// A certificate's signature does not verify under its issuer's key.
        case badSignature
        /// The verified path is not leaf, the given intermediate, a trusted root (or not the expected root).
        case wrongPath
        /// Any other refusal of OpenSSL's; ``description`` says which.
        case other
        case internalFailure
    }

    public let reason: Reason
    /// OpenSSL's X509_V_ERR_* code, 0 when OpenSSL did not refuse the chain itself.
    public let openSSLCode: Int32

    init(_ reason: Reason) {
        self.reason = reason
        openSSLCode = 0
    }

    init(openSSLCode code: Int32) {
        openSSLCode = code
        switch code {
        case X509_V_ERR_CERT_HAS_EXPIRED: reason = .expired
        case X509_V_ERR_CERT_NOT_YET_VALID: reason = .notYetValid
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT: reason = .untrustedIssuer
        case X509_V_ERR_CERT_SIGNATURE_FAILURE: reason = .badSignature
        default: reason = .other
        }
    }

    /// OpenSSL's text for the refusal (static words, never certificate content).
    public var description: String {
        switch reason {
        case .wrongPath: "the chain is not leaf, intermediate, root"
        case .internalFailure: "the chain could not be checked"
        default: String(cString: X509_verify_cert_error_string(Int(openSSLCode)))
        }
    }
}
