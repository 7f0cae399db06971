// SPDX-License-Identifier: Apache-2.0
import Gateway

/// HTML text in which every interpolated `String` is escaped: markup can only come from literals
/// in this module or from another `HTML`, so nothing an order, a user or a request carries can
/// become markup (`"<td>\(order.description)</td>"` is safe as written).
struct HTML: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    private(set) var text: String

    init(stringLiteral value: String) { text = value }

    init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }

    /// Lets an interpolated literal be written where a value is expected: `HTML("<li>\(text)</li>")`.
    init(_ html: HTML) { self = html }

    private init(raw: String) { text = raw }

    static let empty = HTML(raw: "")

    var description: String { text }
    var bytes: [UInt8] { Array(text.utf8) }

    struct StringInterpolation: StringInterpolationProtocol {
        var text = ""

        init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount * 16)
        }

        mutating func appendLiteral(_ literal: String) { text += literal }
        /// Escaped.
        mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
        mutating func appendInterpolation(_ value: String?) { text += HTML.escape(value ?? "") }
        mutating func appendInterpolation(_ value: Int) { text += String(value) }
        mutating func appendInterpolation(_ value: Int64) { text += String(value) }
        /// As it is: already HTML.
        mutating func appendInterpolation(_ html: HTML) { text += html.text }
        mutating func appendInterpolation(_ parts: [HTML]) { for part in parts { text += part.text } }
    }

    /// `&`, `<`, `>`, `"` and `'` as entities: safe in text and in quoted attribute values.
    static func escape(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 == 0x22 || $0 == 0x27 }) else {
            return value
        }
        var out = ""
        out.reserveCapacity(value.utf8.count + 16)
        for character in value.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// Percent-encodes a query value (everything but unreserved characters), for URLs in attributes.
    static func queryValue(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    /// A query string from pairs, empty values left out: `?q=…&state=…`, or "" for none.
    static func query(_ pairs: [(String, String?)]) -> String {
        let parts = pairs.compactMap { name, value in
            value.flatMap { $0.isEmpty ? nil : "\(name)=\(queryValue($0))" }
        }
        return parts.isEmpty ? "" : "?" + parts.joined(separator: "&")
    }

    /// A path segment, percent-encoded the same way (an out_trade_no may hold `|` or `*`).
    static func segment(_ value: String) -> String { queryValue(value) }
}
