// SPDX-License-Identifier: Apache-2.0
import COpenSSL
import WeChatPay

/// The v2 signature computed the plain way: filter, sort with the standard library, join strings,
/// hash with OpenSSL's EVP one-shots. `Signer` sorts by eight-byte prefixes into stack buffers
/// and keeps precomputed HMAC states; this is what it must always agree with: in the property
/// tests (WeChatPayTests), the notify fuzz target (which compiles this file too) and the signing
/// benchmark's check before it times anything. Never used to sign anything real.
public enum ReferenceSigner {
    public static func signature(_ fields: Fields, key: String, type: SignType) -> String {
        let pairs = fields.elements
            .filter { !$0.value.isEmpty && $0.name != "sign" }
            .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            .map { "\($0.name)=\($0.value)" }
        let message = Array((pairs + ["key=" + key]).joined(separator: "&").utf8)
        var digest = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        switch type {
        case .md5:
            _ = EVP_Digest(message, message.count, &digest, &length, EVP_md5(), nil)
        case .hmacSHA256:
            let keyBytes = Array(key.utf8)
            _ = HMAC(EVP_sha256(), keyBytes, Int32(keyBytes.count), message, message.count, &digest, &length)
        }
        let hex = Array("0123456789ABCDEF".utf8)
        return String(decoding: digest.prefix(Int(length)).flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 15)]] }, as: UTF8.self)
    }
}
