// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay
@testable import WeChatPaySimulator

struct SimulatorControlAPITests {
    func json(_ body: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    @Test func payingThroughTheControlAPIMakesTheOrderSuccess() {
        let harness = SimulatorHarness()
        let api = SimulatorControlAPI(simulator: harness.simulator)
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("ctl-0001"))
        let paid = api.handle(method: "POST", path: "/simulator/orders/ctl-0001/pay", body: [])
        #expect(paid.status == 200)
        #expect(json(paid.body)["state"] as? String == "SUCCESS")
        let again = api.handle(method: "POST", path: "/simulator/orders/ctl-0001/pay", body: [])
        #expect(again.status == 409)
        #expect(api.handle(method: "POST", path: "/simulator/orders/none-01/pay", body: []).status == 404)
        #expect(json(api.handle(method: "GET", path: "/simulator/orders/ctl-0001", body: []).body)["transactionID"] != nil)
    }

    @Test func theFaultPlanAndTheClockCanBeSetOverTheControlAPI() throws {
        let harness = SimulatorHarness()
        let api = SimulatorControlAPI(simulator: harness.simulator)
        let plan = #"{"endpoints":{"/pay/orderquery":{"systemErrorRate":1}},"notify":{"dropRate":0.3}}"#
        #expect(api.handle(method: "PUT", path: "/simulator/faults", body: Array(plan.utf8)).status == 200)
        #expect(harness.simulator.faults.faults(for: "/pay/orderquery").systemErrorRate == 1)
        #expect(api.handle(method: "PUT", path: "/simulator/faults", body: Array("nope".utf8)).status == 400)
        let before = harness.clock.now()
        #expect(api.handle(method: "POST", path: "/simulator/clock/advance", body: Array(#"{"seconds":300}"#.utf8)).status == 200)
        #expect(harness.clock.now().timeIntervalSince(before) == 300)
    }

    @Test("A fault plan with a member the simulator does not know, at any depth, a rate outside 0 to 1 or a member named twice is refused naming it, and the plan stays")
    func aFaultPlanWithAnUnknownMemberIsRefusedByName() {
        let harness = SimulatorHarness()
        let api = SimulatorControlAPI(simulator: harness.simulator)
        let plan = #"{"notify":{"dropRate":0.5}}"#
        #expect(api.handle(method: "PUT", path: "/simulator/faults", body: Array(plan.utf8)).status == 200)
        let cases = [
            (#"{"bogus":1}"#, "unknown member bogus"),
            (#"{"notify":{"droprate":1}}"#, "unknown member notify.droprate"),
            (#"{"v3Notify":{"probe":1}}"#, "unknown member v3Notify.probe"),
            (#"{"endpoints":{"/pay/orderquery":{"systemErrorRat":1}}}"#, "unknown member endpoints./pay/orderquery.systemErrorRat"),
            (#"{"notify":{"dropRate":"x"}}"#, "notify.dropRate has the wrong type"),
            // A rate is a probability, and a member named twice is not left to the decoder's choice.
            (#"{"notify":{"attemptDropRate":1.5}}"#, "notify.attemptDropRate must be a rate from 0 to 1"),
            (#"{"endpoints":{"*":{"resetRate":-0.1}}}"#, "endpoints.*.resetRate must be a rate from 0 to 1"),
            (#"{"v3Notify":{"probeRate":2}}"#, "v3Notify.probeRate must be a rate from 0 to 1"),
            (#"{"notify":{"attemptDropRate":0.1,"attemptDropRate":0.9}}"#, "invalid JSON (duplicate_key at byte 33)"),
        ]
        for (body, message) in cases {
            let answer = api.handle(method: "PUT", path: "/simulator/faults", body: Array(body.utf8))
            #expect(answer.status == 400, "\(body)")
            let error = json(answer.body)["error"] as? [String: Any]
            #expect((error?["message"] as? String)?.hasSuffix(message) == true, "\(body): \(String(decoding: answer.body, as: UTF8.self))")
        }
        #expect(harness.simulator.faults.notify.dropRate == 0.5)
    }

    @Test func refundsCompleteOverTheControlAPI() throws {
        let harness = SimulatorHarness()
        let api = SimulatorControlAPI(simulator: harness.simulator)
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("ctl-0002", fee: 500))
        try harness.simulator.pay(outTradeNo: "ctl-0002")
        _ = harness.call("/secapi/pay/refund", ["out_trade_no": "ctl-0002", "out_refund_no": "ctl-r1",
                                                "total_fee": "500", "refund_fee": "500"])
        let done = api.handle(method: "POST", path: "/simulator/refunds/ctl-r1/complete", body: Array(#"{"status":"SUCCESS"}"#.utf8))
        #expect(done.status == 200)
        let query = harness.call("/pay/refundquery", ["out_refund_no": "ctl-r1"])
        #expect(query["refund_status_0"] == "SUCCESS")
        #expect(query["refund_success_time_0"] != nil)
        #expect(api.handle(method: "POST", path: "/simulator/refunds/ctl-r1/complete", body: []).status == 409)
    }

    @Test func aClosedOrderIsPaidOnlyWhenThePaymentIsSaidToHaveRacedTheClose() {
        let harness = SimulatorHarness()
        let api = SimulatorControlAPI(simulator: harness.simulator)
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("ctl-0003"))
        harness.clock.advance(by: 301)
        #expect(harness.call("/pay/closeorder", ["out_trade_no": "ctl-0003"])["result_code"] == "SUCCESS")
        #expect(api.handle(method: "POST", path: "/simulator/orders/ctl-0003/pay", body: []).status == 409)
        let raced = api.handle(method: "POST", path: "/simulator/orders/ctl-0003/pay",
                               body: Array(#"{"afterClose":true}"#.utf8))
        #expect(raced.status == 200)
        #expect(json(raced.body)["state"] as? String == "SUCCESS")
        let query = harness.call("/pay/orderquery", ["out_trade_no": "ctl-0003"])
        #expect(query["trade_state"] == "SUCCESS")
        #expect(query["transaction_id"] == json(raced.body)["transactionID"] as? String)
        #expect(harness.simulator.pendingNotifies == 1)
        // Paid is final: neither form pays it twice.
        #expect(api.handle(method: "POST", path: "/simulator/orders/ctl-0003/pay",
                           body: Array(#"{"afterClose":true}"#.utf8)).status == 409)
    }

    @Test func everyOrderqueryAboutAnOrderIsListedWithItsTime() throws {
        let harness = SimulatorHarness()
        let api = SimulatorControlAPI(simulator: harness.simulator)
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("ctl-0004"))
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("ctl-0005"))
        let first = harness.clock.now().timeIntervalSince1970
        _ = harness.call("/pay/orderquery", ["out_trade_no": "ctl-0004"])
        harness.clock.advance(by: 2.5)
        _ = harness.call("/pay/orderquery", ["out_trade_no": "ctl-0004"])
        _ = harness.call("/pay/orderquery", ["out_trade_no": "ctl-0005"])
        _ = harness.call("/pay/orderquery", ["out_trade_no": "nobody-01"])
        let listed = api.handle(method: "GET", path: "/simulator/orderqueries", body: [])
        #expect(listed.status == 200)
        let times = try #require(try JSONSerialization.jsonObject(with: Data(listed.body)) as? [String: [Double]])
        #expect(times["ctl-0004"] == [first, first + 2.5])
        #expect(times["ctl-0005"] == [first + 2.5])
        #expect(times["nobody-01"] == nil)
    }

    @Test func unknownRoutesAreNotFound() {
        let api = SimulatorControlAPI(simulator: SimulatorHarness().simulator)
        #expect(api.handle(method: "GET", path: "/simulator/nothing", body: []).status == 404)
        #expect(api.handle(method: "DELETE", path: "/simulator/faults", body: []).status == 404)
    }
}
