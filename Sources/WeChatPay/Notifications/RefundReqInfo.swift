// SPDX-License-Identifier: Apache-2.0
import COpenSSL
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The encrypted `req_info` of a refund notify: Base64 of AES-256-ECB with PKCS#7 padding over a
/// `<root>` document, keyed by the 32 ASCII bytes of the lowercase hex MD5 of the API key (not the
/// 16 raw digest bytes).
///
/// ECB has no integrity check. Decryption succeeding and the plaintext parsing as a strict `<root>`
/// document is the only evidence the notify came from someone holding our key, which is why every
/// decryption or parse failure is the same error (`req_info_undecryptable`): one answer, no oracle.
public enum RefundReqInfo {
    /// Decrypts and parses `req_info`.
    /// - Throws: `NotifyError.reqInfoNotBase64` or `NotifyError.reqInfoUndecryptable`.
    public static func decrypt(_ reqInfo: String, key: APIKey) throws(NotifyError) -> Fields {
        guard let data = Data(base64Encoded: reqInfo) else { throw .reqInfoNotBase64 }
        let ciphertext = [UInt8](data)
        // Whole blocks only; anything else is truncation or garbage, refused before OpenSSL.
        guard !ciphertext.isEmpty, ciphertext.count % 16 == 0,
              let plaintext = cipher(ciphertext, key: aesKey(for: key), encrypt: false)
        else { throw .reqInfoUndecryptable }
        do {
            return try FlatXML.decode(plaintext, root: "root")
        } catch {
            throw .reqInfoUndecryptable
        }
    }

    /// Encrypts `fields` as WeChat does, for the simulator and tests.
    /// - Throws: when a field cannot be written as XML (see `FlatXML.encode`).
    public static func encrypt(_ fields: Fields, key: APIKey) throws(FlatXMLError) -> String {
        let plaintext = try FlatXML.encode(fields, root: "root")
        // Encryption with a valid 32-byte key only fails on allocation failure inside OpenSSL.
        guard let ciphertext = cipher(plaintext, key: aesKey(for: key), encrypt: true) else {
            fatalError("AES-256-ECB encryption failed inside OpenSSL")
        }
        return Data(ciphertext).base64EncodedString()
    }

    /// key* = lowercase hex MD5 of the API key, used as 32 ASCII bytes.
    static func aesKey(for key: APIKey) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 16)
        key.withUnsafeBytes { bytes in
            digest.withUnsafeMutableBufferPointer { out in
                // MD5 of zero bytes still needs a valid pointer.
                withUnsafePointer(to: 0 as UInt8) { empty in
                    wxpay_md5(bytes.baseAddress ?? UnsafeRawPointer(empty), bytes.count, out.baseAddress!)
                }
            }
        }
        let hex = Array("0123456789abcdef".utf8)
        var ascii: [UInt8] = []
        ascii.reserveCapacity(32)
        for byte in digest {
            ascii.append(hex[Int(byte >> 4)])
            ascii.append(hex[Int(byte & 0x0F)])
        }
        return ascii
    }

    /// One AES-256-ECB pass through OpenSSL's EVP interface with PKCS#7 padding. Nil when OpenSSL
    /// refuses (for decryption: bad padding, which is what a wrong key or tampering produces).
    private static func cipher(_ input: [UInt8], key: [UInt8], encrypt: Bool) -> [UInt8]? {
        precondition(key.count == 32, "AES-256 needs a 32-byte key")
        guard input.count <= Int(Int32.max) - 32 else { return nil }
        guard let context = EVP_CIPHER_CTX_new() else { fatalError("OpenSSL could not allocate a cipher context") }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var written: Int32 = 0
        var finalWritten: Int32 = 0
        let ok = output.withUnsafeMutableBufferPointer { out -> Bool in
            guard EVP_CipherInit_ex(context, EVP_aes_256_ecb(), nil, key, nil, encrypt ? 1 : 0) == 1,
                  EVP_CipherUpdate(context, out.baseAddress, &written, input, Int32(input.count)) == 1,
                  EVP_CipherFinal_ex(context, out.baseAddress! + Int(written), &finalWritten) == 1
            else { return false }
            return true
        }
        guard ok else {
            // A failed padding check leaves an entry on this thread's OpenSSL error queue; libcurl
            // reads that queue after TLS calls on the same thread, so it must not linger.
            ERR_clear_error()
            return nil
        }
        output.removeSubrange(Int(written + finalWritten)...)
        return output
    }
}
