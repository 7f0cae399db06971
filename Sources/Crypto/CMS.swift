// SPDX-License-Identifier: Apache-2.0
internal import COpenSSL

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
}
