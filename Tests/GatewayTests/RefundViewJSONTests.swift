// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import Storage
import Testing

/// The refund JSON written by hand is what `JSONEncoder` writes for the `Encodable` reference, in
/// a refund of its own and inside an order.
struct RefundViewJSONTests {
    static func refund(_ state: RefundState, succeeded: Bool) -> RefundRecord {
        let created = Date(timeIntervalSince1970: 1_796_019_823.339)
        return RefundRecord(
            outRefundNo: "R|1*@", outTradeNo: "view-0001", amount: 300, totalFee: 990, reason: OrderViewJSONTests.awkward,
            notifyURL: nil, parametersDigest: "d", state: state, refundID: succeeded ? "50300001" : nil,
            failureReason: state == .refundClose ? "NOTENOUGH" : nil, createdAt: created,
            succeededAt: succeeded ? created.addingTimeInterval(60) : nil)
    }

    @Test(arguments: [(RefundState.processing, false), (.success, true), (.refundClose, false), (.change, false)])
    func aRefundIsWrittenAsJSONEncoderWritesIt(state: RefundState, succeeded: Bool) {
        let view = RefundView(Self.refund(state, succeeded: succeeded))
        #expect(view.json == JSON.encode(view))
    }

    @Test func anOrderWithRefundsIsWrittenAsJSONEncoderWritesIt() {
        var view = OrderView(OrderViewJSONTests.record(paid: true))
        view.refunds = [RefundView(Self.refund(.success, succeeded: true)), RefundView(Self.refund(.processing, succeeded: false))]
        view.refundedAmount = 300
        #expect(view.json == JSON.encode(view))
        let text = String(decoding: view.json, as: UTF8.self)
        #expect(text.contains(#""refunded_amount":300,"refunds":[{"amount":300,"#))
    }

    @Test func aRefundEventCarriesTheRefundAsTheAPIShowsIt() throws {
        let refund = Self.refund(.success, succeeded: true)
        let event = try #require(RefundEventEncoding.event(for: refund, at: refund.createdAt))
        #expect(event.type == "refund.succeeded" && event.outTradeNo == "view-0001")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.payload.utf8)) as? [String: Any])
        #expect(object["id"] as? String == event.id && object["type"] as? String == "refund.succeeded")
        let data = try JSONSerialization.data(withJSONObject: try #require(object["data"]), options: [.sortedKeys, .withoutEscapingSlashes])
        #expect(try JSONSerialization.jsonObject(with: data) as? NSDictionary
            == (try JSONSerialization.jsonObject(with: Data(RefundView(refund).json)) as? NSDictionary))
        #expect(RefundEventEncoding.event(for: Self.refund(.change, succeeded: false), at: refund.createdAt)?.type == "refund.failed")
        #expect(RefundEventEncoding.event(for: Self.refund(.processing, succeeded: false), at: refund.createdAt) == nil)
    }
}
