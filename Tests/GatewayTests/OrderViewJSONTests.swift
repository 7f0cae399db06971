// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import JSON
import StorageCore
import Testing
import WeChatPay

/// The one writer of the order's JSON (`OrderView.json`) in every shape the API answers: valid
/// JSON, exactly the documented members, every value as stored whatever characters it holds.
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

    static func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    static let plainKeys: Set<String> = ["amount", "channel", "created_at", "description", "expires_at", "final", "out_trade_no",
                                         "paid_at", "state", "transaction_id", "refunded_amount", "refunds"]

    @Test(arguments: [false, true])
    func aPlainOrderHasTheDocumentedMembersWithNullsUntilPaid(paid: Bool) throws {
        let object = try Self.object(OrderView(Self.record(paid: paid)).json)
        #expect(Set(object.keys) == Self.plainKeys)
        #expect(object["description"] as? String == Self.awkward)
        #expect(object["amount"] as? Int == 990)
        #expect(object["state"] as? String == (paid ? "SUCCESS" : "NOTPAY"))
        #expect(object["final"] as? Bool == paid)
        #expect(object["created_at"] as? String == "2026-11-30T14:23:43.339+08:00")
        if paid {
            #expect(object["transaction_id"] as? String == "4200000001")
            #expect(object["paid_at"] as? String == "2026-11-30T14:24:43.339+08:00")
        } else {
            #expect(object["transaction_id"] is NSNull && object["paid_at"] is NSNull)
        }
    }

    @Test func anOrderWithAppParametersCarriesThePayReqNames() throws {
        var view = OrderView(Self.record(paid: false))
        view.prepayID = "wx2026"
        let parameters = try AppPayParameters(
            appID: "wxd930ea5d5a258f4f", partnerID: "10000100", prepayID: "wx2026", nonce: "n0nce",
            timestamp: 1_796_019_823, signType: .hmacSHA256, signer: Signer(key: APIKey("192006250b4c09247ec02edce69f6a2d")))
        view.appParams = AppPayRequest(
            appId: parameters.appId, partnerId: parameters.partnerId, prepayId: parameters.prepayId,
            packageValue: parameters.packageValue, nonceStr: parameters.nonceStr, timeStamp: parameters.timeStamp,
            sign: parameters.sign, signType: parameters.signType)
        let object = try Self.object(view.json)
        #expect(Set(object.keys) == Self.plainKeys.union(["prepay_id", "app_params"]))
        let params = try #require(object["app_params"] as? [String: String])
        #expect(params == ["appId": parameters.appId, "partnerId": parameters.partnerId, "prepayId": parameters.prepayId,
                           "packageValue": parameters.packageValue, "nonceStr": parameters.nonceStr,
                           "timeStamp": parameters.timeStamp, "sign": parameters.sign, "signType": parameters.signType])
        // The protocol module's own Encodable form of the parameters has the same names and values.
        let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(parameters)) as? [String: String]
        #expect(encoded == params)
    }

    @Test("A WeChat order shows the app it was created through and its trade type; one made before apps had names shows its trade type only")
    func aWeChatOrderShowsItsAppAndTradeType() throws {
        var record = Self.record(paid: false)
        record.app = "mini"
        record.appID = "wx2421b1c4370ec43b"
        record.tradeType = "JSAPI"
        let object = try Self.object(OrderView(record).json)
        #expect(Set(object.keys) == Self.plainKeys.union(["app", "trade_type"]))
        #expect(object["app"] as? String == "mini" && object["trade_type"] as? String == "JSAPI")
        record.app = nil
        record.tradeType = "APP"
        #expect(Set(try Self.object(OrderView(record).json).keys) == Self.plainKeys.union(["trade_type"]))
    }

    @Test func aSupportViewCarriesItsTimelineFlagsAndOutbox() throws {
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
        let object = try Self.object(view.json)
        #expect(Set(object.keys) == Self.plainKeys.union(["user_id", "prepay_id", "flags", "events", "outbox"]))
        #expect(object["user_id"] as? String == "u/" + Self.awkward)
        #expect(object["flags"] as? [String] == ["amount_mismatch", "z/" + Self.awkward])
        let events = try #require(object["events"] as? [[String: String]])
        #expect(events.map { $0["detail"] } == [Self.awkward, ""])
        #expect(events.first?["at"] == "2026-11-30T14:23:43.339+08:00")
        let outbox = try #require((object["outbox"] as? [[String: Any]])?.first)
        #expect(Set(outbox.keys) == ["id", "type", "status", "attempts", "created_at", "next_attempt_at", "last_error"])
        #expect(outbox["status"] as? String == "pending" && outbox["attempts"] as? Int == 2)
        #expect(outbox["last_error"] as? String == Self.awkward)
        view.events = []
        view.flags = []
        view.outbox = []
        let empty = try Self.object(view.json)
        #expect((empty["events"] as? [Any])?.isEmpty == true && (empty["outbox"] as? [Any])?.isEmpty == true)
    }

    @Test(arguments: [false, true])
    func anAppStoreOrderCarriesItsAppleMembersWithNullsUntilPaid(paid: Bool) throws {
        var record = Self.record(paid: false)
        record.channel = .apple
        record.appleProductID = "com.example.courses.swift101"
        record.appAccountToken = "6a2f41b0-8f3e-4f1c-9d3a-1d2e3f405060"
        if paid {
            record.state = .success
            record.paidAt = record.createdAt.addingTimeInterval(60)
            record.environment = "Sandbox"
            record.appleTransactionID = "2000000100000001"
            record.originalTransactionID = "2000000100000000"
            record.appleQuantity = 3
        }
        let object = try Self.object(OrderView(record).json)
        #expect(Set(object.keys) == Self.plainKeys.union(["app_account_token", "apple_product_id", "environment",
                                                          "apple_transaction_id", "original_transaction_id", "currency",
                                                          "quantity"]))
        #expect(object["channel"] as? String == "apple")
        #expect(object["currency"] as? String == "CNY")
        #expect(object["apple_product_id"] as? String == "com.example.courses.swift101")
        #expect(object["app_account_token"] as? String == "6a2f41b0-8f3e-4f1c-9d3a-1d2e3f405060")
        #expect(object["transaction_id"] is NSNull)
        // An order of a product missing from the catalog is in the currency Apple charged.
        record.currency = "USD"
        #expect(try Self.object(OrderView(record).json)["currency"] as? String == "USD")
        if paid {
            #expect(object["environment"] as? String == "Sandbox")
            #expect(object["apple_transaction_id"] as? String == "2000000100000001")
            #expect(object["original_transaction_id"] as? String == "2000000100000000")
            #expect(object["quantity"] as? Int == 3)
        } else {
            #expect(object["environment"] is NSNull && object["apple_transaction_id"] is NSNull
                    && object["original_transaction_id"] is NSNull && object["quantity"] is NSNull)
        }
        // A WeChat order says its channel and nothing of Apple's.
        let wechat = try Self.object(OrderView(Self.record(paid: paid)).json)
        #expect(wechat["channel"] as? String == "wechat")
        #expect(wechat["environment"] == nil && wechat["apple_transaction_id"] == nil && wechat["quantity"] == nil)
    }

    /// The writer's string escaping is RFC 8259's as JSONEncoder writes it, for every character
    /// that needs care (JSONEncoder is the reference here for escaping only, never for a shape).
    @Test func stringsAreEscapedExactlyAsJSONEncoderEscapesThem() throws {
        var samples = [Self.awkward, "", "plain", "</script>", "\u{2028}\u{2029}", "\u{00}"]
        samples += (0..<0x20).map { String(UnicodeScalar(UInt8($0))) + "x" }
        for sample in samples {
            var quoted: [UInt8] = []
            JSONObjectWriter.quote(sample, into: &quoted)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.withoutEscapingSlashes]
            #expect(quoted == Array(try encoder.encode(sample)), "\(sample.unicodeScalars.map(\.value))")
        }
    }
}
