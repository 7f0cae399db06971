// SPDX-License-Identifier: Apache-2.0
import Foundation
import SimulatorKit

/// Demo mode's one clock, kept across restarts. `clock/advance` moves it ahead of the wall clock,
/// and the demo database is written on that calendar (an order created "next month" expires next
/// month, a subscription renewed ahead ends ahead); a restart that went back to the wall clock
/// would bring back a refunded subscription and leave orders unpayable until the wall clock caught
/// up. So every advance writes how far ahead the clock is to a file beside the database
/// (`GatewayConfiguration.demoClockPath`), and the next start begins that far ahead.
enum DemoClockFile {
    /// The clock for `path`: as far ahead of now as the file says (0 without a readable file).
    static func clock(path: String) -> ScaledClock {
        let offset = read(path) ?? 0
        return ScaledClock(start: Date().addingTimeInterval(offset)) { simulated in
            write(simulated.timeIntervalSinceNow, to: path)
        }
    }

    /// The offset the file holds: whole or fractional seconds, never negative (the clock only
    /// moves forward); nil for a missing or unreadable file.
    static func read(_ path: String) -> TimeInterval? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let seconds = TimeInterval(text.trimmingCharacters(in: .whitespacesAndNewlines)),
              seconds.isFinite, seconds >= 0
        else { return nil }
        return seconds
    }

    /// Writes the offset whole (a temporary file renamed over the old one), so a start never reads
    /// half of it. A failure only costs the next restart its place in time.
    static func write(_ offset: TimeInterval, to path: String) {
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(String(max(0, offset)).utf8)) else { return }
        _ = rename(temporary, path)
    }
}
