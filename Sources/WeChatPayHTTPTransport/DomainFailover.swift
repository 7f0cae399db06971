// SPDX-License-Identifier: Apache-2.0

/// Which WeChat Pay host to call: the primary (`api.mch.weixin.qq.com`) or the cross-city backup
/// (`api2.mch.weixin.qq.com`), as the official Java SDK's `WXPayDomainSimpleImpl` decides it.
///
/// A pure state machine: no clock, no I/O. The transport asks ``chooseHost(now:)`` before each call
/// and reports how the call went with ``record(_:on:)``.
///
/// The rules (see docs/wechatpay-v2.md §7.2):
/// - The primary is *good* while it has at most ``Policy/maxConnectFailures`` connect failures and
///   at most ``Policy/maxDNSFailures`` DNS failures; while it is good, every call goes to it.
/// - When it turns bad, calls go to the backup, and the switch time is remembered.
/// - Within ``Policy/retryPrimaryAfter`` (3 minutes) of the switch, calls stay on the backup unless
///   the backup is bad too and its weighted bad count (connect + 5 × DNS + other / 4) is not lower
///   than the primary's; then the primary is the lesser evil.
/// - After that time the primary is tried again, with both hosts' counters cleared.
/// - A host's third success in a row clears its error counters; any failure ends the streak.
///
/// One deliberate difference from the Java SDK: a refused connection counts as a connect failure
/// (Java counts only connect *timeouts*), because a refused port is as clear a sign that the host
/// is unreachable, and it is what a dead load balancer in front of a live IP produces.
///
/// ```swift
/// var failover = DomainFailover()
/// let host = failover.chooseHost(now: .now)
/// // … call host …
/// failover.record(.connectFailure, on: host)
/// ```
public struct DomainFailover: Sendable, Hashable {
    /// A WeChat Pay host.
    public enum Host: String, Sendable, Hashable {
        case primary, backup
    }

    /// How one call to a host ended, as far as host health is concerned.
    public enum Outcome: Sendable, Hashable {
        /// The host answered (any HTTP status).
        case success
        /// The connection was refused or timed out before it was established.
        case connectFailure
        /// The host name did not resolve.
        case dnsFailure
        /// Anything else after connecting: reset, timeout while waiting for the answer, TLS failure.
        case otherFailure
    }

    /// The thresholds, with the official SDK's values as defaults.
    public struct Policy: Sendable, Hashable {
        /// A host with more connect failures than this is bad. Default 2.
        public var maxConnectFailures: Int
        /// A host with more DNS failures than this is bad. Default 2.
        public var maxDNSFailures: Int
        /// How long after switching to the backup the primary is tried again. Default 3 minutes.
        public var retryPrimaryAfter: Duration

        /// The official SDK's values by default.
        public init(maxConnectFailures: Int = 2, maxDNSFailures: Int = 2, retryPrimaryAfter: Duration = .seconds(180)) {
            self.maxConnectFailures = maxConnectFailures
            self.maxDNSFailures = maxDNSFailures
            self.retryPrimaryAfter = retryPrimaryAfter
        }
    }

    private struct Statistics: Sendable, Hashable {
        var successStreak = 0
        var connectFailures = 0
        var dnsFailures = 0
        var otherFailures = 0

        func isGood(_ policy: Policy) -> Bool {
            connectFailures <= policy.maxConnectFailures && dnsFailures <= policy.maxDNSFailures
        }

        /// The SDK's weighting: an unresolvable name is the strongest sign of an outage.
        var badCount: Int { connectFailures + 5 * dnsFailures + otherFailures / 4 }
    }

    private enum State: Sendable, Hashable {
        case onPrimary
        case switchedToBackup(at: ContinuousClock.Instant)
    }

    /// The thresholds in use.
    public let policy: Policy
    private var state = State.onPrimary
    private var primary = Statistics()
    private var backup = Statistics()

    /// A machine on the primary with clean counters.
    public init(policy: Policy = .init()) {
        self.policy = policy
    }

    /// The host for the next call. Mutating: it remembers when it first left the primary and
    /// clears the counters when the primary's turn comes back.
    public mutating func chooseHost(now: ContinuousClock.Instant) -> Host {
        if primary.isGood(policy) {
            // The primary recovered (a success streak from calls still in flight): a later
            // outage gets a full backup period of its own.
            state = .onPrimary
            return .primary
        }
        switch state {
        case .onPrimary:
            state = .switchedToBackup(at: now)
            return .backup
        case .switchedToBackup(let switchedAt) where now - switchedAt < policy.retryPrimaryAfter:
            if backup.isGood(policy) || backup.badCount < primary.badCount { return .backup }
            return .primary
        case .switchedToBackup:
            state = .onPrimary
            primary = Statistics()
            backup = Statistics()
            return .primary
        }
    }

    /// Records how a call to `host` ended.
    public mutating func record(_ outcome: Outcome, on host: Host) {
        switch host {
        case .primary: Self.apply(outcome, to: &primary)
        case .backup: Self.apply(outcome, to: &backup)
        }
    }

    private static func apply(_ outcome: Outcome, to statistics: inout Statistics) {
        switch outcome {
        case .success:
            if statistics.successStreak >= 2 {
                statistics.connectFailures = 0
                statistics.dnsFailures = 0
                statistics.otherFailures = 0
            } else {
                statistics.successStreak += 1
            }
        case .connectFailure:
            statistics.successStreak = 0
            statistics.connectFailures += 1
        case .dnsFailure:
            statistics.successStreak = 0
            statistics.dnsFailures += 1
        case .otherFailure:
            statistics.successStreak = 0
            statistics.otherFailures += 1
        }
    }
}
