// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A call to WeChat about one order that instances sharing a store make one at a time.
public enum ClaimedCall: String, Sendable, Hashable, CaseIterable {
    /// A wait's orderquery: one per order per poll interval across all instances.
    case orderQuery
    /// unifiedorder for an order's prepay_id: identical creates reaching several instances cause one.
    case unifiedOrder
}

/// A store shared by several gateway instances that hands out, per order and kind of call, the
/// right to call WeChat for a period: so clients waiting on one order on several instances cause
/// one orderquery per poll interval in all, and identical creates spread over instances one
/// unifiedorder. Within one instance the gateway's single-flight already joins concurrent calls;
/// this is the same promise across instances. Implementations: `PostgresOrderStore`.
public protocol OrderCallClaims: Sendable {
    /// Claims the call for the period up to `until`: true for exactly one caller among those asking
    /// while no claim runs (a claim runs while its `until` is after `now`), false for the rest, and
    /// false when the order is unknown or no longer open.
    func claimCall(_ call: ClaimedCall, for outTradeNo: String, now: Date, until: Date) async throws(StorageError) -> Bool

    /// Gives up a claim early (the call failed: another instance may try at once). `until` is the
    /// claim's own end, so a claim that ran out and was taken by someone else is left alone.
    /// Announced to the other instances (`OrderChangeFeed`) so their waiting callers look again.
    func releaseCall(_ call: ClaimedCall, for outTradeNo: String, claimedUntil until: Date) async throws(StorageError)
}
