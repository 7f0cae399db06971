// SPDX-License-Identifier: Apache-2.0
internal import CCrypto
internal import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// PKCS #7 / CMS SignedData with attached content: what App Store app receipts are.
public enum CMSSignedData {
    /// The encapsulated content of the SignedData in `der` (a DER ContentInfo), through OpenSSL's
    /// CMS decoder. Nothing is verified: not the signature, not a certificate.
    /// - Throws: ``DERError`` naming what is wrong (fixed words, never the input).
    public static func content(of der: [UInt8]) throws(DERError) -> [UInt8] {
        let (cms, consumed): (OpaquePointer?, Int) = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            let cms = d2i_CMS_ContentInfo(nil, &pointer, buffer.count)
            return (cms, pointer.map { $0 - buffer.baseAddress! } ?? 0)
        }
        guard let cms else {
            ERR_clear_error()
            throw DERError("not a PKCS #7 ContentInfo")
        }
        defer { CMS_ContentInfo_free(cms) }
        guard consumed == der.count else { throw DERError("bytes after the PKCS #7 ContentInfo") }
        guard OBJ_obj2nid(CMS_get0_type(cms)) == NID_pkcs7_signed else { throw DERError("not PKCS #7 signed data") }
        guard let slot = CMS_get0_content(cms), let octets = slot.pointee else {
            throw DERError("the signed data carries no content")
        }
        let length = Int(ASN1_STRING_length(octets))
        guard length > 0, let bytes = ASN1_STRING_get0_data(octets) else { throw DERError("the signed data carries no content") }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }

    /// `content` as SignedData with the content attached (DER), signed by `signer` with `key`, with
    /// `certificates` (the rest of the chain) beside the signer's.
    public static func sign(_ content: [UInt8], signer: Certificate, key: PrivateKey, certificates: [Certificate]) -> [UInt8] {
        defer { ERR_clear_error() }
        return content.withUnsafeBytes { bytes -> [UInt8] in
            guard let data = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)),
                  let cms = CMS_sign(signer.x509, key.pointer, nil, data, UInt32(CMS_BINARY))
            else { preconditionFailure("OpenSSL could not sign the content") }
            defer { CMS_ContentInfo_free(cms); BIO_free(data) }
            for certificate in certificates { CMS_add1_cert(cms, certificate.x509) }
            var out: UnsafeMutablePointer<UInt8>?
            let length = i2d_CMS_ContentInfo(cms, &out)
            defer { wxpay_openssl_free(out) }
            guard length > 0, let out else { preconditionFailure("OpenSSL could not encode signed data") }
            return Array(UnsafeBufferPointer(start: out, count: Int(length)))
        }
    }

    /// Why ``verifiedSigner(of:trustStore:at:strict:)`` refused a SignedData.
    public enum SignerRefusal: Error, Sendable, Hashable {
        /// Not exactly one signer.
        case notOneSigner
        /// The signature does not verify over the content with a certificate the data carries.
        case badSignature
        /// The signer does not chain, through a certificate carried, to a root of the store.
        case chainRefused
        /// Not a SignedData, or OpenSSL failed.
        case unreadable
    }

    /// The signer's certificate and the one its chain went through, once the SignedData in `der`
    /// has exactly one signer, carried in it, whose signature over the attached content verifies,
    /// and whose certificate chains through another one carried (at most 8 tried) to a root of
    /// `trustStore` as exactly leaf, intermediate, root, at `time`. Nothing is fetched from
    /// elsewhere. `strict` checks the chain with X509_V_FLAG_X509_STRICT; without it OpenSSL's
    /// default profile (every signature, validity window and CA constraint still verified).
    public static func verifiedSigner(of der: [UInt8], trustStore: TrustStore, at time: Date, strict: Bool)
        throws(SignerRefusal) -> (leaf: Certificate, intermediate: Certificate)
    {
        let cms: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            let cms = d2i_CMS_ContentInfo(nil, &pointer, buffer.count)
            guard let cms, pointer.map({ $0 - buffer.baseAddress! }) == buffer.count else {
                if let cms { CMS_ContentInfo_free(cms) }
                return nil
            }
            return cms
        }
        guard let cms else {
            ERR_clear_error()
            throw .unreadable
        }
        defer { CMS_ContentInfo_free(cms) }
        guard OBJ_obj2nid(CMS_get0_type(cms)) == NID_pkcs7_signed else { throw .unreadable }
        var leafPointer: OpaquePointer?
        var intermediatePointer: OpaquePointer?
        var error: Int32 = 0
        let seconds = Int64(time.timeIntervalSince1970.rounded(.down))
        let flags = strict ? UInt(X509_V_FLAG_X509_STRICT) : 0
        let outcome = wxpay_cms_verify_signer(cms, trustStore.pointer, seconds, flags, &leafPointer, &intermediatePointer, &error)
        // Each certificate is owned (and freed) from here on, whatever happens to the other.
        let leaf = leafPointer.flatMap { Certificate(owning: $0) }
        let intermediate = intermediatePointer.flatMap { Certificate(owning: $0) }
        switch Int(outcome) {
        case Int(WXPAY_CMS_OK):
            guard let leaf, let intermediate else { throw .unreadable }
            return (leaf, intermediate)
        case Int(WXPAY_CMS_NOT_ONE_SIGNER): throw .notOneSigner
        case Int(WXPAY_CMS_BAD_SIGNATURE): throw .badSignature
        case Int(WXPAY_CMS_CHAIN_REFUSED): throw .chainRefused
        default: throw .unreadable
        }
    }
}
