// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

/// How long one membership purchase lasts: an ISO 8601 duration of one calendar unit — `PnD`,
/// `PnW`, `PnM` or `PnY` (`P1M`, `P3M`, `P1Y`…) — counted on Beijing's calendar.
///
/// Months and years are calendar months: a pass from 10:00 on March 5 ends at 10:00 on April 5,
/// however many days March has. A day the end month lacks clamps to its last day (from January 31,
/// `P1M` ends on February 28, or 29 in a leap year), and a pass that starts where another ended
/// counts from that end, so two stacked `P1M` passes from January 31 end on March 28 (29), not 31:
/// each pass adds its period to the date it starts from, never to the first pass's start.
/// Combined durations (`P1Y6M`) and times (`PT1H`) are refused: no membership is sold that way.
public struct MembershipPeriod: Sendable, Hashable, CustomStringConvertible {
    /// Calendar months (a year is 12).
    public let months: Int
    /// Days (a week is 7).
    public let days: Int
    /// As written in the catalog, e.g. `P1M`.
    public let text: String

    public var description: String { text }

    /// The largest count each unit takes: ten years whichever unit says it.
    static let limits: [UInt8: (max: Int, months: Int, days: Int)] = [
        UInt8(ascii: "D"): (3660, 0, 1), UInt8(ascii: "W"): (520, 0, 7),
        UInt8(ascii: "M"): (120, 1, 0), UInt8(ascii: "Y"): (10, 12, 0),
    ]

    /// Parses `PnD`, `PnW`, `PnM` or `PnY` with n from 1 (no sign, no leading zero) up to ten
    /// years' worth; nil for anything else.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count >= 3, bytes.count <= 6, bytes[0] == UInt8(ascii: "P"),
              let unit = bytes.last, let limit = Self.limits[unit] else { return nil }
        let digits = bytes[1..<(bytes.count - 1)]
        guard let first = digits.first, first != UInt8(ascii: "0"),
              digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        let count = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard count <= limit.max else { return nil }
        months = count * limit.months
        days = count * limit.days
        self.text = text
    }

    /// The end of one period that starts at `start` (Beijing calendar, month-end clamped).
    public func end(from start: Date) -> Date {
        BeijingTime.adding(months: months, days: days, to: start)
    }
}
