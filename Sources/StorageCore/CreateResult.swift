// SPDX-License-Identifier: Apache-2.0

/// What `OrderStore.create` did. Creation is idempotent on `outTradeNo`, like an idempotency key:
/// the first call stores the order, a replay with the same parameters gets the stored order back,
/// and a replay with other parameters is refused.
public enum CreateResult: Sendable, Hashable {
    /// This call stored the order (exactly one caller per `outTradeNo` gets this).
    case created(OrderRecord)
    /// The order already existed with the same `parametersDigest`: a safe retry.
    case existing(OrderRecord)
    /// The order already existed with a different `parametersDigest`: the stored order, untouched.
    case conflict(OrderRecord)

    /// The stored order, whichever case.
    public var record: OrderRecord {
        switch self {
        case .created(let record), .existing(let record), .conflict(let record): record
        }
    }
}
