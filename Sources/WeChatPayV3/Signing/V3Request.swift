// SPDX-License-Identifier: Apache-2.0

/// One v3 API request as it goes on the wire: the method, the URL as signed (path and query, no
/// host) and the exact body bytes. The signature covers exactly these, so nothing may re-serialise
/// the body after it is built.
public struct V3Request: Sendable, Hashable {
    public var method: String
    public var url: String
    public var body: [UInt8]

    public init(method: String, url: String, body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.body = body
    }

    /// The path without the query.
    public var path: Substring { url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0] }
}

/// Percent-encoding for a path segment or query value the merchant chose (an `out_trade_no` may
/// hold `|` and `*`): unreserved characters stay, everything else becomes `%XX`.
public enum V3URLComponent {
    public static func encode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                 UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }

    /// Decodes `%XX` escapes; nil for a broken escape or bytes that are not UTF-8.
    public static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let first = utf8.index(after: index)
                guard first < utf8.endIndex, utf8.index(after: first) < utf8.endIndex,
                      let value = UInt8(String(decoding: utf8[first...utf8.index(after: first)], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
                index = utf8.index(first, offsetBy: 2)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
