// SPDX-License-Identifier: Apache-2.0
import Crypto
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
        // Whole blocks only; anything else is truncation or garbage, refused before OpenSSL.
        guard let plaintext = try? AES256ECB.decrypt([UInt8](data), key: aesKey(for: key)) else { throw .reqInfoUndecryptable }
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
        guard let ciphertext = try? AES256ECB.encrypt(plaintext, key: aesKey(for: key)) else {
            fatalError("AES-256-ECB encryption failed inside OpenSSL")
        }
        return Data(ciphertext).base64EncodedString()
    }

    /// key* = lowercase hex MD5 of the API key, used as 32 ASCII bytes.
    static func aesKey(for key: APIKey) -> [UInt8] {
        Array(Hex.encode(key.withUnsafeBytes { MD5.hash($0) }).utf8)
    }
}
