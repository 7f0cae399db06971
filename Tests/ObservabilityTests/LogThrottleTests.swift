// SPDX-License-Identifier: Apache-2.0
import Observability
import Testing

struct LogThrottleTests {
    @Test func oneLineASecondPerKeyEachSayingHowManyWereHeldBack() {
        let throttle = LogThrottle(interval: .seconds(1))
        let start = ContinuousClock.now
        #expect(throttle.admit("bad_sign", now: start) == 0)
        #expect(throttle.admit("bad_sign", now: start + .milliseconds(10)) == nil)
        #expect(throttle.admit("bad_sign", now: start + .milliseconds(999)) == nil)
        // Another key has its own window.
        #expect(throttle.admit("unknown_order", now: start + .milliseconds(500)) == 0)
        #expect(throttle.admit("bad_sign", now: start + .seconds(1)) == 2)
        #expect(throttle.admit("bad_sign", now: start + .milliseconds(1500)) == nil)
        #expect(throttle.admit("bad_sign", now: start + .seconds(5)) == 1)
        #expect(throttle.admit("unknown_order", now: start + .seconds(5)) == 0)
    }
}
