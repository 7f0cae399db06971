// SPDX-License-Identifier: Apache-2.0
import HTTP
import JSON
import StorageCore

/// Support's actions on the attention list, the JSON equivalents of the console's (support token,
/// audited with the reason): assign an unclaimed App Store purchase to an order, and mark an
/// order's attention flags handled.
///
/// | route | who |
/// |---|---|
/// | POST /v1/support/apple-transactions/{transaction_id}/assign `{"out_trade_no","reason","takes_over"?}` | support |
/// | POST /v1/support/orders/{out_trade_no}/attention/handled `{"reason","flags"?}` | support |
/// | POST /v1/support/subscriptions/{original_transaction_id}/extend `{"days","reason","request_id"?}` | support |
extension GatewayAPI {
    static let supportActionBodyLimit = 4096

    func registerSupportActions(in router: inout HTTPRouter) {
        router.add(.post, "/v1/support/apple-transactions/{transaction_id}/assign",
                   options: Self.jsonRoute(maxBodyBytes: Self.supportActionBodyLimit)) { request in
            try await self.handle(request, scopes: [.support]) { caller in
                guard let iap = self.services.iap else { throw APIError.notFound }
                let body = try Self.supportAction(request.body, allowed: ["out_trade_no", "reason", "takes_over"])
                let outTradeNo = try CreateOrderInput.string(body, "out_trade_no", required: true, bytes: 1...64) ?? ""
                let takesOver: Bool
                switch body["takes_over"] {
                case nil, .null?, .bool(false)?: takesOver = false
                case .bool(true)?: takesOver = true
                default: throw APIError.invalid("takes_over", "takes_over must be true or false")
                }
                let assignment = try await iap.assign(
                    transactionID: request.pathParameters["transaction_id"] ?? "", to: outTradeNo,
                    reason: try SupportReason.parse(member: body),
                    by: caller.tokenName ?? "support token", takingOver: takesOver)
                var answer = JSONObjectWriter(capacity: 1024)
                answer.raw("order", try await self.services.support.supportView(assignment.order, timeline: false))
                answer.bool("replayed", assignment.replayed)
                answer.string("transaction_id", request.pathParameters["transaction_id"] ?? "")
                return Self.json(answer.finish())
            }
        }
        router.add(.post, "/v1/support/orders/{out_trade_no}/attention/handled",
                   options: Self.jsonRoute(maxBodyBytes: Self.supportActionBodyLimit)) { request in
            let note = AuditNote()
            return try await self.handle(request, scopes: [.support], note: note) { caller in
                let body = try Self.supportAction(request.body, allowed: ["flags", "reason"])
                var flags: [String]?
                if let given = body["flags"], given != .null {
                    guard case .array(let items) = given else { throw APIError.invalid("flags", "flags must be an array of flag names") }
                    flags = try items.map { item throws(APIError) in
                        guard case .string(let name) = item else { throw APIError.invalid("flags", "flags must be an array of flag names") }
                        return name
                    }
                }
                let done = try await self.services.support.handleAttention(
                    request.pathParameters["out_trade_no"] ?? "", flags: flags,
                    reason: try SupportReason.parse(member: body),
                    by: caller.tokenName ?? "support token")
                note.set("handled: " + done.handled.map(\.rawValue).joined(separator: ","))
                return Self.json(try await self.services.support.supportView(done.order, timeline: false))
            }
        }
    }

    /// Extend a Subscription Renewal Date (compensation after an outage): IAPService+Extend.swift.
    /// Audited as every support call, with what was extended.
    func registerSubscriptionExtension(in router: inout HTTPRouter) {
        router.add(.post, "/v1/support/subscriptions/{original_transaction_id}/extend",
                   options: Self.jsonRoute(maxBodyBytes: Self.supportActionBodyLimit)) { request in
            let note = AuditNote()
            return try await self.handle(request, scopes: [.support], note: note) { _ in
                guard let iap = self.services.iap else { throw APIError.notFound }
                let done = try await iap.extendSubscription(
                    originalTransactionID: request.pathParameters["original_transaction_id"] ?? "",
                    try SubscriptionExtensionInput(json: request.body))
                note.set(done.note)
                return Self.json(done.json)
            }
        }
    }

    /// A support action's JSON body: an object of `allowed` members only.
    static func supportAction(_ body: [UInt8], allowed: Set<String>) throws(APIError) -> [String: JSONValue] {
        let object = try CreateOrderInput.members(of: body)
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw .invalid(unknown, "unknown member \(unknown); allowed: \(allowed.sorted().joined(separator: ", "))")
        }
        return object
    }
}
