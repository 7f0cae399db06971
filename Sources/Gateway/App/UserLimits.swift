// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import Synchronization

/// The per-user limits of app tokens, kept in this process (each gateway instance limits on its
/// own): creates and iOS transaction reports per minute, and `wait` queries held open at once. A
/// client or support token is never limited here: the backend is trusted to pace itself.
final class UserLimits: Sendable {
    let createsPerMinute: Int
    let reportsPerMinute: Int
    let maximumWaits: Int
    private let creates = Mutex(MinuteWindows())
    private let reports = Mutex(MinuteWindows())
    private let waits = Mutex<[String: [ContinuousClock.Instant]]>([:])

    init(createsPerMinute: Int, reportsPerMinute: Int = 30, maximumWaits: Int) {
        self.createsPerMinute = createsPerMinute
        self.reportsPerMinute = reportsPerMinute
        self.maximumWaits = maximumWaits
    }

    /// Counts one create for `user`, or says how many seconds until one more is allowed: at most
    /// `createsPerMinute` in any 60 seconds (a sliding window, so a burst cannot be followed by
    /// another right after the minute turns).
    func admitCreate(_ user: String, now: ContinuousClock.Instant = .now) -> Int? {
        creates.withLock { $0.admit(user, now: now, limit: createsPerMinute) }
    }

    /// Counts one iOS transaction report for `user`, as `admitCreate` counts creates: each report
    /// may cost a call to the App Store, and transaction ids are sequential, so a user guessing
    /// them is held to `reportsPerMinute`.
    func admitReport(_ user: String, now: ContinuousClock.Instant = .now) -> Int? {
        reports.withLock { $0.admit(user, now: now, limit: reportsPerMinute) }
    }

    /// Reserves one open wait for `user` until `deadline`; nil (with the seconds until the
    /// earliest of theirs ends) when they hold `maximumWaits` already. `release` the reservation
    /// when the wait answers.
    func reserveWait(_ user: String, until deadline: ContinuousClock.Instant) -> Result<WaitReservation, APIError> {
        let now = ContinuousClock.now
        return waits.withLock { waits in
            var held = waits[user] ?? []
            if held.count >= maximumWaits {
                let soonest = held.min() ?? now
                return .failure(.rateLimited(retryAfter: Self.seconds(soonest - now),
                                             "this user already holds \(maximumWaits) waiting queries"))
            }
            held.append(deadline)
            waits[user] = held
            return .success(WaitReservation(limits: self, user: user, deadline: deadline))
        }
    }

    fileprivate func release(_ user: String, deadline: ContinuousClock.Instant) {
        waits.withLock { waits in
            guard var held = waits[user], let index = held.firstIndex(of: deadline) else { return }
            held.remove(at: index)
            waits[user] = held.isEmpty ? nil : held
        }
    }

    /// Open waits of `user` (for tests and metrics).
    func openWaits(_ user: String) -> Int { waits.withLock { $0[user]?.count ?? 0 } }

    static func seconds(_ duration: Duration) -> Int {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
        return max(1, Int(seconds.rounded(.up)))
    }
}

/// One open wait counted against its user; released once.
struct WaitReservation: Sendable {
    fileprivate let limits: UserLimits
    fileprivate let user: String
    fileprivate let deadline: ContinuousClock.Instant

    func release() { limits.release(user, deadline: deadline) }
}

/// The admission times of the last minute, per user. Users whose window emptied are dropped in a
/// sweep every 1,024 admissions, so memory follows the users active in the last minute.
private struct MinuteWindows {
    var windows: [String: [ContinuousClock.Instant]] = [:]
    var admissionsSinceSweep = 0

    mutating func admit(_ user: String, now: ContinuousClock.Instant, limit: Int) -> Int? {
        let windowStart = now - .seconds(60)
        admissionsSinceSweep += 1
        if admissionsSinceSweep >= 1024 {
            admissionsSinceSweep = 0
            windows = windows.filter { $0.value.last.map { $0 > windowStart } ?? false }
        }
        var times = windows[user] ?? []
        if let stale = times.firstIndex(where: { $0 > windowStart }) {
            times.removeFirst(stale)
        } else {
            times.removeAll()
        }
        if times.count >= limit {
            windows[user] = times
            return UserLimits.seconds(times[times.count - limit] + .seconds(60) - now)
        }
        times.append(now)
        windows[user] = times
        return nil
    }
}
