// SPDX-License-Identifier: Apache-2.0

/// The bookkeeping times `OrderStore.touch` sets.
public enum OrderTimestamp: Sendable, Hashable {
    /// A verified notify for the order arrived (whatever it changed).
    case lastNotify
    /// We asked WeChat about the order (`orderquery`).
    case lastQueried
}
