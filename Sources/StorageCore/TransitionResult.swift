// SPDX-License-Identifier: Apache-2.0

/// What `OrderStore.transition` did.
public enum TransitionResult: Sendable, Hashable {
    /// This call changed the state (and wrote the event and the outbox row). Among concurrent
    /// duplicates exactly one gets this; only it may announce the change.
    case changed(OrderRecord)
    /// Nothing changed: the order is already in the target state, is in a state not allowed as a
    /// source, or its amount differs from the expected one. The record shows which.
    case unchanged(OrderRecord)
    /// No order with that `outTradeNo`.
    case notFound

    /// The order after the call, if it exists.
    public var record: OrderRecord? {
        switch self {
        case .changed(let record), .unchanged(let record): record
        case .notFound: nil
        }
    }

    /// Whether this call made the change.
    public var didChange: Bool {
        if case .changed = self { true } else { false }
    }
}
