// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import Synchronization

/// The pace of password checks for a console name that many addresses are failing on: at most one
/// check per `interval` in this process, each attempt waiting for its turn rather than being
/// refused, as long as its turn comes within `maximumWait` (otherwise it is told when to try
/// again). It slows a guessing campaign spread over many addresses, which the lock by name and
/// address cannot see, without ever locking the name: the person it belongs to, signing in from an
/// address the name has used before, is not paced at all (`Console.login`).
///
/// Per process, like the app users' limits: several instances each keep their own pace.
public final class LoginPace: Sendable {
    public let interval: Duration
    public let maximumWait: Duration
    /// Each paced name's next free turn; a turn in the past is free now (and pruned).
    private let turns = Mutex<[String: ContinuousClock.Instant]>([:])

    public init(interval: Duration = .seconds(3), maximumWait: Duration = .seconds(15)) {
        self.interval = interval
        self.maximumWait = maximumWait
    }

    /// What an attempt at a paced name does.
    enum Turn: Equatable {
        /// Wait this long, then check the password.
        case wait(Duration)
        /// No turn within `maximumWait`: try again after this many seconds.
        case later(seconds: Int)
    }

    /// Takes the next turn for `name`, or none when it would come later than `maximumWait`.
    func take(_ name: String, now: ContinuousClock.Instant = .now) -> Turn {
        turns.withLock { turns in
            // Names whose turns have all passed hold nothing: the map holds only names paced now.
            if turns.count > 64 { turns = turns.filter { $0.value > now } }
            let turn = max(now, turns[name] ?? now)
            let wait = turn - now
            guard wait <= maximumWait else {
                let (seconds, attoseconds) = (wait - maximumWait).components
                return .later(seconds: max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0)))
            }
            turns[name] = turn + interval
            return .wait(wait)
        }
    }
}
