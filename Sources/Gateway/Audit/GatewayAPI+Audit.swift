// SPDX-License-Identifier: Apache-2.0
import HTTP
import JSON
import StorageCore
import Synchronization

extension GatewayAPI {
    /// Appends the audit entry of a call made with a support token: which token (its
    /// fingerprint), which route, which order, from where, and how it ended. Answers the response
    /// to send instead when a read could not be recorded (500: a look off the record is not
    /// given); an action already done keeps its answer, and the failure is logged and counted.
    func auditSupportCall(_ request: HTTPServerRequest, caller: Caller, outcome: String, note: String = "") async
        -> HTTPServerResponse?
    {
        let audit = services.audit
        let parameters = request.pathParameters
        let query = request.query
        // A support action's reason (and the order it names) is what its entry must keep.
        let body = request.method == .post || request.method == .put ? (try? CreateOrderInput.members(of: request.body)) : nil
        let reason = [body?["reason"]?.stringValue.map { "reason: \($0)" }, note.isEmpty ? nil : note]
            .compactMap { $0 }.joined(separator: "; ")
        var (action, outTradeNo, target): (String, String?, String?) =
            switch request.routeTemplate {
            case "/v1/support/orders":
                // Whatever identifier the look-up was by is its target (the order's own number is its
                // order), with the channel filters that narrowed it, or listed a channel without one.
                ("api_lookup", query["out_trade_no"],
                 Self.lookupTarget(
                    ["transaction_id", "user_id", "apple_transaction_id", "original_transaction_id", "apple_order_id"]
                        .lazy.compactMap { name in query[name].map { "\(name)=\(String($0.prefix(96)))" } }.first,
                    filters: ["app", "trade_type"].compactMap { name in query[name].map { "\(name)=\(String($0.prefix(32)))" } }))
            case "/v1/support/attention": ("api_attention", nil, query["flag"].map { "flag=\(String($0.prefix(64)))" })
            case "/v1/support/orders/{out_trade_no}/recheck": ("api_recheck", parameters["out_trade_no"], nil)
            case "/v1/support/outbox/{id}/redrive": ("api_redrive", nil, parameters["id"])
            case "/v1/support/apple-transactions/{transaction_id}/assign":
                ("api_assign_transaction", body?["out_trade_no"]?.stringValue, parameters["transaction_id"])
            case "/v1/support/orders/{out_trade_no}/attention/handled": ("api_attention_handled", parameters["out_trade_no"], nil)
            case "/v1/support/subscriptions/{original_transaction_id}/extend":
                ("api_extend_subscription", nil, parameters["original_transaction_id"].map { "original_transaction_id=\(String($0.prefix(64)))" })
            case "/v1/support/bills/{day}/reconcile": ("api_reconcile_bill", nil, parameters["day"].map { "day=\(String($0.prefix(16)))" })
            case "/v1/orders/{out_trade_no}": ("api_read_order", parameters["out_trade_no"], nil)
            case "/v1/refunds/{out_refund_no}": ("api_read_refund", nil, parameters["out_refund_no"])
            // Any other route (a support token refused where support may not go): the route, and
            // the order it names, so that the order's audit trail lists the attempt.
            default: ("api " + request.method.rawValue + " " + request.routeTemplate, parameters["out_trade_no"], nil)
            }
        if action == "api_read_refund", let outRefundNo = target {
            // The refund's order, so that the order's audit trail lists the look too.
            outTradeNo = try? await services.refunds.store.refund(outRefundNo)?.outTradeNo
        }
        let address = clientAddresses.clientIP(peer: request.remoteAddress?.host,
                                               forwardedFor: request.headers.values(for: "X-Forwarded-For"))
        do {
            try await audit.record(actor: caller.tokenName ?? "support token", channel: "api", role: "support",
                                   action: action, outTradeNo: outTradeNo.map { String($0.prefix(64)) }, target: target,
                                   address: address, outcome: outcome, detail: reason)
            return nil
        } catch {
            return request.method == .get ? Self.error(error) : nil
        }
    }

    /// A look-up's audit target: its identifier and the channel filters, nil when neither was given.
    static func lookupTarget(_ identifier: String?, filters: [String]) -> String? {
        let parts = (identifier.map { [$0] } ?? []) + filters
        return parts.isEmpty ? nil : parts.joined(separator: " ")
    }
}

/// What a support action adds to its audit entry once done, beyond what the request says (which
/// flags it marked handled): set by the route's handler, read by `handle` when it records the call.
final class AuditNote: Sendable {
    private let value = Mutex("")

    func set(_ text: String) { value.withLock { $0 = text } }

    var text: String { value.withLock { $0 } }
}
