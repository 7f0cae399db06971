// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A store shared by several gateway instances that hands out the right to ask WeChat about an
/// open order (orderquery) to one instance per period, so clients waiting on the same order on
/// several instances cause one orderquery per poll interval in all, not one per instance.
///
/// Within one instance the gateway's single-flight already joins concurrent queries; this is the
/// same promise across instances. Implementations: `PostgresOrderStore`.
public protocol OrderQueryClaims: Sendable {
    /// Claims the order's query for the period up to `until`: true for exactly one caller among
    /// those asking while the previous claim is still running (its `until` after `now`), false for
    /// the rest, and false when the order is unknown or no longer open.
    func claimQuery(_ outTradeNo: String, now: Date, until: Date) async throws(StorageError) -> Bool
}
