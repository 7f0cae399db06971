// SPDX-License-Identifier: Apache-2.0
import Foundation
import Storage
import WeChatPay

/// An order as the API shows it. Timestamps are RFC 3339 with an offset; `state` is WeChat's
/// trade_state vocabulary; `final` says whether it can still change.
struct OrderView: Encodable, Sendable {
    var outTradeNo: String
    var state: String
    var amount: Int
    var description: String
    var transactionID: String?
    var paidAt: String?
    var createdAt: String
    var expiresAt: String
    var final: Bool
    var prepayID: String?
    var appParams: AppPayParameters?
    var userID: String?
    var flags: [String]?
    var events: [EventView]?
    /// Support lookups only: the order's fulfilment events (see Fulfilment/OutboxEventView).
    var outbox: [OutboxEventView]?
    /// The sum of the order's successful refunds, in fen, and every refund (Refunds/RefundView);
    /// 0 and none until `OrderService.view` reads them for a paid order.
    var refundedAmount = 0
    var refunds: [RefundView] = []

    enum CodingKeys: String, CodingKey {
        case outTradeNo = "out_trade_no", state, amount, description, transactionID = "transaction_id"
        case paidAt = "paid_at", createdAt = "created_at", expiresAt = "expires_at", final
        case prepayID = "prepay_id", appParams = "app_params", userID = "user_id", flags, events, outbox
        case refundedAmount = "refunded_amount", refunds
    }

    init(_ record: OrderRecord) {
        outTradeNo = record.outTradeNo
        state = record.state.rawValue
        amount = record.amount
        description = record.description
        transactionID = record.transactionID
        paidAt = record.paidAt.map(Timestamp.rfc3339)
        createdAt = Timestamp.rfc3339(record.createdAt)
        expiresAt = Timestamp.rfc3339(record.expiresAt)
        final = record.state.isFinal
    }

    /// Always encodes `transaction_id` and `paid_at` (null until paid), so clients see one shape.
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(outTradeNo, forKey: .outTradeNo)
        try c.encode(state, forKey: .state)
        try c.encode(amount, forKey: .amount)
        try c.encode(description, forKey: .description)
        try c.encode(transactionID, forKey: .transactionID)
        try c.encode(paidAt, forKey: .paidAt)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(expiresAt, forKey: .expiresAt)
        try c.encode(final, forKey: .final)
        try c.encodeIfPresent(prepayID, forKey: .prepayID)
        try c.encodeIfPresent(appParams, forKey: .appParams)
        try c.encodeIfPresent(userID, forKey: .userID)
        try c.encodeIfPresent(flags, forKey: .flags)
        try c.encodeIfPresent(events, forKey: .events)
        try c.encodeIfPresent(outbox, forKey: .outbox)
        try c.encode(refundedAmount, forKey: .refundedAmount)
        try c.encode(refunds, forKey: .refunds)
    }
}

extension OrderView {
    /// The JSON the API answers, written by hand (`JSONObjectWriter`): the same bytes as the
    /// `Encodable` conformance through `JSON.encode`, which stays as the reference the tests hold
    /// this to, at a fraction of the cost on the create and query paths.
    var json: [UInt8] {
        var writer = JSONObjectWriter(capacity: appParams == nil ? 320 : 640)
        writer.number("amount", amount)
        if let appParams { writer.raw("app_params", Self.json(appParams)) }
        writer.string("created_at", createdAt)
        writer.string("description", description)
        if let events { writer.array("events", events.map(\.json)) }
        writer.string("expires_at", expiresAt)
        writer.bool("final", final)
        if let flags { writer.strings("flags", flags) }
        writer.string("out_trade_no", outTradeNo)
        // Support lookups only, and rare: JSONEncoder's output for these is fine.
        if let outbox { writer.array("outbox", outbox.map { JSON.encode($0) }) }
        writer.stringOrNull("paid_at", paidAt)
        writer.string("prepay_id", prepayID)
        writer.number("refunded_amount", refundedAmount)
        writer.array("refunds", refunds.map(\.json))
        writer.string("state", state)
        writer.stringOrNull("transaction_id", transactionID)
        writer.string("user_id", userID)
        return writer.finish()
    }

    /// `AppPayParameters`' synthesized `Encodable` keys (its property names), sorted.
    private static func json(_ parameters: AppPayParameters) -> [UInt8] {
        var writer = JSONObjectWriter(capacity: 320)
        writer.string("appId", parameters.appId)
        writer.string("nonceStr", parameters.nonceStr)
        writer.string("packageValue", parameters.packageValue)
        writer.string("partnerId", parameters.partnerId)
        writer.string("prepayId", parameters.prepayId)
        writer.string("sign", parameters.sign)
        writer.string("signType", parameters.signType)
        writer.string("timeStamp", parameters.timeStamp)
        return writer.finish()
    }
}

/// One entry of an order's support timeline.
struct EventView: Encodable, Sendable {
    var at: String
    var kind: String
    var detail: String

    init(_ event: OrderEvent) {
        at = Timestamp.rfc3339(event.at)
        kind = event.kind
        detail = event.detail
    }

    /// The same bytes as `JSON.encode(self)`.
    var json: [UInt8] {
        var writer = JSONObjectWriter(capacity: 128)
        writer.string("at", at)
        writer.string("detail", detail)
        writer.string("kind", kind)
        return writer.finish()
    }
}

enum JSON {
    static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? Array(encoder.encode(value))) ?? Array("{}".utf8)
    }
}
