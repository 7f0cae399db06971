// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// At most one log line per key per interval, and how many were held back meanwhile: for lines
/// an outsider can trigger at will (a forged notify), so a flood costs a counter increment, not
/// a write to the log per request. The metric beside the line keeps the exact count.
///
/// ```swift
/// if let suppressed = throttle.admit(reason) {
///     logger.warning("payment notify rejected", ["reason": reason, "suppressed": String(suppressed)])
/// }
/// ```
///
/// Keys must come from a bounded set (outcome labels), never from the request.
public final class LogThrottle: Sendable {
    private struct Window {
        var written: ContinuousClock.Instant
        var suppressed: Int
    }

    private let interval: Duration
    private let windows = Mutex<[String: Window]>([:])

    public init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// Whether a line for `key` may be written at `now`: the number of lines suppressed for `key`
    /// since the last one written (0 for the first), or nil when this one is suppressed too.
    public func admit(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        windows.withLock { windows in
            if let window = windows[key], now - window.written < interval {
                windows[key]?.suppressed += 1
                return nil
            }
            let suppressed = windows[key]?.suppressed ?? 0
            windows[key] = Window(written: now, suppressed: 0)
            return suppressed
        }
    }
}
