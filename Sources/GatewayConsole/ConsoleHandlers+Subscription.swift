// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import StorageCore

/// An App Store membership's subscription on the order page (ConsolePages+Subscription.swift) and
/// support's Extend a Subscription Renewal Date from there, audited as `extend_subscription`.
extension Console {
    /// The subscription an App Store order paid into, when its product is a catalog membership:
    /// every order its original transaction credited. Nil for anything else.
    func subscription(of order: OrderRecord) async throws(APIError) -> ConsolePages.Subscription? {
        guard order.channel == .apple, let original = order.originalTransactionID, services.iap != nil,
              let appleProductID = order.appleProductID,
              let product = services.context.catalog.catalog.product(appleProductID: appleProductID),
              case .membership = product.kind
        else { return nil }
        let (payments, states) = try await storage { () throws(StorageError) in
            (try await self.services.context.store.orders(originalTransactionID: original),
             try await self.services.context.store.subscriptions(originalTransactionIDs: [original]))
        }
        return ConsolePages.Subscription(
            originalTransactionID: original,
            payments: payments.sorted { ($0.paidAt ?? $0.createdAt, $0.outTradeNo) < ($1.paidAt ?? $1.createdAt, $1.outTradeNo) },
            state: states.first)
    }

    func extendSubscription(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await signedInPage(request, right: .extendSubscription, action: "extend_subscription") { (exchange) throws(APIError) in
            let outTradeNo = request.pathParameters["out_trade_no"] ?? ""
            let form = ConsoleHTTP.form(request) ?? HTTPServerQuery()
            let order = try await storage { () throws(StorageError) in try await self.services.context.store.order(outTradeNo) }
            var subscription: ConsolePages.Subscription?
            if let order { subscription = try await self.subscription(of: order) }
            let asked = "days \((form["days"] ?? "").prefix(8)), reason \((form["reason"] ?? "").prefix(8))"
            func answer(_ notice: ConsoleNotice, status: Int, outcome: String, detail: String) async throws(APIError)
                -> HTTPServerResponse
            {
                await self.recordAfterAction(exchange, action: "extend_subscription", outTradeNo: outTradeNo,
                                             target: subscription.map { "original_transaction_id=\($0.originalTransactionID)" },
                                             outcome: outcome, detail: detail)
                return try await self.renderOrder(exchange, outTradeNo, notice: notice, status: status, audited: nil)
            }
            guard let iap = self.services.iap, let subscription else {
                return try await answer(ConsoleNotice(kind: .error, text: exchange.text.notASubscription), status: 404,
                                        outcome: "subscription_not_found", detail: asked)
            }
            guard let days = Int(form["days"] ?? ""), let reason = Int(form["reason"] ?? ""),
                  let requestID = UUID(uuidString: form["request_id"] ?? "")
            else {
                return try await answer(ConsoleNotice(kind: .error, text: exchange.text.extendInvalid), status: 400,
                                        outcome: "invalid_request", detail: asked)
            }
            do throws(APIError) {
                let note = try await iap.extendSubscription(originalTransactionID: subscription.originalTransactionID,
                                                            days: days, reason: reason, requestID: requestID)
                return try await answer(ConsoleNotice(kind: .success, text: exchange.text.extended, detail: note), status: 200,
                                        outcome: "ok", detail: note)
            } catch {
                return try await answer(ConsoleNotice(kind: .error, text: error.message), status: error.status,
                                        outcome: error.code, detail: asked)
            }
        }
    }
}
