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
    /// The furthest ahead a demo's clock is carried: a thousand years, far past any demo (one
    /// `clock/advance` moves at most 400 days) and far short of a date no store can keep. A file
    /// saying more was not written by the gateway.
    static let maximumOffset: TimeInterval = 1_000 * 365 * 86_400

    /// What the file at `path` says.
    enum Reading: Equatable {
        case absent
        /// Seconds ahead of the wall clock, 0 to `maximumOffset`.
        case ahead(TimeInterval)
        /// Not a number of seconds in that range: the clock starts at the wall clock.
        case unreadable
    }

    /// The clock for `reading` of `path`: as far ahead of now as it says (0 when absent or
    /// unreadable); each advance writes the file again, and `failed` hears of a write that did
    /// not happen (the advance then holds until the next restart only).
    static func clock(path: String, reading: Reading, failed: @escaping @Sendable () -> Void) -> ScaledClock {
        let offset: TimeInterval = if case .ahead(let seconds) = reading { seconds } else { 0 }
        return ScaledClock(start: Date().addingTimeInterval(offset)) { simulated in
            if !write(simulated.timeIntervalSinceNow, to: path) { failed() }
        }
    }

    static func read(_ path: String) -> Reading {
        guard FileManager.default.fileExists(atPath: path) else { return .absent }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let seconds = TimeInterval(text.trimmingCharacters(in: .whitespacesAndNewlines)),
              seconds.isFinite, (0...maximumOffset).contains(seconds)
        else { return .unreadable }
        return .ahead(seconds)
    }

    /// Writes the offset whole (a temporary file renamed over the old one), so a start never reads
    /// half of it; false when it could not (the path is a directory, say).
    @discardableResult
    static func write(_ offset: TimeInterval, to path: String) -> Bool {
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(String(max(0, offset)).utf8)) else { return false }
        guard rename(temporary, path) == 0 else {
            _ = unlink(temporary)
            return false
        }
        return true
    }
}
