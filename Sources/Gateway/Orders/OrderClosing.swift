// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import WeChatPay

/// The close flow (`POST /v1/orders/{out_trade_no}/close`): closed with WeChat, or settled as paid
/// when WeChat says it was (after a verified query); an iOS order is closed locally.
public final class OrderClosing: OrderFlow {
    let context: GatewayContext
    /// ORDERPAID is confirmed by a query before anything is settled.
    let queries: OrderQueries

    /// WeChat does not close an order within 5 minutes of its creation.
    static let minimumAgeToClose: TimeInterval = 5 * 60

    /// Made by `GatewayServices`, the composition root.
    init(context: GatewayContext, queries: OrderQueries) {
        self.context = context
        self.queries = queries
    }

    /// Closes the order with WeChat; an order WeChat says is paid is settled as paid instead.
    /// With `owner` (an app token's user), another user's order is `order_not_found`.
    public func close(_ outTradeNo: String, owner: String? = nil) async throws(APIError) -> [UInt8] {
        guard let order = try await storage({ () throws(StorageError) in try await self.store.order(outTradeNo) }),
              OrderQueries.isVisible(order, to: owner)
        else {
            throw .orderNotFound
        }
        if order.state.isFinal { return try await viewJSON(order) }
        if order.channel == .apple {
            // There is nothing to close at Apple: a transaction arriving later still settles it,
            // flagged paid_after_close.
            let closed = (try? await settlement.close(order, detail: "closed on request (iOS order: closed locally)")) ?? order
            return try await viewJSON(closed)
        }
        if let problem = upstream.unconfigured(.closeOrder, for: order) { throw .apiVersionNotConfigured(problem) }
        let age = now().timeIntervalSince(order.createdAt)
        guard age >= Self.minimumAgeToClose else {
            throw .closeTooEarly(retryAfter: Int((Self.minimumAgeToClose - age).rounded(.up)))
        }
        // A close answers a final order or an error, never the order as it was: the client asked
        // for an outcome, and "still open" would read as "not paid, not closed" when WeChat may
        // hold it either.
        let outcome: UpstreamClosing
        do {
            outcome = try await upstream.closeOrder(order)
        } catch {
            guard error.notFound else {
                throw await queries.upstreamFailure(error, outTradeNo: outTradeNo, api: "closeorder")
            }
            // WeChat never had the order (unifiedorder never reached it): nothing can pay it.
            let closed = try await storage { () throws(StorageError) in
                try await self.settlement.close(order, detail: "closeorder: ORDERNOTEXIST")
            }
            return try await viewJSON(closed)
        }
        switch outcome {
        case .closed:
            let closed = try await storage { () throws(StorageError) in
                try await self.settlement.close(order, detail: "closeorder")
            }
            return try await viewJSON(closed)
        case .alreadyPaid:
            // ORDERPAID: settled only on a verified orderquery answer, never on closeorder's word.
            // When that orderquery fails, the outcome is WeChat's to confirm: the client retries.
            guard let settled = await queries.refresh(outTradeNo, reason: "closeorder answered ORDERPAID", fresh: true),
                  settled.state.isFinal
            else {
                throw .upstreamUnavailable
            }
            return try await viewJSON(settled)
        }
    }
}
