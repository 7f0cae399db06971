// SPDX-License-Identifier: Apache-2.0
import Foundation

/// RFC 3339 timestamps with an explicit offset, as the API returns them: Beijing time (+08:00),
/// the zone WeChat's own times are in, so `expires_at` reads the same as the `time_expire` sent.
enum Timestamp {
    static let beijingOffset = 8 * 3600

    /// `2026-11-30T13:45:07.123+08:00`
    static func rfc3339(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970 + Double(beijingOffset)
        let whole = Int(seconds.rounded(.down))
        let millis = Int(((seconds - Double(whole)) * 1000).rounded(.down))
        let days = whole >= 0 ? whole / 86400 : (whole - 86399) / 86400
        let secondOfDay = whole - days * 86400
        let (y, m, d) = civil(days: days)
        func pad(_ v: Int, _ w: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, w - s.count)) + s
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay % 3600 / 60, 2)):"
            + "\(pad(secondOfDay % 60, 2)).\(pad(millis, 3))+08:00"
    }

    private static func civil(days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
