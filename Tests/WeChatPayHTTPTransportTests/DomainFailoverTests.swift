// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPayHTTPTransport

/// The failover rules stepped through without I/O: events in, host choices out.
struct DomainFailoverTests {
    private let start = ContinuousClock.now

    private func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

    private func record(_ outcome: DomainFailover.Outcome, _ times: Int, on host: DomainFailover.Host, in failover: inout DomainFailover) {
        for _ in 0..<times { failover.record(outcome, on: host) }
    }

    @Test func aFreshMachineUsesThePrimary() {
        var failover = DomainFailover()
        #expect(failover.chooseHost(now: at(0)) == .primary)
        #expect(failover.chooseHost(now: at(1000)) == .primary)
    }

    @Test func twoConnectFailuresAreToleratedAndTheThirdSwitchesToTheBackup() {
        var failover = DomainFailover()
        record(.connectFailure, 2, on: .primary, in: &failover)
        #expect(failover.chooseHost(now: at(0)) == .primary)
        failover.record(.connectFailure, on: .primary)
        #expect(failover.chooseHost(now: at(0)) == .backup)
        #expect(failover.chooseHost(now: at(10)) == .backup)
    }

    @Test func threeDNSFailuresSwitchToTheBackup() {
        var failover = DomainFailover()
        record(.dnsFailure, 2, on: .primary, in: &failover)
        #expect(failover.chooseHost(now: at(0)) == .primary)
        failover.record(.dnsFailure, on: .primary)
        #expect(failover.chooseHost(now: at(0)) == .backup)
    }

    @Test func otherFailuresNeverSwitchHosts() {
        var failover = DomainFailover()
        record(.otherFailure, 100, on: .primary, in: &failover)
        #expect(failover.chooseHost(now: at(0)) == .primary)
    }

    @Test func theBackupIsKeptForThreeMinutesThenThePrimaryIsTriedWithCleanCounters() {
        var failover = DomainFailover()
        record(.connectFailure, 3, on: .primary, in: &failover)
        #expect(failover.chooseHost(now: at(0)) == .backup)  // the switch happens here
        failover.record(.success, on: .backup)
        #expect(failover.chooseHost(now: at(179)) == .backup)
        #expect(failover.chooseHost(now: at(180)) == .primary)
        // The counters were cleared: a single new failure does not switch again.
        failover.record(.connectFailure, on: .primary)
        #expect(failover.chooseHost(now: at(181)) == .primary)
        record(.connectFailure, 2, on: .primary, in: &failover)
        #expect(failover.chooseHost(now: at(182)) == .backup)
        // And the new backup period starts from the new switch.
        #expect(failover.chooseHost(now: at(182 + 179)) == .backup)
        #expect(failover.chooseHost(now: at(182 + 180)) == .primary)
    }

    @Test func whenTheBackupIsWorseThanThePrimaryThePrimaryIsUsedBeforeThreeMinutes() {
        var failover = DomainFailover()
        record(.connectFailure, 3, on: .primary, in: &failover)  // primary bad count 3
        #expect(failover.chooseHost(now: at(0)) == .backup)
        record(.dnsFailure, 3, on: .backup, in: &failover)  // backup bad count 15
        #expect(failover.chooseHost(now: at(1)) == .primary)
    }

    @Test func aBadBackupIsStillPreferredWhileItIsLessBadThanThePrimary() {
        var failover = DomainFailover()
        record(.dnsFailure, 3, on: .primary, in: &failover)  // primary bad count 15
        #expect(failover.chooseHost(now: at(0)) == .backup)
        record(.connectFailure, 3, on: .backup, in: &failover)  // backup bad count 3
        #expect(failover.chooseHost(now: at(1)) == .backup)
    }

    @Test func aThirdSuccessInARowClearsTheErrorCounters() {
        var failover = DomainFailover()
        record(.connectFailure, 2, on: .primary, in: &failover)
        record(.success, 3, on: .primary, in: &failover)
        record(.connectFailure, 2, on: .primary, in: &failover)
        #expect(failover.chooseHost(now: at(0)) == .primary)  // 2, not 4
        failover.record(.connectFailure, on: .primary)
        #expect(failover.chooseHost(now: at(0)) == .backup)
    }

    @Test func twoSuccessesThenAFailureDoNotClearTheCounters() {
        var failover = DomainFailover()
        record(.connectFailure, 2, on: .primary, in: &failover)
        record(.success, 2, on: .primary, in: &failover)
        failover.record(.connectFailure, on: .primary)
        #expect(failover.chooseHost(now: at(0)) == .backup)
    }

    @Test func aPrimaryThatRecoversWhileOnTheBackupIsUsedAgainAtOnce() {
        var failover = DomainFailover()
        record(.connectFailure, 3, on: .primary, in: &failover)
        #expect(failover.chooseHost(now: at(0)) == .backup)
        // Calls still in flight to the primary come back fine.
        record(.success, 3, on: .primary, in: &failover)
        #expect(failover.chooseHost(now: at(1)) == .primary)
    }

    @Test func thePolicyThresholdsAreConfigurable() {
        var failover = DomainFailover(policy: .init(maxConnectFailures: 0, maxDNSFailures: 0, retryPrimaryAfter: .seconds(10)))
        failover.record(.connectFailure, on: .primary)
        #expect(failover.chooseHost(now: at(0)) == .backup)
        #expect(failover.chooseHost(now: at(10)) == .primary)
    }
}
