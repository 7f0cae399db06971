// SPDX-License-Identifier: Apache-2.0

/// The value rules of the v2 parameter table (参数规定) that requests are checked against, so the
/// client refuses what WeChat would refuse and the simulator refuses it the same way.
enum FieldFormat: Sendable {
    /// Any text of at most `maxLength` characters.
    case text(maxLength: Int)
    /// Merchant-chosen numbers (`out_trade_no`, `out_refund_no`): `[0-9A-Za-z_-|*@]`.
    case merchantNumber(maxLength: Int)
    /// WeChat-issued identifiers (`transaction_id`, `refund_id`) and nonces: ASCII letters and digits.
    case alphanumeric(maxLength: Int)
    /// An IPv4 or IPv6 address as text.
    case ipAddress
    /// An http(s) URL without a query string, at most 256 characters (`notify_url`).
    case notifyURL
    /// A three-letter ISO 4217 code (`fee_type`).
    case currency

    func accepts(_ value: String) -> Bool {
        switch self {
        case .text(let maxLength):
            return value.count <= maxLength
        case .merchantNumber(let maxLength):
            return value.utf8.count <= maxLength && value.utf8.allSatisfy(MerchantNumber.allows)
        case .alphanumeric(let maxLength):
            return value.utf8.count <= maxLength && value.utf8.allSatisfy(Self.isAlphanumeric)
        case .ipAddress:
            // Shape only: the simulator and WeChat do not care which host it names.
            let bytes = value.utf8
            let hexOrDot = bytes.allSatisfy { Self.isHexDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ":") }
            return bytes.count <= 64 && hexOrDot && (bytes.contains(UInt8(ascii: ".")) || bytes.contains(UInt8(ascii: ":")))
        case .notifyURL:
            let lower = value.lowercased()
            let scheme = lower.hasPrefix("https://") || lower.hasPrefix("http://")
            let printable = value.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
            return value.utf8.count <= 256 && scheme && printable && !value.contains("?")
                && lower != "https://" && lower != "http://"
        case .currency:
            return value.utf8.count == 3 && value.utf8.allSatisfy { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        }
    }

    static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || ((byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z"))
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || ((byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "f"))
    }
}
