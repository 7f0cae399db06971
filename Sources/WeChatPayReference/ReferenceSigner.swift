// SPDX-License-Identifier: Apache-2.0
import Crypto
import WeChatPay

/// The v2 signature computed the plain way: filter, sort with the standard library, join strings,
/// hash in one shot (HMAC through OpenSSL's `HMAC()`, not the key schedule). `Signer` sorts by
/// eight-byte prefixes into stack buffers and keeps precomputed HMAC states; this is what it must always agree with: in the property
/// tests (WeChatPayTests), the notify fuzz target (which compiles this file too) and the signing
/// benchmark's check before it times anything. Never used to sign anything real.
public enum ReferenceSigner {
    public static func signature(_ fields: Fields, key: String, type: SignType) -> String {
        let pairs = fields.elements
            .filter { !$0.value.isEmpty && $0.name != "sign" }
            .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            .map { "\($0.name)=\($0.value)" }
        let message = Array((pairs + ["key=" + key]).joined(separator: "&").utf8)
        let digest = switch type {
        case .md5: MD5.hash(message)
        case .hmacSHA256: HMAC.authenticationCode(.sha256, key: Array(key.utf8), message: message)
        }
        let hex = Array("0123456789ABCDEF".utf8)
        return String(decoding: digest.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 15)]] }, as: UTF8.self)
    }
}
