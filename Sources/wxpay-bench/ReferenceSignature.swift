// SPDX-License-Identifier: Apache-2.0
import COpenSSL
import WeChatPay

/// The v2 signature computed the plain way (sorted strings, OpenSSL's EVP one-shots), to check
/// that the optimised `Signer` still gives the same answer on the benchmark's inputs.
enum ReferenceSignature {
    static func compute(_ fields: Fields, key: String, type: SignType) -> String {
        let pairs = fields.elements
            .filter { !$0.value.isEmpty && $0.name != "sign" }
            .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            .map { "\($0.name)=\($0.value)" }
        let message = Array((pairs.joined(separator: "&") + "&key=" + key).utf8)
        var digest = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        switch type {
        case .md5:
            _ = EVP_Digest(message, message.count, &digest, &length, EVP_md5(), nil)
        case .hmacSHA256:
            let keyBytes = Array(key.utf8)
            _ = HMAC(EVP_sha256(), keyBytes, Int32(keyBytes.count), message, message.count, &digest, &length)
        }
        return digest.prefix(Int(length)).map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
