// SPDX-License-Identifier: Apache-2.0
import Gateway
import Testing

/// The battery's test-only crash hook reads its table from GATEWAY_CRASH_POINT.
struct BatteryCrashPointTests {
    @Test func theCrashPointTableKeepsWellFormedPairsAndDropsTheRest() {
        #expect(CrashPoint.parse(nil).isEmpty)
        #expect(CrashPoint.parse("").isEmpty)
        #expect(CrashPoint.parse("notify_committed:0.05, mid_sweep:1") == ["notify_committed": 0.05, "mid_sweep": 1])
        #expect(CrashPoint.parse("outbox_delivered:2,x:-1,y,z:abc,:0.5").isEmpty)
        #expect(CrashPoint.parse("mid_sweep:0.5,mid_sweep:0.25") == ["mid_sweep": 0.25])
    }
}
