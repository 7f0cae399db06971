// SPDX-License-Identifier: Apache-2.0

/// Runs `body` `rounds` times and returns the median duration, so one slow round on a shared
/// machine does not decide the figure.
func medianDuration(rounds: Int, _ body: () throws -> Void) rethrows -> Duration {
    var durations: [Duration] = []
    let clock = ContinuousClock()
    for _ in 0..<rounds {
        let start = clock.now
        try body()
        durations.append(clock.now - start)
    }
    durations.sort()
    return durations[durations.count / 2]
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

func formatted(_ value: Double, decimals: Int = 1) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    return String(rounded)
}
