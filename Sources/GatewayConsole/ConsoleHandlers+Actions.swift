// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import JSON
import StorageCore

/// The order page's actions: recheck (orderquery now), refund (the refund service's request,
/// with the JSON route's rules) and redeliver (the outbox's redrive). Each is audited, and a
/// refusal is said in the page's language.
extension Console {
    func recheck(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await signedInPage(request, right: .recheck, action: "recheck") { (exchange) throws(APIError) in
            let outTradeNo = request.pathParameters["out_trade_no"] ?? ""
            let path = "/console/orders/" + HTML.segment(outTradeNo)
            do throws(APIError) {
                let result = try await self.services.support.recheckOrder(outTradeNo, requestedBy: "console user \(exchange.actor)")
                await self.recordAfterAction(exchange, action: "recheck", outTradeNo: outTradeNo, outcome: "ok",
                                             detail: "state \(result.order.state.rawValue)")
                return ConsoleHTTP.redirect(path + HTML.query([("recheck", result.request.map { String($0.id) } ?? "0")]))
            } catch {
                await self.recordAfterAction(exchange, action: "recheck", outTradeNo: outTradeNo, outcome: error.code)
                return try await self.renderOrder(exchange, outTradeNo, notice: ConsoleNotice(kind: .error, text: Self.refusal(error, exchange.text)),
                                                  status: error.status, audited: nil)
            }
        }
    }

    func refund(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await signedInPage(request, right: .refund, action: "refund") { (exchange) throws(APIError) in
            let outTradeNo = request.pathParameters["out_trade_no"] ?? ""
            let form = ConsoleHTTP.form(request) ?? HTTPServerQuery()
            let amountText = String((form["amount"] ?? "").prefix(32))
            let reason = form["reason"] ?? ""
            let number = form["out_refund_no"].flatMap { RefundInput.isValidOutRefundNo($0) ? $0 : nil }
            func again(_ message: String, status: Int, outcome: String) async throws(APIError) -> HTTPServerResponse {
                // The page for an order that does not exist says so (404), whatever was wrong with
                // the form: on record as that too.
                let store = self.services.context.store
                let exists = try await self.storage { () throws(StorageError) in try await store.order(outTradeNo) } != nil
                await self.recordAfterAction(exchange, action: "refund", outTradeNo: outTradeNo, target: number,
                                             outcome: exists ? outcome : "order_not_found", detail: "amount \(amountText)")
                // The form comes back with the number it was posted with (a retry stays one refund),
                // unless that number is the trouble: then a new one.
                return try await self.renderOrder(exchange, outTradeNo, notice: ConsoleNotice(kind: .error, text: message),
                                                  status: status, audited: nil, refundAmount: amountText, refundReason: reason,
                                                  refundNumber: outcome == "out_refund_no_conflict" ? nil : number)
            }
            let refunds = self.services.refunds
            guard refunds.isConfigured else {
                return try await again(exchange.text.refundsOff, status: 503, outcome: APIError.refundsNotConfigured.code)
            }
            guard let fen = ConsoleFormat.fen(fromYuan: amountText), fen > 0 else {
                return try await again(exchange.text.amountInvalid, status: 400, outcome: "invalid_request")
            }
            // The page's form always carries one; without it a repeated post would be a second refund.
            guard number != nil else {
                return try await again(exchange.text.refundNumberInvalid, status: 400, outcome: "invalid_request")
            }
            // The JSON route's own rules for the amount, the reason and the number.
            var body = JSONObjectWriter(capacity: 256)
            body.number("amount", fen)
            body.string("out_refund_no", number)
            body.string("reason", reason)
            let input: RefundInput
            do throws(APIError) {
                input = try RefundInput(json: body.finish())
            } catch {
                return try await again(error.field == "reason" ? exchange.text.reasonInvalid : error.message, status: 400,
                                       outcome: error.code)
            }
            do throws(APIError) {
                let answer = try await refunds.request(input, outTradeNo: outTradeNo)
                await self.recordAfterAction(exchange, action: "refund", outTradeNo: outTradeNo, target: answer.outRefundNo,
                                             outcome: answer.created ? "ok" : "replayed",
                                             detail: "\(fen) fen: \(input.reason); state \(answer.state)")
                return ConsoleHTTP.redirect("/console/orders/" + HTML.segment(outTradeNo)
                    + HTML.query([("refund", answer.outRefundNo)]))
            } catch {
                let left = error.code == "refund_exceeds_paid" ? await self.leftToRefund(outTradeNo) : nil
                return try await again(Self.refusal(error, exchange.text, left: left, maximumRefunds: refunds.configuration.maximumPerOrder),
                                       status: error.status, outcome: error.code)
            }
        }
    }

    /// What is left to refund of the order (its amount less every refund not REFUNDCLOSE), for a
    /// refusal's words; nil when it cannot be read.
    private func leftToRefund(_ outTradeNo: String) async -> Int? {
        guard let order = try? await services.context.store.order(outTradeNo),
              let refunds = try? await services.refunds.store.refunds(outTradeNo: outTradeNo) else { return nil }
        return max(0, order.amount - refunds.filter { $0.state != .refundClose }.reduce(0) { $0 + $1.amount })
    }

    func redeliver(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await signedInPage(request, right: .redeliver, action: "redeliver") { (exchange) throws(APIError) in
            let outTradeNo = request.pathParameters["out_trade_no"] ?? ""
            let id = request.pathParameters["id"] ?? ""
            guard let event = try await self.services.support.outboxEvent(id), event.outTradeNo == outTradeNo else {
                await self.recordAfterAction(exchange, action: "redeliver", outTradeNo: outTradeNo, target: String(id.prefix(128)),
                                             outcome: "outbox_event_not_found")
                return try await self.renderOrder(exchange, outTradeNo, notice: ConsoleNotice(kind: .error, text: exchange.text.eventNotFound),
                                                  status: 404, audited: nil)
            }
            do throws(APIError) {
                let redriven = try await self.services.support.redrive(id, requestedBy: "console user \(exchange.actor)")
                await self.recordAfterAction(exchange, action: "redeliver", outTradeNo: outTradeNo, target: id, outcome: "ok",
                                             detail: redriven.type)
                return ConsoleHTTP.redirect("/console/orders/" + HTML.segment(outTradeNo) + HTML.query([("redelivered", id)]))
            } catch {
                await self.recordAfterAction(exchange, action: "redeliver", outTradeNo: outTradeNo, target: id, outcome: error.code)
                return try await self.renderOrder(exchange, outTradeNo, notice: ConsoleNotice(kind: .error, text: Self.refusal(error, exchange.text)),
                                                  status: error.status, audited: nil)
            }
        }
    }

    /// A refusal of the order, refund, outbox or support flows in the page's language and in yuan
    /// (the API's own words are English and in fen); another is the API's message as it is. `left`
    /// is what is left to refund, in fen, when known.
    static func refusal(_ error: APIError, _ text: ConsoleText, left: Int? = nil, maximumRefunds: Int = 0) -> String {
        switch error.code {
        case "refund_exceeds_paid": text.refundExceeds(left: left.map(ConsoleFormat.yuan))
        case "out_refund_no_conflict": text.refundNumberUsed
        case "order_not_refundable": error.message.hasPrefix("an App Store purchase") ? text.appleRefundsItself : text.notRefundable
        case "refund_limit_reached": text.refundLimitReached(maximumRefunds)
        case "api_version_not_configured": text.apiVersionNotConfigured
        case "order_not_found": text.noSuchOrder
        case "outbox_event_not_dead": text.redeliverNotDead
        case "order_not_assignable": text.assignRefused
        case "no_attention_flag": text.noAttentionFlag
        default: error.message
        }
    }
}
