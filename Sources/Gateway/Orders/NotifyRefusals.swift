// SPDX-License-Identifier: Apache-2.0
import Observability
import WeChatPay

/// How a refused notify (a payment's or a refund's, API v2 or v3) is told: counted by reason, and
/// logged at most once a second per reason with the number of refusals not logged since
/// (`LogThrottle`), because anyone can send a notify and a flood must cost a counter increment,
/// not a log line each. The payment and refund notify flows each keep one.
struct NotifyRefusals: Sendable {
    /// By reason; the fixed labels (the outcome) are the caller's.
    let counts: MetricFamily<Counter>
    /// The log line's message, e.g. "payment notify rejected".
    let message: String
    let logger: Logger
    private let log = LogThrottle()

    init(counts: MetricFamily<Counter>, message: String, logger: Logger) {
        self.counts = counts
        self.message = message
        self.logger = logger
    }

    /// Counts a refused notify, and logs it unless `quietly` (WeChat's signature probes).
    func count(_ reason: String, quietly: Bool = false) {
        counts.labelled(reason).increment()
        if !quietly, let suppressed = log.admit(reason) {
            logger.warning(message, ["reason": reason, "suppressed": String(suppressed)])
        }
    }

    /// Refuses a v2 notify without writing anything: counted and logged, and WeChat's FAIL reply.
    func reply(_ reason: String) -> [UInt8] {
        count(reason)
        return NotifyReply.fail("rejected").bytes
    }
}
