// SPDX-License-Identifier: Apache-2.0
import Observability
import StorageCore

/// What the store's answer to a create means for its caller, decided once for every channel
/// (WeChat orders, App Store orders), and counted by outcome (`wxpay_orders_created_total`): a
/// new order, an identical replay, or a conflict — other parameters under the same
/// `out_trade_no`, or a replay of an order already final, which would read as a fresh one.
struct CreateOutcomes: Sendable {
    let created: Counter
    let replayed: Counter
    let conflicted: Counter

    /// - Parameter channel: the `channel` label: a WeChat app's kind (`app`, `miniprogram`,
    ///   `official_account`, `native`, `h5`) or `apple`.
    init(_ registry: MetricsRegistry, channel: String) {
        func counter(_ outcome: String) -> Counter {
            registry.makeCounter(OrderInstruments.ordersCreated, ["outcome": outcome, "channel": channel])
        }
        created = counter("created")
        replayed = counter("replayed")
        conflicted = counter("conflict")
    }

    /// The order to go on with and whether this call stored it; a conflict is counted and thrown.
    func resolve(_ result: CreateResult) throws(APIError) -> (order: OrderRecord, created: Bool) {
        switch result {
        case .conflict:
            conflicted.increment()
            throw .conflict("this out_trade_no was used with different parameters")
        case .created(let order):
            created.increment()
            return (order, true)
        case .existing(let order):
            guard !order.state.isFinal else {
                conflicted.increment()
                throw .conflict("the order with this out_trade_no is already \(order.state.rawValue)")
            }
            replayed.increment()
            return (order, false)
        }
    }
}
