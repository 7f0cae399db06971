// SPDX-License-Identifier: Apache-2.0

/// Bills write amounts in yuan as decimal text; the rest of the system counts whole fen. The
/// conversion is exact decimal-string arithmetic: `Double("0.29") * 100` is 28.999999999999996,
/// so no floating point is used anywhere.
///
/// ```swift
/// BillAmount.fen(fromYuan: "5.76")   // 576
/// BillAmount.fen(fromYuan: "0.015")  // nil: not a whole number of fen
/// BillAmount.yuan(fromFen: -100)     // "-1.00"
/// ```
public enum BillAmount {
    /// The value of `text` in fen, or nil unless it is `[-]digits[.digits]` denoting a whole number
    /// of fen. Extra decimals are accepted only when they are zeros (`"5.760"` is 576). A leading
    /// minus is accepted (reversals and adjustments can be negative) and kept; `"-0.00"` is 0.
    /// At most 13 integer digits, so no value can overflow.
    public static func fen(fromYuan text: String) -> Int? {
        scaled(text, decimals: 2)
    }

    /// `fen` as yuan with exactly two decimals, the way bills write it.
    public static func yuan(fromFen fen: Int) -> String {
        format(fen, decimals: 2)
    }

    /// Parses `[-]digits[.digits]` into an integer count of 10^-`decimals` units; nil when more
    /// non-zero decimals are given than the scale holds, or on any other character.
    static func scaled(_ text: String, decimals: Int) -> Int? {
        var bytes = Substring(text).utf8[...]
        var negative = false
        if bytes.first == UInt8(ascii: "-") {
            negative = true
            bytes = bytes.dropFirst()
        }
        let integerPart = bytes.prefix { $0 != UInt8(ascii: ".") }
        var fractionPart = bytes[integerPart.endIndex...]
        if !fractionPart.isEmpty {
            fractionPart = fractionPart.dropFirst()
            // "5." and ".5" are not how WeChat writes amounts; refuse rather than guess.
            guard !fractionPart.isEmpty else { return nil }
        }
        guard !integerPart.isEmpty, integerPart.count <= 13 else { return nil }
        var value = 0
        for byte in integerPart {
            guard let digit = digit(byte) else { return nil }
            value = value * 10 + digit
        }
        var index = 0
        for byte in fractionPart {
            guard let digit = digit(byte) else { return nil }
            if index < decimals {
                value = value * 10 + digit
            } else if digit != 0 {
                return nil
            }
            index += 1
        }
        while index < decimals {
            value *= 10
            index += 1
        }
        return negative ? -value : value
    }

    /// Writes an integer count of 10^-`decimals` units as `[-]digits.decimals`.
    static func format(_ value: Int, decimals: Int) -> String {
        precondition((1...9).contains(decimals), "amounts have 1 to 9 decimals")
        // Digits are written backwards into a fixed buffer: this runs for every amount cell of a
        // rendered bill, and string concatenation dominated rendering time.
        return String(unsafeUninitializedCapacity: 32) { buffer in
            var magnitude = value.magnitude
            var index = buffer.count
            var written = 0
            while written < decimals || magnitude > 0 || written == decimals {
                if written == decimals {
                    index -= 1
                    buffer[index] = UInt8(ascii: ".")
                }
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                written += 1
            }
            if value < 0 {
                index -= 1
                buffer[index] = UInt8(ascii: "-")
            }
            let length = buffer.count - index
            for offset in 0..<length { buffer[offset] = buffer[index + offset] }
            return length
        }
    }

    private static func digit(_ byte: UInt8) -> Int? {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? Int(byte - UInt8(ascii: "0")) : nil
    }
}

/// A service fee (手续费) as bills write it: yuan with five decimals, e.g. `0.01000` or `0.00600`.
///
/// Fees are accrued per transaction at a rate (0.6 %) and are finer than a fen, so they are kept
/// exactly as a count of 0.00001 yuan (a thousandth of a fen) rather than rounded on parsing.
/// `roundedToFen()` states the one rounding rule when a whole-fen figure is needed.
public struct BillFee: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The fee in units of 0.00001 yuan: 1 fen is 1,000 milli-fen.
    public var milliFen: Int

    public init(milliFen: Int) {
        self.milliFen = milliFen
    }

    /// Parses `[-]digits[.up to five digits]`; more decimals are accepted only when they are zeros.
    public init?(yuan text: String) {
        guard let value = BillAmount.scaled(text, decimals: 5) else { return nil }
        milliFen = value
    }

    /// The fee as bills write it, with five decimals.
    public var yuan: String { BillAmount.format(milliFen, decimals: 5) }

    /// The fee in whole fen, rounding half away from zero (四舍五入): 0.00500 yuan is 1 fen,
    /// 0.00499 yuan is 0 fen, -0.00500 yuan is -1 fen.
    public func roundedToFen() -> Int {
        let magnitude = (milliFen.magnitude + 500) / 1000
        return milliFen < 0 ? -Int(magnitude) : Int(magnitude)
    }

    public static let zero = BillFee(milliFen: 0)

    public static func + (lhs: BillFee, rhs: BillFee) -> BillFee { BillFee(milliFen: lhs.milliFen + rhs.milliFen) }
    public static func < (lhs: BillFee, rhs: BillFee) -> Bool { lhs.milliFen < rhs.milliFen }

    public var description: String { yuan }
}
