// SPDX-License-Identifier: Apache-2.0
import Gateway
import Testing

/// The battery's crash hook reads its table from GATEWAY_CRASH_POINT (in a fault-injection build).
struct BatteryCrashPointTests {
    @Test func theCrashPointTableTakesKnownPointsWithProbabilitiesAndRefusesAnythingElse() {
        #expect(CrashPoint.parse("notify_committed:0.05, mid_sweep:1") == ["notify_committed": 0.05, "mid_sweep": 1])
        #expect(CrashPoint.parse("mid_sweep:0.5,mid_sweep:0.25") == ["mid_sweep": 0.25])
        for malformed in ["", ",", "outbox_delivered:2", "mid_sweep:-1", "mid_sweep", "mid_sweep:abc", ":0.5",
                          "notify_comitted:0.5", "mid_sweep:0.5,typo:0.1"] {
            #expect(CrashPoint.parse(malformed) == nil, "\(malformed)")
        }
    }
}
