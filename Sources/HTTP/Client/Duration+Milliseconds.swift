// SPDX-License-Identifier: Apache-2.0

extension Duration {
    /// Whole milliseconds, rounded up and at least 1: libcurl reads a timeout of 0 as "no timeout",
    /// so a tiny positive duration must not collapse to it.
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        let milliseconds = seconds.multipliedReportingOverflow(by: 1000)
        guard !milliseconds.overflow else { return Int.max }
        let fraction = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Swift.max(1, Int(clamping: milliseconds.partialValue + fraction))
    }
}
