// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import Storage
import Testing
import WeChatPay

/// The order JSON written by hand must be the bytes `JSONEncoder` (sorted keys, slashes
/// unescaped) writes for `OrderView`'s `Encodable` conformance, in every shape the API answers.
struct OrderViewJSONTests {
    static let awkward = "a\"b\\c/d\u{08}\u{0C}\n\r\t\u{01}\u{1F}\u{7F} é 中 😀"

    static func record(paid: Bool) -> OrderRecord {
        let created = Date(timeIntervalSince1970: 1_796_019_823.339)
        return OrderRecord(
            outTradeNo: "view-0001", amount: 990, description: awkward, clientIP: "203.0.113.7", attach: "x",
            userID: "u/" + awkward, productID: "p1", signType: "HMAC-SHA256", timeExpire: "20261130162343",
            expiresAt: created.addingTimeInterval(7200), createdAt: created, state: paid ? .success : .notPay,
            transactionID: paid ? "4200000001" : nil, paidAt: paid ? created.addingTimeInterval(60) : nil,
            prepayID: "wx2026", prepayIssuedAt: created, parametersDigest: "d", flags: paid ? [.paidAfterClose] : [])
    }

    @Test(arguments: [false, true])
    func aPlainOrderIsWrittenAsJSONEncoderWritesIt(paid: Bool) {
        let view = OrderView(Self.record(paid: paid))
        #expect(view.json == JSON.encode(view))
    }

    @Test func anOrderWithAppParametersIsWrittenAsJSONEncoderWritesIt() throws {
        var view = OrderView(Self.record(paid: false))
        view.prepayID = "wx2026"
        view.appParams = try AppPayParameters(
            appID: "wxd930ea5d5a258f4f", partnerID: "10000100", prepayID: "wx2026", nonce: "n0nce",
            timestamp: 1_796_019_823, signType: .hmacSHA256, signer: Signer(key: APIKey("192006250b4c09247ec02edce69f6a2d")))
        #expect(view.json == JSON.encode(view))
        #expect(String(decoding: view.json, as: UTF8.self).contains(#""app_params":{"appId":"wxd930ea5d5a258f4f""#))
    }

    @Test func aSupportViewWithTimelineFlagsAndOutboxIsWrittenAsJSONEncoderWritesIt() {
        let record = Self.record(paid: true)
        var view = OrderView(record)
        view.userID = record.userID
        view.prepayID = record.prepayID
        view.flags = ["amount_mismatch", "z/" + Self.awkward]
        view.events = [
            EventView(OrderEvent(id: 1, outTradeNo: "view-0001", at: record.createdAt, kind: "created", detail: Self.awkward)),
            EventView(OrderEvent(id: 2, outTradeNo: "view-0001", at: record.createdAt, kind: "prepay", detail: "")),
        ]
        view.outbox = [OutboxEventView(OutboxEvent(
            id: "evt_1", outTradeNo: "view-0001", type: "order.paid", payload: "{}", createdAt: record.createdAt,
            attempts: 2, lastError: Self.awkward))]
        #expect(view.json == JSON.encode(view))
        view.events = []
        view.flags = []
        view.outbox = []
        #expect(view.json == JSON.encode(view))
    }
}
