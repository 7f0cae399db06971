// SPDX-License-Identifier: Apache-2.0
import Crypto

/// Percent-decoding of URI components (RFC 3986 §2.1). The server asks libmicrohttpd to leave the
/// path and query encoded, so an encoded `/` inside a path parameter is not taken for a separator,
/// and decodes each component here, refusing malformed escapes and invalid UTF-8.
enum PercentDecoding {
    /// The decoded text, or nil when an escape is malformed, the result is not UTF-8, or it contains
    /// NUL (which no identifier in this service may carry, and which C code downstream would truncate at).
    static func decode<S: StringProtocol>(_ component: S) -> String? {
        let utf8 = component.utf8
        guard utf8.contains(UInt8(ascii: "%")) else {
            return utf8.contains(0) ? nil : String(component)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let high = utf8.index(after: index)
                guard high != utf8.endIndex else { return nil }
                let low = utf8.index(after: high)
                guard low != utf8.endIndex, let h = Hex.value(ofDigit: utf8[high]), let l = Hex.value(ofDigit: utf8[low]) else {
                    return nil
                }
                bytes.append(h << 4 | l)
                index = utf8.index(after: low)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        guard !bytes.contains(0) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}
