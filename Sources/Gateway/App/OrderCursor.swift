// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import JSON
import StorageCore

/// `limit` and `cursor` of a paginated order list (`GET /v1/me/orders`, the support lookup by
/// `user_id`), and the `next_cursor` it answers. The cursor is opaque to clients: base64url of
/// the last order's creation time (milliseconds) and out_trade_no. A made-up cursor can only move
/// the start within the same user's orders, so it needs no signature.
public struct OrderPageRequest: Sendable, Hashable {
    public var limit: Int
    public var after: OrderPageKey?

    /// Parses the query values; `limit` defaults to `defaultLimit` and may be 1 to `maximum`.
    public init(limit: String?, cursor: String?, defaultLimit: Int, maximum: Int) throws(APIError) {
        if let limit {
            guard let value = Int(limit), (1...maximum).contains(value), limit.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                throw .invalid("limit", "limit must be an integer from 1 to \(maximum)")
            }
            self.limit = value
        } else {
            self.limit = defaultLimit
        }
        if let cursor {
            guard let key = Self.key(cursor) else { throw .invalid("cursor", "cursor must be a next_cursor this API gave") }
            after = key
        }
    }

    /// The `next_cursor` for continuing after `key`.
    public static func cursor(_ key: OrderPageKey) -> String {
        let milliseconds = Int64((key.createdAt.timeIntervalSince1970 * 1000).rounded())
        return Base64.encode(Array("\(milliseconds):\(key.outTradeNo)".utf8), .urlUnpadded)
    }

    private static func key(_ cursor: String) -> OrderPageKey? {
        guard cursor.utf8.count <= 128, let bytes = Base64.decode(cursor.utf8, .urlUnpadded),
              let text = String(validating: bytes, as: UTF8.self)
        else { return nil }
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let milliseconds = Int64(parts[0]), milliseconds >= 0,
              CreateOrderInput.isValidOutTradeNo(String(parts[1]))
        else { return nil }
        return OrderPageKey(createdAt: Date(timeIntervalSince1970: Double(milliseconds) / 1000), outTradeNo: String(parts[1]))
    }
}

extension OrderQueries {
    /// Whether an app user may see `order`: only their own (an order without a user is nobody's).
    /// Everything else answers `order_not_found`, like an order that does not exist.
    static func isVisible(_ order: OrderRecord, to owner: String?) -> Bool {
        guard let owner else { return true }
        return sameUser(order.userID, owner)
    }

    /// `{"orders":[…],"next_cursor":…}`: one page of `user`'s orders, newest first; `next_cursor`
    /// only when there are more.
    func userOrders(_ user: String, page: OrderPageRequest) async throws(APIError) -> [UInt8] {
        let found = try await storage { () throws(StorageError) in
            try await self.store.orders(userID: user, limit: page.limit, after: page.after)
        }
        var orders: [[UInt8]] = []
        // As GET shows each: a paid order with its refunds.
        for order in found.orders { orders.append(try await viewJSON(order)) }
        var writer = JSONObjectWriter(capacity: 64 + found.orders.count * 320)
        writer.string("next_cursor", found.next.map(OrderPageRequest.cursor))
        writer.array("orders", orders)
        return writer.finish()
    }
}
