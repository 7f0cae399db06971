// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Where a page of a user's orders starts: the last order of the previous page, by its place in
/// the order newest first (`createdAt` descending, then `outTradeNo` descending).
///
/// A keyset, not an offset: a page after this key holds exactly the orders that sort after it,
/// whatever was inserted meanwhile, so paging never repeats or skips an order that existed
/// throughout (a new order sorts first and shows up on a fresh first page).
public struct OrderPageKey: Sendable, Hashable {
    public var createdAt: Date
    public var outTradeNo: String

    public init(createdAt: Date, outTradeNo: String) {
        self.createdAt = createdAt
        self.outTradeNo = outTradeNo
    }

    /// The key of `order`, to continue after it.
    public init(after order: OrderRecord) {
        self.init(createdAt: order.createdAt, outTradeNo: order.outTradeNo)
    }
}

/// One page of a user's orders, newest first; `next` is the key to ask for the following page,
/// nil on the last one.
public struct OrderPage: Sendable, Hashable {
    public var orders: [OrderRecord]
    public var next: OrderPageKey?

    public init(orders: [OrderRecord], next: OrderPageKey?) {
        self.orders = orders
        self.next = next
    }

    /// The page made from up to `limit + 1` rows read after the key: the extra row only says that
    /// there is more.
    public init(rows: [OrderRecord], limit: Int) {
        if rows.count > limit {
            let page = Array(rows.prefix(limit))
            self.init(orders: page, next: page.last.map(OrderPageKey.init(after:)))
        } else {
            self.init(orders: rows, next: nil)
        }
    }
}
