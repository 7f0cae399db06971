// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The migrations a store applied as it opened: what start-up logs, since an upgrade may rebuild an
/// index over every order and the operator should see why the start took its time.
public struct SchemaUpgrade: Sendable, Hashable {
    /// The schema version found (0: a new database).
    public var from: Int
    /// The version left (the program's latest).
    public var to: Int
    /// The migrations applied, as "13 paid orders by user, with what entitlements read", in order.
    public var applied: [String]
    /// How long they took, the transaction's commit included.
    public var duration: Duration

    public init(from: Int, to: Int, applied: [String], duration: Duration) {
        self.from = from
        self.to = to
        self.applied = applied
        self.duration = duration
    }

    /// The duration in seconds with millisecond precision, for a log line.
    public var seconds: String {
        let (whole, attoseconds) = duration.components
        return String(format: "%.3f", Double(whole) + Double(attoseconds) / 1e18)
    }
}
