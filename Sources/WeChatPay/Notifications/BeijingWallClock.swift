// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// WeChat's wall-clock times (`time_end`, `success_time`, bill trade times) are Beijing time, UTC+8,
/// with no daylight saving, so a fixed offset and proleptic-Gregorian arithmetic convert them
/// exactly, without `Calendar`, `TimeZone` or a locale (which could differ between machines).
///
/// Internal on purpose: the messages module has its own public `BeijingTime`; this one only serves
/// notifications and bills and must not clash with it.
enum BeijingWallClock {
    static let offsetSeconds = 8 * 3600

    /// Parses `yyyyMMddHHmmss` (notify `time_end`). Nil unless every digit is there and the date exists.
    static func date(compact text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 14 else { return nil }
        return date(bytes, year: 0, month: 4, day: 6, hour: 8, minute: 10, second: 12)
    }

    /// Parses `yyyy-MM-dd HH:mm:ss` (refund `success_time`, bill trade times).
    static func date(dashed text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 19, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes[10] == UInt8(ascii: " "), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":")
        else { return nil }
        return date(bytes, year: 0, month: 5, day: 8, hour: 11, minute: 14, second: 17)
    }

    /// Formats as `yyyyMMddHHmmss`; sub-second parts are dropped (rounded towards the past).
    static func compact(_ date: Date) -> String {
        let (y, mo, d, h, mi, s) = components(of: date)
        return pad(y, 4) + pad(mo, 2) + pad(d, 2) + pad(h, 2) + pad(mi, 2) + pad(s, 2)
    }

    /// Formats as `yyyy-MM-dd HH:mm:ss`.
    static func dashed(_ date: Date) -> String {
        let (y, mo, d, h, mi, s) = components(of: date)
        return "\(pad(y, 4))-\(pad(mo, 2))-\(pad(d, 2)) \(pad(h, 2)):\(pad(mi, 2)):\(pad(s, 2))"
    }

    // MARK: - Arithmetic

    private static func date(
        _ bytes: [UInt8], year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int
    ) -> Date? {
        func number(_ start: Int, _ count: Int) -> Int? {
            var value = 0
            for byte in bytes[start..<start + count] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let y = number(year, 4), let mo = number(month, 2), let d = number(day, 2),
              let h = number(hour, 2), let mi = number(minute, 2), let s = number(second, 2),
              y >= 1970, (1...12).contains(mo), d >= 1, d <= daysInMonth(y, mo),
              h < 24, mi < 60, s < 60
        else { return nil }
        let seconds = daysFromCivil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offsetSeconds
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private static func components(of date: Date) -> (Int, Int, Int, Int, Int, Int) {
        let local = Int(date.timeIntervalSince1970.rounded(.down)) + offsetSeconds
        let days = local >= 0 ? local / 86_400 : (local - 86_399) / 86_400
        let secondOfDay = local - days * 86_400
        let (y, m, d) = civilFromDays(days)
        return (y, m, d, secondOfDay / 3600, secondOfDay % 3600 / 60, secondOfDay % 60)
    }

    private static func daysInMonth(_ year: Int, _ month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days: exact for the proleptic Gregorian calendar.
    private static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
