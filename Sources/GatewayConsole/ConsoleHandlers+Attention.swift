// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import StorageCore

/// The attention list's actions in the console: an App Store purchase's page, assigning an
/// unclaimed one to its user's order, and marking an order's attention flags handled — each the
/// service's own call (`IAPService.assign`, `SupportDesk.handleAttention`) with its audit entry.
extension Console {

    func purchasePage(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await signedInPage(request, right: .view, action: "view_purchase") { (exchange) throws(APIError) in
            try await self.renderPurchase(exchange, request.pathParameters["transaction_id"] ?? "", notice: nil,
                                          audited: "view_purchase")
        }
    }

    /// An App Store purchase from the ledger, with the assign form while nobody holds it (404 for
    /// an id the ledger does not have, recorded too).
    func renderPurchase(_ exchange: Exchange, _ transactionID: String, notice: ConsoleNotice?, status: Int = 200,
                        audited: String?, outTradeNo: String = "", reason: String = "", takesOver: Bool = false)
        async throws(APIError) -> HTTPServerResponse
    {
        let id = String(transactionID.prefix(32))
        let iap = services.iap
        var row: AppleTransactionRecord?
        if let iap, !id.isEmpty, id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            row = try await storage { () throws(StorageError) in try await iap.store.appleTransaction(id) }
        }
        guard let row else {
            if let audited { try await record(exchange, action: audited, target: id, outcome: "apple_transaction_not_found") }
            return ConsoleHTTP.html(ConsolePages.message(exchange.chrome, title: exchange.text.notFoundTitle,
                                                         exchange.text.purchaseNotFound), status: 404)
        }
        if let audited { try await record(exchange, action: audited, outTradeNo: row.outTradeNo, target: id, outcome: "ok") }
        return ConsoleHTTP.html(ConsolePages.purchase(exchange.chrome, ConsolePages.Purchase(
            row: row, notice: notice, outTradeNo: outTradeNo, reason: reason, takesOver: takesOver)), status: status)
    }

    /// Assigns an unclaimed purchase to the order a person names, with their reason: the same
    /// credit as a verified purchase of that order (`IAPService.assign`), and its audit entry.
    func assign(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await signedInPage(request, right: .assign, action: "assign_transaction") { (exchange) throws(APIError) in
            let id = String((request.pathParameters["transaction_id"] ?? "").prefix(32))
            let form = ConsoleHTTP.form(request) ?? HTTPServerQuery()
            let outTradeNo = String((form["out_trade_no"] ?? "").trimmingCharacters(in: .whitespaces).prefix(64))
            let reason = String((form["reason"] ?? "").prefix(400))
            let takesOver = form["takes_over"] == "1"
            guard let iap = self.services.iap else {
                return try await self.renderPurchase(exchange, id, notice: nil, audited: "assign_transaction")
            }
            do throws(APIError) {
                let assignment = try await iap.assign(transactionID: id, to: outTradeNo, reason: reason,
                                                      by: "console user \(exchange.actor)", takingOver: takesOver)
                let order = assignment.order
                await self.recordAfterAction(
                    exchange, action: "assign_transaction", outTradeNo: order.outTradeNo, target: id,
                    outcome: assignment.replayed ? "replayed" : "ok",
                    detail: "reason: \(reason.trimmingCharacters(in: .whitespacesAndNewlines)); credited to \(order.userID ?? "?") "
                        + "for \(order.appleProductID ?? "?")" + (takesOver ? ", taking the subscription over" : ""))
                return ConsoleHTTP.redirect("/console/orders/" + HTML.segment(order.outTradeNo) + HTML.query([("assigned", id)]))
            } catch {
                await self.recordAfterAction(exchange, action: "assign_transaction", outTradeNo: outTradeNo.isEmpty ? nil : outTradeNo,
                                             target: id, outcome: error.code, detail: "reason: \(reason)")
                let message = error.field == "reason" ? exchange.text.supportReasonInvalid : Self.refusal(error, exchange.text)
                // Why it cannot be assigned is the API's own sentence, shown under the page's words.
                let detail = error.code == "order_not_assignable" ? error.message : nil
                return try await self.renderPurchase(exchange, id, notice: ConsoleNotice(kind: .error, text: message, detail: detail),
                                                     status: error.status, audited: nil, outTradeNo: outTradeNo, reason: reason,
                                                     takesOver: takesOver)
            }
        }
    }

    /// Marks the order's attention flags handled, with the person's reason, and its audit entry.
    func handleAttention(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await signedInPage(request, right: .handleAttention, action: "attention_handled") { (exchange) throws(APIError) in
            let outTradeNo = request.pathParameters["out_trade_no"] ?? ""
            let reason = String((ConsoleHTTP.form(request)?["reason"] ?? "").prefix(400))
            do throws(APIError) {
                let done = try await self.services.support.handleAttention(outTradeNo, flags: nil, reason: reason,
                                                                             by: "console user \(exchange.actor)")
                await self.recordAfterAction(
                    exchange, action: "attention_handled", outTradeNo: outTradeNo, outcome: "ok",
                    detail: "reason: \(reason.trimmingCharacters(in: .whitespacesAndNewlines)); handled: "
                        + done.handled.map(\.rawValue).joined(separator: ",") + "; flags now "
                        + done.order.flags.map(\.rawValue).sorted().joined(separator: ","))
                return ConsoleHTTP.redirect("/console/orders/" + HTML.segment(outTradeNo) + HTML.query([("handled", "1")]))
            } catch {
                await self.recordAfterAction(exchange, action: "attention_handled", outTradeNo: outTradeNo, outcome: error.code,
                                             detail: "reason: \(reason)")
                let message = error.field == "reason" ? exchange.text.supportReasonInvalid : Self.refusal(error, exchange.text)
                return try await self.renderOrder(exchange, outTradeNo, notice: ConsoleNotice(kind: .error, text: message),
                                                  status: error.status, audited: nil, handleReason: reason)
            }
        }
    }
}
