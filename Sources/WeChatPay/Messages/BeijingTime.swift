// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Conversions between `Date` and the wall-clock strings WeChat Pay uses, which are always
/// Beijing time (UTC+8, no daylight saving).
///
/// Pure arithmetic on a fixed +8 hour offset: no time-zone database, no calendar, no clock, so
/// the results are identical on every machine whatever its `TZ`. Parsing is strict: exactly the
/// documented digits and separators, real calendar dates (leap years included), no leap seconds.
///
/// ```swift
/// BeijingTime.format(Date(timeIntervalSince1970: 0))   // "19700101080000"
/// BeijingTime.parse("20141030133525")                  // 2014-10-30 05:35:25 UTC
/// ```
public enum BeijingTime {
    /// Beijing time is UTC+8 all year.
    public static let offsetSeconds = 8 * 3600

    /// `yyyyMMddHHmmss` (`time_start`, `time_expire`, `time_end`). Sub-second parts are dropped
    /// (rounded towards the past); dates outside years 0001–9999 are clamped to that range.
    public static func format(_ date: Date) -> String {
        let t = components(of: date)
        return render([(t.year, 4), (t.month, 2), (t.day, 2), (t.hour, 2), (t.minute, 2), (t.second, 2)], separators: "")
    }

    /// Parses `yyyyMMddHHmmss`; nil for anything else (wrong length, non-digits, impossible dates).
    public static func parse(_ text: String) -> Date? {
        parse(text, .compact)
    }

    /// `yyyyMMdd` (`bill_date`): the Beijing calendar day `date` falls on.
    public static func formatDay(_ date: Date) -> String {
        let t = components(of: date)
        return render([(t.year, 4), (t.month, 2), (t.day, 2)], separators: "")
    }

    /// Parses `yyyyMMdd` as midnight Beijing time; nil when it is not a real date.
    public static func parseDay(_ text: String) -> Date? {
        parse(text, .day)
    }

    /// `yyyy-MM-dd HH:mm:ss`, the form of `refund_success_time_$n` and the refund notify's `success_time`.
    public static func formatWithSeparators(_ date: Date) -> String {
        let t = components(of: date)
        return render(
            [(t.year, 4), (t.month, 2), (t.day, 2), (t.hour, 2), (t.minute, 2), (t.second, 2)],
            separators: "-- ::")
    }

    /// Parses `yyyy-MM-dd HH:mm:ss`; nil for anything else.
    public static func parseWithSeparators(_ text: String) -> Date? {
        parse(text, .separated(UInt8(ascii: " ")))
    }

    /// RFC 3339 with milliseconds and the explicit `+08:00` offset, e.g.
    /// `2026-11-30T14:23:43.339+08:00`: how the gateway's API shows instants, in the same zone as
    /// WeChat's own times so `expires_at` reads like the `time_expire` that was sent.
    public static func formatRFC3339(_ date: Date) -> String {
        let t = components(of: date)
        let interval = date.timeIntervalSince1970
        let millis = interval.isFinite ? min(999, Int(((interval - interval.rounded(.down)) * 1000).rounded())) : 0
        return render(
            [(t.year, 4), (t.month, 2), (t.day, 2), (t.hour, 2), (t.minute, 2), (t.second, 2), (millis, 3)],
            separators: "--T::.") + "+08:00"
    }

    // MARK: - Calendar periods

    /// `date` moved by whole months and then whole days on Beijing's calendar, keeping the time of
    /// day (to the millisecond). A day the new month does not have clamps to its last day:
    /// 2027-01-31 + 1 month is 2027-02-28, 2028-01-31 + 1 month is 2028-02-29, and 2028-02-29 +
    /// 12 months is 2029-02-28. Beijing has had no daylight saving since 1991, so a day is always
    /// 86,400 seconds here. Years outside 0001–9999 are not meaningful and clamp like `format`.
    public static func adding(months: Int, days: Int, to date: Date) -> Date {
        let interval = date.timeIntervalSince1970
        guard interval.isFinite else { return date }
        let whole = interval.rounded(.down)
        let fraction = interval - whole
        let t = components(of: date)
        let monthIndex = t.year * 12 + (t.month - 1) + months
        let year = monthIndex.floorDivided(by: 12)
        let month = monthIndex - year * 12 + 1
        let day = min(t.day, daysIn(month: month, year: year))
        let dayNumber = daysFromCivil(year: year, month: month, day: day) + Int64(days)
        let seconds = dayNumber * 86_400 + Int64(t.hour * 3600 + t.minute * 60 + t.second) - Int64(offsetSeconds)
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    // MARK: - Arithmetic

    private struct Components {
        var year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0
    }

    /// Seconds since 1970 of 0001-01-01T00:00:00+08:00 and 9999-12-31T23:59:59+08:00.
    private static let earliest: Int64 = daysFromCivil(year: 1, month: 1, day: 1) * 86_400 - Int64(offsetSeconds)
    private static let latest: Int64 = daysFromCivil(year: 9999, month: 12, day: 31) * 86_400 + 86_399 - Int64(offsetSeconds)

    private static func components(of date: Date) -> Components {
        let interval = date.timeIntervalSince1970
        var seconds: Int64
        if interval.isNaN || interval <= Double(earliest) {
            seconds = earliest
        } else if interval >= Double(latest) {
            seconds = latest
        } else {
            seconds = Int64(interval.rounded(.down))
        }
        seconds += Int64(offsetSeconds)
        let days = seconds.floorDivided(by: 86_400)
        let secondOfDay = Int(seconds - days * 86_400)
        let civil = civilFromDays(days)
        return Components(
            year: civil.year, month: civil.month, day: civil.day,
            hour: secondOfDay / 3600, minute: secondOfDay / 60 % 60, second: secondOfDay % 60)
    }

    private static func render(_ parts: [(value: Int, width: Int)], separators: String) -> String {
        let separators = Array(separators.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(19)
        for (index, part) in parts.enumerated() {
            if index > 0, index - 1 < separators.count { bytes.append(separators[index - 1]) }
            var divisor = 1
            for _ in 1..<part.width { divisor *= 10 }
            var value = part.value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / divisor))
                value %= divisor
                divisor /= 10
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The three forms read: `yyyyMMddHHmmss`, `yyyyMMdd`, and `yyyy-MM-dd?HH:mm:ss` with the given
    /// byte between the date and the time.
    private enum Layout {
        case compact
        case day
        case separated(UInt8)

        var length: Int {
            switch self {
            case .compact: 14
            case .day: 8
            case .separated: 19
            }
        }
    }

    // Every v2 notify's `time_end` and v3 notify's `success_time` is read here: straight from the
    // string's bytes, with no array or string made on the way (they were a third of reading a v3
    // transaction).
    private static func parse(_ text: String, _ layout: Layout) -> Date? {
        if let parsed = text.utf8.withContiguousStorageIfAvailable({ parse($0, layout) }) { return parsed }
        return Array(text.utf8).withUnsafeBufferPointer { parse($0, layout) }
    }

    /// `yyyy-MM-dd?HH:mm:ss` in `bytes`, `?` being `dateTimeSeparator`: RFC 3339's date and time
    /// (`T`) read as Beijing wall time, before its offset is applied.
    public static func parseWithSeparators(_ bytes: UnsafeBufferPointer<UInt8>, dateTimeSeparator: UInt8) -> Date? {
        parse(bytes, .separated(dateTimeSeparator))
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>, _ layout: Layout) -> Date? {
        guard bytes.count == layout.length else { return nil }
        /// The decimal number of `width` ASCII digits at `start`, nil when one is not a digit.
        func number(_ start: Int, _ width: Int) -> Int? {
            var value = 0
            for index in start..<(start + width) {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
            }
            return value
        }
        let fields: (year: Int?, month: Int?, day: Int?, hour: Int?, minute: Int?, second: Int?)
        switch layout {
        case .compact: fields = (number(0, 4), number(4, 2), number(6, 2), number(8, 2), number(10, 2), number(12, 2))
        case .day: fields = (number(0, 4), number(4, 2), number(6, 2), 0, 0, 0)
        case .separated(let between):
            guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == between,
                  bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":") else { return nil }
            fields = (number(0, 4), number(5, 2), number(8, 2), number(11, 2), number(14, 2), number(17, 2))
        }
        guard let year = fields.year, let month = fields.month, let day = fields.day, let hour = fields.hour,
              let minute = fields.minute, let second = fields.second,
              year >= 1, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              hour < 24, minute < 60, second < 60
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
        return Date(timeIntervalSince1970: Double(seconds))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian calendar): exact for
    // every date, with no table and no Calendar lookup.
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day))
    }
}

extension BinaryInteger {
    /// Division rounding towards negative infinity, so times before 1970 land on the right day.
    fileprivate func floorDivided(by divisor: Self) -> Self {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
