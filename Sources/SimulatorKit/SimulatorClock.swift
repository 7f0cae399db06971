// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// A simulator's sense of time. Tests cross WeChat's 5-minute close rule, the 2-hour prepay
/// lifetime, the 24-hour notify schedule or Apple's 72-hour one in seconds by scaling or advancing it.
public protocol SimulatorClock: Sendable {
    /// The simulated current time.
    func now() -> Date
}

extension SimulatorClock {
    /// Real seconds to wait for `interval` simulated seconds to pass, capped so that a clock that is
    /// advanced by hand is noticed soon.
    public func realWait(for interval: TimeInterval, cap: TimeInterval = 0.05) -> TimeInterval {
        let scale = (self as? ScaledClock)?.scale ?? 1
        return max(0, min(interval / scale, cap))
    }
}

/// Simulated time that runs `scale` times faster than real time and can jump forward.
///
/// `scale` 1 is wall-clock time (demo mode); 3,600 turns WeChat's 24-hour notify schedule into 24
/// seconds. `advance(by:)` moves simulated time forward at once; the notify scheduler polls the clock,
/// so due retries go out right after.
public final class ScaledClock: SimulatorClock {
    private struct State {
        var origin: Date  // simulated time at `realOrigin`
        var realOrigin: ContinuousClock.Instant
        var scale: Double
    }

    private let state: Mutex<State>
    private let didAdvance: (@Sendable (Date) -> Void)?

    /// - Parameters:
    ///   - start: the simulated time now (default: the real time now).
    ///   - scale: how many simulated seconds pass per real second (default 1; 0 freezes time, so
    ///     only `advance(by:)` moves it).
    ///   - didAdvance: told the simulated time after each `advance(by:)` (demo mode keeps it, so a
    ///     restart carries on from there).
    public init(start: Date = Date(), scale: Double = 1, didAdvance: (@Sendable (Date) -> Void)? = nil) {
        precondition(scale >= 0, "time scale must not be negative")
        state = Mutex(State(origin: start, realOrigin: .now, scale: scale))
        self.didAdvance = didAdvance
    }

    public func now() -> Date {
        state.withLock { Self.simulatedNow($0) }
    }

    public var scale: Double { state.withLock { $0.scale } }

    /// Moves simulated time forward by `interval` seconds.
    public func advance(by interval: TimeInterval) {
        let now = state.withLock { state in
            state.origin += interval
            return Self.simulatedNow(state)
        }
        didAdvance?(now)
    }

    private static func simulatedNow(_ state: State) -> Date {
        let elapsed = ContinuousClock.now - state.realOrigin
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        return state.origin + seconds * state.scale
    }
}

/// What both control panels' `POST …/clock/advance` does with its body (`{"seconds": S}`, S from 0
/// to 400 days): the clock moved and its new time, or why not.
public enum ClockAdvance: Sendable {
    case advanced(now: Date)
    /// The simulator runs on a clock that cannot be moved (not a `ScaledClock`).
    case notAdjustable
    /// No body, not JSON, or seconds out of range.
    case invalidSeconds

    public static let maximumSeconds: Double = 400 * 86400

    public init(_ body: [UInt8], clock: any SimulatorClock) {
        struct Body: Decodable { var seconds: Double }
        guard let clock = clock as? ScaledClock else {
            self = .notAdjustable
            return
        }
        guard let seconds = (try? JSONDecoder().decode(Body.self, from: Data(body)))?.seconds,
              seconds >= 0, seconds <= Self.maximumSeconds else {
            self = .invalidSeconds
            return
        }
        clock.advance(by: seconds)
        self = .advanced(now: clock.now())
    }
}
