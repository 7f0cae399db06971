// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import Observability
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// The refund contract, each test run in process and over sockets (gateway HTTP, WeChat HTTPS with
/// the merchant certificate, notifies back over HTTP).
struct RefundAPITests {
    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func aFullRefundSucceedsThroughItsNotifyAndTheOrderTurnsRefund(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rf-full", amount: 990)
        let requested = try await rig.refund("rf-full", amount: 990, number: "rf-full-r1")
        #expect(requested.status == 201)
        #expect(requested.json["state"] as? String == "PROCESSING")
        #expect(requested.json["out_trade_no"] as? String == "rf-full")
        #expect((requested.json["refund_id"] as? String)?.hasPrefix("5030") == true)
        #expect(requested.json["succeeded_at"] is NSNull)
        // The request WeChat got: the order's amount, the refund's, the reason and our notify_url.
        let sent = try #require(rig.simulator.requests.last { $0.path == "/secapi/pay/refund" })
        #expect(sent.fields["total_fee"] == "990" && sent.fields["refund_fee"] == "990")
        #expect(sent.fields["refund_desc"] == "bought by mistake")
        #expect(sent.fields["notify_url"]?.hasSuffix("/wechat/refund-notify") == true)

        try rig.simulator.completeRefund(outRefundNo: "rf-full-r1")
        #expect(await rig.refund("rf-full-r1", becomes: .success))
        let refund = try await rig.send(.get, "/v1/refunds/rf-full-r1")
        #expect(refund.json["state"] as? String == "SUCCESS")
        #expect(refund.json["succeeded_at"] as? String != nil)
        let order = try await rig.send(.get, "/v1/orders/rf-full")
        #expect(order.json["state"] as? String == "REFUND")
        #expect(order.json["refunded_amount"] as? Int == 990)
        #expect((order.json["refunds"] as? [[String: Any]])?.map { $0["out_refund_no"] as? String } == ["rf-full-r1"])
        #expect(try await rig.events("rf-full", type: "refund.succeeded").count == 1)
        #expect(try await rig.events("rf-full", type: "order.paid").count == 1)
        // Support sees every step of the refund in the order's timeline.
        let lookup = try await rig.send(.get, "/v1/support/orders?out_trade_no=rf-full", token: RefundRig.support)
        let kinds = ((lookup.json["orders"] as? [[String: Any]])?.first?["events"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String }
        #expect(kinds.suffix(4) == ["refund_requested", "refund_accepted", "refund_state_changed", "state_changed"])
    }

    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func partialRefundsAddUpToTheTotalAndTheNextIsRefusedWithoutAskingWeChat(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rf-part", amount: 1000)
        for (number, amount) in [("rf-part-1", 300), ("rf-part-2", 300), ("rf-part-3", 400)] {
            #expect(try await rig.refund("rf-part", amount: amount, number: number).status == 201)
        }
        let upstream = rig.upstreamRefundRequests
        let over = try await rig.refund("rf-part", amount: 1, number: "rf-part-4")
        #expect(over.status == 409)
        #expect(over.error?["code"] as? String == "refund_exceeds_paid")
        #expect(rig.upstreamRefundRequests == upstream)
        // The first two succeed; the order is REFUND with what they returned.
        try rig.simulator.completeRefund(outRefundNo: "rf-part-1")
        try rig.simulator.completeRefund(outRefundNo: "rf-part-2")
        #expect(await rig.refund("rf-part-2", becomes: .success))
        #expect(await rig.refund("rf-part-1", becomes: .success))
        let order = try await rig.send(.get, "/v1/orders/rf-part")
        #expect(order.json["state"] as? String == "REFUND")
        #expect(order.json["refunded_amount"] as? Int == 600)
        #expect((order.json["refunds"] as? [[String: Any]])?.count == 3)
        // A closed refund gives its amount back.
        try rig.simulator.completeRefund(outRefundNo: "rf-part-3", status: "REFUNDCLOSE")
        #expect(await rig.refund("rf-part-3", becomes: .refundClose))
        #expect(try await rig.refund("rf-part", amount: 400, number: "rf-part-5").status == 201)
        #expect(try await rig.events("rf-part", type: "refund.failed").count == 1)
    }

    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func anIdenticalReplayIsTheSameRefundAndAnythingElseUnderItsNumberAConflict(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rf-idem")
        try await rig.paidOrder("rf-idem-other")
        let first = try await rig.refund("rf-idem", amount: 100, number: "rf-idem-r1")
        let replay = try await rig.refund("rf-idem", amount: 100, number: "rf-idem-r1")
        #expect(first.status == 201 && replay.status == 200)
        #expect(first.body == replay.body)
        for conflict in [
            try await rig.refund("rf-idem", amount: 101, number: "rf-idem-r1"),
            try await rig.refund("rf-idem", amount: 100, reason: "another reason", number: "rf-idem-r1"),
            try await rig.refund("rf-idem-other", amount: 100, number: "rf-idem-r1"),
        ] {
            #expect(conflict.status == 409)
            #expect(conflict.error?["code"] as? String == "out_refund_no_conflict")
        }
        #expect(rig.upstreamRefundRequests == 1)
        // Without a number every request is a new refund, with a generated one.
        let generated = try await rig.refund("rf-idem", amount: 1)
        #expect(generated.status == 201)
        #expect((generated.json["out_refund_no"] as? String)?.count == 27)
    }

    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func refusalsAreDecidedLocallyAndNeverReachWeChat(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rf-local", amount: 500)
        _ = try await rig.send(.post, "/v1/orders", body: #"{"amount":500,"description":"d","client_ip":"203.0.113.7","out_trade_no":"rf-unpaid"}"#)
        let cases: [(String, String, Int, String, String?)] = [
            ("/v1/orders/rf-nobody/refunds", #"{"amount":1,"reason":"r"}"#, 404, "order_not_found", nil),
            ("/v1/orders/rf-unpaid/refunds", #"{"amount":1,"reason":"r"}"#, 409, "order_not_refundable", nil),
            ("/v1/orders/rf-local/refunds", #"{"amount":501,"reason":"r"}"#, 409, "refund_exceeds_paid", nil),
            ("/v1/orders/rf-local/refunds", #"{"amount":0,"reason":"r"}"#, 400, "invalid_request", "amount"),
            ("/v1/orders/rf-local/refunds", #"{"amount":1.5,"reason":"r"}"#, 400, "invalid_request", "amount"),
            ("/v1/orders/rf-local/refunds", #"{"amount":1,"reason":""}"#, 400, "invalid_request", "reason"),
            ("/v1/orders/rf-local/refunds", #"{"amount":1,"reason":"\#(String(repeating: "退", count: 27))"}"#, 400,
             "invalid_request", "reason"),
            ("/v1/orders/rf-local/refunds", #"{"amount":1,"reason":"r","out_refund_no":"a b"}"#, 400, "invalid_request",
             "out_refund_no"),
            ("/v1/orders/rf-local/refunds", #"{"amount":1,"reason":"r","out_refund_no":"\#(String(repeating: "x", count: 65))"}"#,
             400, "invalid_request", "out_refund_no"),
            ("/v1/orders/rf-local/refunds", #"{"amount":1,"reason":"r","note":"x"}"#, 400, "invalid_request", "note"),
            ("/v1/orders/rf-local/refunds", "not json", 400, "invalid_request", nil),
            // A reason that turns itself around where it is shown (the payer's notice, the console,
            // the audit log): a right-to-left override, an isolate, a C1 control.
            ("/v1/orders/rf-local/refunds", #"{"amount":1,"reason":"refund \u202efed by admin"}"#, 400, "invalid_request", "reason"),
            ("/v1/orders/rf-local/refunds", #"{"amount":1,"reason":"a\u2067b"}"#, 400, "invalid_request", "reason"),
            ("/v1/orders/rf-local/refunds", #"{"amount":1,"reason":"a\u0085b"}"#, 400, "invalid_request", "reason"),
            // Past the route's 4 KiB: refused before it is read, in JSON like every answer here.
            ("/v1/orders/rf-local/refunds", #"{"amount":1,"reason":"\#(String(repeating: "a", count: 5000))"}"#, 413,
             "payload_too_large", nil),
        ]
        for (path, body, status, code, field) in cases {
            let answer = try await rig.send(.post, path, body: body)
            #expect(answer.status == status, "\(body)")
            #expect(answer.error?["code"] as? String == code, "\(body)")
            #expect(answer.error?["field"] as? String == field, "\(body)")
        }
        let unknown = try await rig.send(.get, "/v1/refunds/rf-none")
        #expect(unknown.status == 404)
        #expect(unknown.error?["code"] as? String == "refund_not_found")
        // Authentication first: no token 401, a support token may not refund (its console has its own door).
        #expect(try await rig.send(.post, "/v1/orders/rf-local/refunds", token: nil, body: "x").status == 401)
        #expect(try await rig.send(.post, "/v1/orders/rf-local/refunds", token: RefundRig.support,
                                   body: #"{"amount":1,"reason":"r"}"#).status == 403)
        #expect(try await rig.send(.get, "/v1/refunds/rf-none", token: RefundRig.support).status == 404)
        #expect(rig.upstreamRefundRequests == 0)
        #expect(try await rig.store.refunds(outTradeNo: "rf-local").isEmpty)
    }

    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func concurrentRefundsOfOneOrderNeverTogetherExceedWhatWasPaid(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rf-race", amount: 1000)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<12 {
                group.addTask { try await rig.refund("rf-race", amount: 150, number: "rf-race-\(n)").status }
            }
            var statuses: [Int] = []
            for try await status in group { statuses.append(status) }
            return statuses
        }
        #expect(statuses.filter { $0 == 201 }.count == 6)
        #expect(statuses.filter { $0 == 409 }.count == 6)
        let recorded = try await rig.store.refunds(outTradeNo: "rf-race")
        #expect(recorded.reduce(0) { $0 + $1.amount } == 900)
        #expect(rig.upstreamRefundRequests == 6)
    }

    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func aWaitingReadAnswersOnceTheRefundHasItsResultOrWhenTheWaitRunsOut(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rf-wait")
        _ = try await rig.refund("rf-wait", amount: 90, number: "rf-wait-r1")
        let metrics = rig.gateway.services.metrics
        func waitsEnded(_ state: String) -> Double {
            Battery.sum(metrics.exposition(), #"wxpay_wait_duration_seconds_count{state="\#(state)""#)
        }
        let still = try await rig.send(.get, "/v1/refunds/rf-wait-r1?wait=0.3")
        #expect(still.json["state"] as? String == "PROCESSING")
        async let waited = rig.send(.get, "/v1/refunds/rf-wait-r1?wait=30")
        // Held, and counted among the held waits as an order's wait is.
        #expect(await eventually { metrics.gauge("wxpay_waits_open") == 1 })
        try rig.simulator.completeRefund(outRefundNo: "rf-wait-r1")
        #expect(try await waited.json["state"] as? String == "SUCCESS")
        #expect(metrics.gauge("wxpay_waits_open") == 0)
        #expect(waitsEnded("final") == 1)
        let invalid = try await rig.send(.get, "/v1/refunds/rf-wait-r1?wait=31")
        #expect(invalid.status == 400 && invalid.error?["field"] as? String == "wait")
    }

    @Test func refundsAreOffWithA503WhenNoCertificateIsConfigured() async throws {
        let rig = try await RefundRig.start(.inProcess, refundsOn: false)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rf-off")
        let answer = try await rig.refund("rf-off", amount: 1)
        #expect(answer.status == 503)
        #expect(answer.error?["code"] as? String == "refunds_not_configured")
        #expect(try await rig.store.refunds(outTradeNo: "rf-off").isEmpty)
    }

    @Test func aChangeRefundFlagsTheOrderForSupportAndKeepsItsAmountReserved() async throws {
        let rig = try await RefundRig.start(.sockets)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rf-change", amount: 800)
        #expect(try await rig.refund("rf-change", amount: 500, number: "rf-change-r1").status == 201)
        try rig.simulator.completeRefund(outRefundNo: "rf-change-r1", status: "CHANGE")
        #expect(await rig.refund("rf-change-r1", becomes: .change))
        let order = try await rig.send(.get, "/v1/orders/rf-change")
        #expect(order.json["state"] as? String == "SUCCESS")
        #expect(order.json["flags"] as? [String] == ["refund_needs_attention"])
        #expect(order.json["refunded_amount"] as? Int == 0)
        let lookup = try await rig.send(.get, "/v1/support/orders?out_trade_no=rf-change", token: RefundRig.support)
        let found = try #require((lookup.json["orders"] as? [[String: Any]])?.first)
        #expect(found["flags"] as? [String] == ["refund_needs_attention"])
        #expect((found["refunds"] as? [[String: Any]])?.first?["state"] as? String == "CHANGE")
        #expect(try await rig.events("rf-change", type: "refund.failed").count == 1)
        // Still reserved: only 300 fen are left.
        let over = try await rig.refund("rf-change", amount: 301)
        #expect(over.error?["code"] as? String == "refund_exceeds_paid")
    }
}
