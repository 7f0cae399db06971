// SPDX-License-Identifier: Apache-2.0
import Foundation
import Storage

/// A refund as the API, the order view and the `refund.*` webhook events show it.
///
/// `{"amount","created_at","failure_reason","out_refund_no","out_trade_no","reason","refund_id",
/// "state","succeeded_at"}`: `refund_id`, `succeeded_at` and `failure_reason` are null until known.
struct RefundView: Encodable, Sendable, Hashable {
    var outRefundNo: String
    var outTradeNo: String
    var refundID: String?
    var amount: Int
    var reason: String
    var state: String
    var createdAt: String
    var succeededAt: String?
    /// Why WeChat refused a refund it never accepted (it is then REFUNDCLOSE), e.g. `NOTENOUGH`.
    var failureReason: String?

    enum CodingKeys: String, CodingKey {
        case outRefundNo = "out_refund_no", outTradeNo = "out_trade_no", refundID = "refund_id", amount, reason, state
        case createdAt = "created_at", succeededAt = "succeeded_at", failureReason = "failure_reason"
    }

    init(_ refund: RefundRecord) {
        outRefundNo = refund.outRefundNo
        outTradeNo = refund.outTradeNo
        refundID = refund.refundID
        amount = refund.amount
        reason = refund.reason
        state = refund.state.rawValue
        createdAt = Timestamp.rfc3339(refund.createdAt)
        succeededAt = refund.succeededAt.map(Timestamp.rfc3339)
        failureReason = refund.failureReason
    }

    /// As `OrderView`'s: every key, null included (the order's `Encodable` reference needs it).
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(amount, forKey: .amount)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(failureReason, forKey: .failureReason)
        try c.encode(outRefundNo, forKey: .outRefundNo)
        try c.encode(outTradeNo, forKey: .outTradeNo)
        try c.encode(reason, forKey: .reason)
        try c.encode(refundID, forKey: .refundID)
        try c.encode(state, forKey: .state)
        try c.encode(succeededAt, forKey: .succeededAt)
    }

    /// The JSON written by hand (keys sorted, as everywhere in the API); the same bytes as
    /// `JSON.encode(self)`.
    var json: [UInt8] {
        var writer = JSONObjectWriter(capacity: 320)
        writer.number("amount", amount)
        writer.string("created_at", createdAt)
        writer.stringOrNull("failure_reason", failureReason)
        writer.string("out_refund_no", outRefundNo)
        writer.string("out_trade_no", outTradeNo)
        writer.string("reason", reason)
        writer.stringOrNull("refund_id", refundID)
        writer.string("state", state)
        writer.stringOrNull("succeeded_at", succeededAt)
        return writer.finish()
    }
}

/// The `refund.succeeded` and `refund.failed` outbox events: `{"created_at","data","id","type"}`
/// with `data` the refund as `GET /v1/refunds/{out_refund_no}` shows it (its order's
/// `out_trade_no` included), delivered and signed like `order.paid`.
enum RefundEventEncoding {
    static let succeeded = "refund.succeeded"
    static let failed = "refund.failed"

    /// The event announcing that `refund` reached its state, or nil for a state nobody is told of
    /// (PROCESSING).
    static func event(for refund: RefundRecord, at: Date) -> OutboxEvent? {
        let type: String
        switch refund.state {
        case .success: type = succeeded
        case .change, .refundClose: type = failed
        case .processing: return nil
        }
        let id = PaidEventEncoding.newID(at: at)
        var event = JSONObjectWriter(capacity: 512)
        event.string("created_at", Timestamp.rfc3339(at))
        event.raw("data", RefundView(refund).json)
        event.string("id", id)
        event.string("type", type)
        return OutboxEvent(id: id, outTradeNo: refund.outTradeNo, type: type,
                           payload: String(decoding: event.finish(), as: UTF8.self), createdAt: at)
    }
}
