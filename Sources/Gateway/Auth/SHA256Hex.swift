// SPDX-License-Identifier: Apache-2.0
import COpenSSL

/// The lowercase hex SHA-256 of a string's UTF-8: session ids, token fingerprints, credential stamps.
func sha256Hex(_ text: String) -> String {
    let bytes = Array(text.utf8)
    var digest = [UInt8](repeating: 0, count: 32)
    bytes.withUnsafeBufferPointer { input in
        digest.withUnsafeMutableBufferPointer { out in _ = SHA256(input.baseAddress, input.count, out.baseAddress) }
    }
    return digest.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
}
