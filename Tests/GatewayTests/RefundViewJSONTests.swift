// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import StorageCore
import Testing

/// The one writer of the refund's JSON (`RefundView.json`): valid JSON, exactly the documented
/// members with nulls until known, every value as stored; inside an order and in its events too.
struct RefundViewJSONTests {
    static func refund(_ state: RefundState, succeeded: Bool) -> RefundRecord {
        let created = Date(timeIntervalSince1970: 1_796_019_823.339)
        return RefundRecord(
            outRefundNo: "R|1*@", outTradeNo: "view-0001", amount: 300, totalFee: 990, reason: OrderViewJSONTests.awkward,
            notifyURL: nil, parametersDigest: "d", state: state, refundID: succeeded ? "50300001" : nil,
            failureReason: state == .refundClose ? "NOTENOUGH" : nil, createdAt: created,
            succeededAt: succeeded ? created.addingTimeInterval(60) : nil)
    }

    static let keys: Set<String> = ["amount", "created_at", "failure_reason", "out_refund_no", "out_trade_no", "reason",
                                    "refund_id", "state", "succeeded_at"]

    @Test(arguments: [(RefundState.processing, false), (.success, true), (.refundClose, false), (.change, false)])
    func aRefundHasTheDocumentedMembersWithNullsUntilKnown(state: RefundState, succeeded: Bool) throws {
        let object = try OrderViewJSONTests.object(RefundView(Self.refund(state, succeeded: succeeded)).json)
        #expect(Set(object.keys) == Self.keys)
        #expect(object["reason"] as? String == OrderViewJSONTests.awkward)
        #expect(object["out_refund_no"] as? String == "R|1*@" && object["out_trade_no"] as? String == "view-0001")
        #expect(object["amount"] as? Int == 300 && object["state"] as? String == state.rawValue)
        #expect(object["created_at"] as? String == "2026-11-30T14:23:43.339+08:00")
        if succeeded {
            #expect(object["refund_id"] as? String == "50300001")
            #expect(object["succeeded_at"] as? String == "2026-11-30T14:24:43.339+08:00")
        } else {
            #expect(object["refund_id"] is NSNull && object["succeeded_at"] is NSNull)
        }
        if state == .refundClose {
            #expect(object["failure_reason"] as? String == "NOTENOUGH")
        } else {
            #expect(object["failure_reason"] is NSNull)
        }
    }

    @Test func anOrderCarriesItsRefundsAndWhatTheyReturned() throws {
        var view = OrderView(OrderViewJSONTests.record(paid: true))
        view.refunds = [RefundView(Self.refund(.success, succeeded: true)), RefundView(Self.refund(.processing, succeeded: false))]
        view.refundedAmount = 300
        let object = try OrderViewJSONTests.object(view.json)
        #expect(object["refunded_amount"] as? Int == 300)
        let refunds = try #require(object["refunds"] as? [[String: Any]])
        #expect(refunds.map { $0["state"] as? String } == ["SUCCESS", "PROCESSING"])
        #expect(refunds.allSatisfy { Set($0.keys) == Self.keys })
        // An order without refunds shows the members all the same: one shape for clients.
        let plain = try OrderViewJSONTests.object(OrderView(OrderViewJSONTests.record(paid: false)).json)
        #expect(plain["refunded_amount"] as? Int == 0 && (plain["refunds"] as? [Any])?.isEmpty == true)
    }

    @Test func aRefundEventCarriesTheRefundAsTheAPIShowsIt() throws {
        let refund = Self.refund(.success, succeeded: true)
        let event = try #require(RefundEventEncoding.event(for: refund, at: refund.createdAt))
        #expect(event.type == "refund.succeeded" && event.outTradeNo == "view-0001")
        let object = try OrderViewJSONTests.object(Array(event.payload.utf8))
        #expect(Set(object.keys) == ["created_at", "data", "id", "type"])
        #expect(object["id"] as? String == event.id && object["type"] as? String == "refund.succeeded")
        let data = try #require(object["data"] as? [String: Any])
        #expect(data as NSDictionary == (try OrderViewJSONTests.object(RefundView(refund).json)) as NSDictionary)
        #expect(RefundEventEncoding.event(for: Self.refund(.change, succeeded: false), at: refund.createdAt)?.type == "refund.failed")
        #expect(RefundEventEncoding.event(for: Self.refund(.refundClose, succeeded: false), at: refund.createdAt)?.type
            == "refund.failed")
        #expect(RefundEventEncoding.event(for: Self.refund(.processing, succeeded: false), at: refund.createdAt) == nil)
    }
}
