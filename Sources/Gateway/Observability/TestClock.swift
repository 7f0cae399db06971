// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// TEST-ONLY: the reliability battery's shifted clock (`scripts/battery/run T15`, RELIABILITY.md),
/// compiled in only when the build defines `GATEWAY_FAULT_INJECTION`, as `CrashPoint` is.
///
/// In such a build, `GATEWAY_TEST_CLOCK_FILE=path` makes the gateway's clock the system clock plus
/// the number of seconds the file holds. The battery writes the file each time it moves the App
/// Store simulator's clock (`POST /appstore-simulator/clock/advance`), so that a year of renewals,
/// lapses and reconciler reads happens on one calendar in minutes, across SIGKILLs (a restarted
/// process reads the file again). In every other build the variable is ignored and `serve` warns
/// once: nothing in the production binary can move its clock.
public enum TestClock {
    #if GATEWAY_FAULT_INJECTION
    public static let isCompiledIn = true

    /// The clock for `path`: the system clock plus the file's offset, read again at most every
    /// 20 ms (an unreadable or malformed file keeps the offset last read, 0 at first).
    public static func shifted(offsetFile path: String) -> @Sendable () -> Date {
        let cache = Mutex<(offset: TimeInterval, readAt: ContinuousClock.Instant?)>((0, nil))
        return {
            let offset = cache.withLock { cache in
                let now = ContinuousClock.now
                if let readAt = cache.readAt, now - readAt < .milliseconds(20) { return cache.offset }
                if let text = try? String(contentsOfFile: path, encoding: .utf8),
                   let offset = TimeInterval(text.trimmingCharacters(in: .whitespacesAndNewlines)), offset.isFinite {
                    cache.offset = offset
                }
                cache.readAt = now
                return cache.offset
            }
            return Date().addingTimeInterval(offset)
        }
    }
    #else
    public static let isCompiledIn = false
    #endif

    /// The gateway's clock for a configuration: the shifted one when this build has it and
    /// `GATEWAY_TEST_CLOCK_FILE` names a file, else the system clock.
    public static func now(offsetFile path: String?) -> @Sendable () -> Date {
        #if GATEWAY_FAULT_INJECTION
        if let path { return shifted(offsetFile: path) }
        #endif
        return { Date() }
    }
}
