// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import StorageCore

/// A refund as the API, the order view and the `refund.*` webhook events show it.
///
/// `{"amount","created_at","failure_reason","out_refund_no","out_trade_no","reason","refund_id",
/// "state","succeeded_at"}`: `refund_id`, `succeeded_at` and `failure_reason` are null until known.
struct RefundView: Sendable, Hashable {
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

    /// The one writer of the refund shape (keys sorted, as everywhere in the API): the refund
    /// routes, the order's `refunds` and the `refund.*` events' `data` all come from it.
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
        // A refund ends once in each of these states: named by the refund and its end alone, so
        // one written again after a restore keeps its id — even when the client had to ask for it
        // again and the row is new (`PaidEventEncoding.derivedID`).
        let id = PaidEventEncoding.derivedID(fact: "\(type)\n\(refund.outRefundNo)\n\(refund.state.rawValue)")
        var event = JSONObjectWriter(capacity: 512)
        event.string("created_at", Timestamp.rfc3339(at))
        event.raw("data", RefundView(refund).json)
        event.string("id", id)
        event.string("type", type)
        return OutboxEvent(id: id, outTradeNo: refund.outTradeNo, type: type,
                           payload: String(decoding: event.finish(), as: UTF8.self), createdAt: at)
    }
}
