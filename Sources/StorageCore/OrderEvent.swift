// SPDX-License-Identifier: Apache-2.0
import Foundation

/// One line of an order's timeline. The events table is append-only: events are never changed or
/// removed, so the timeline is evidence of what happened.
public struct OrderEvent: Sendable, Hashable {
    /// Assigned by the store, increasing in commit order; timelines are ordered by it.
    public var id: Int64
    public var outTradeNo: String
    public var at: Date
    /// A short machine-readable kind, e.g. `created`, `notify_received`, `state_changed`.
    public var kind: String
    /// Human-readable detail. Never put secrets or raw request bodies here.
    public var detail: String

    public init(id: Int64, outTradeNo: String, at: Date, kind: String, detail: String) {
        self.id = id
        self.outTradeNo = outTradeNo
        self.at = at
        self.kind = kind
        self.detail = detail
    }

    /// The kind the store writes itself, once per effective `transition`; its detail names the
    /// previous and the new state, e.g. `NOTPAY -> SUCCESS: notify`.
    public static let stateChangedKind = "state_changed"
}

/// An event to append: everything but the id the store assigns.
public struct NewOrderEvent: Sendable, Hashable {
    public var kind: String
    public var detail: String
    public var at: Date

    public init(kind: String, detail: String, at: Date) {
        self.kind = kind
        self.detail = detail
        self.at = at
    }
}
