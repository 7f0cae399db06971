// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay
@testable import WeChatPaySimulator

struct SimulatorFaultTests {
    func rawCall(_ harness: SimulatorHarness, _ path: String, _ fields: Fields) -> SimulatorResponse {
        var request: Fields = ["appid": SimulatorHarness.appID, "mch_id": SimulatorHarness.mchID,
                               "nonce_str": UUID().uuidString.replacingOccurrences(of: "-", with: "")]
        for field in fields { request[field.name] = field.value }
        request["sign"] = harness.signer.signature(for: request, type: .md5)
        return harness.simulator.handle(SimulatorRequest(path: path, body: try! FlatXML.encode(request)))
    }

    @Test func aSystemErrorComesAfterTheRequestTookEffect() throws {
        let harness = SimulatorHarness()
        harness.simulator.apply(FaultPlan(endpoints: ["/pay/unifiedorder": EndpointFaults(systemErrorRate: 1)]))
        let reply = harness.call("/pay/unifiedorder", SimulatorHarness.order("syserr-0001"))
        #expect(reply["err_code"] == "SYSTEMERROR")
        try harness.signer.verify(reply, expected: .md5)
        #expect(harness.simulator.order("syserr-0001")?.state == "NOTPAY")
        harness.simulator.apply(FaultPlan())
        #expect(harness.call("/pay/unifiedorder", SimulatorHarness.order("syserr-0001"))["result_code"] == "SUCCESS")
    }

    @Test func eachEndpointFaultChangesTheAnswerAsDescribed() throws {
        let harness = SimulatorHarness()
        func with(_ faults: EndpointFaults) -> SimulatorResponse {
            harness.simulator.apply(FaultPlan(endpoints: ["*": faults]))
            return rawCall(harness, "/pay/orderquery", ["out_trade_no": "whatever"])
        }
        #expect(with(EndpointFaults(resetRate: 1)).resetConnection)
        #expect(with(EndpointFaults(http5xxRate: 1)).status == 502)
        #expect(throws: FlatXMLError.self) { try FlatXML.decode(with(EndpointFaults(truncatedRate: 1)).body) }
        #expect(throws: FlatXMLError.invalidUTF8) { try FlatXML.decode(with(EndpointFaults(nonUTF8Rate: 1)).body) }
        let badSign = try FlatXML.decode(with(EndpointFaults(badSignatureRate: 1)).body)
        #expect(throws: SignatureError.mismatch) { try harness.signer.verify(badSign, expected: .md5) }
        let noSign = try FlatXML.decode(with(EndpointFaults(missingSignatureRate: 1)).body)
        #expect(noSign["sign"] == nil && noSign["return_code"] == "SUCCESS")
        #expect(with(EndpointFaults(latency: 0.5)).delay == 0.5)
        #expect(harness.simulator.counters.faultsInjected.count == 6)
    }

    @Test func theSameSeedReplaysTheSameFaults() {
        func run(seed: UInt64) -> [Int] {
            let harness = SimulatorHarness(seed: seed)
            harness.simulator.apply(FaultPlan(endpoints: ["*": EndpointFaults(http5xxRate: 0.5)]))
            return (0..<64).map { _ in rawCall(harness, "/pay/orderquery", ["out_trade_no": "x"]).status }
        }
        #expect(run(seed: 11) == run(seed: 11))
        #expect(run(seed: 11) != run(seed: 12))
        #expect(Set(run(seed: 11)) == [200, 502])
    }

    @Test func theInProcessTransportActsOutResetsAsTransportErrors() async throws {
        let harness = SimulatorHarness()
        harness.simulator.apply(FaultPlan(endpoints: ["*": EndpointFaults(resetRate: 1)]))
        let transport = SimulatorTransport(simulator: harness.simulator)
        await #expect(throws: TransportError(kind: .connectionReset, mayHaveBeenDelivered: true)) {
            _ = try await transport.send(TransportRequest(path: "/pay/orderquery", body: Array("<xml/>".utf8)))
        }
    }

    @Test func aTimeoutHoldsTheAnswerThenClosesTheConnectionAfterTheRequestTookEffect() async throws {
        let harness = SimulatorHarness()
        harness.simulator.apply(FaultPlan(endpoints: ["/pay/unifiedorder": EndpointFaults(timeoutRate: 1, timeoutSeconds: 20)]))
        let held = rawCall(harness, "/pay/unifiedorder", SimulatorHarness.order("timeout-0001"))
        #expect(held.timesOut && held.delay == 20)
        #expect(harness.simulator.order("timeout-0001")?.state == "NOTPAY", "the order exists at WeChat all the same")
        #expect(harness.simulator.counters.faultsInjected == ["timeout": 1])
        #expect(harness.simulator.counters.faultsByEndpoint == ["/pay/unifiedorder": ["timeout": 1]])

        // In process, the caller gets the timeout a client that stopped waiting reports.
        harness.simulator.apply(FaultPlan(endpoints: ["*": EndpointFaults(timeoutRate: 1, timeoutSeconds: 0.01)]))
        let transport = SimulatorTransport(simulator: harness.simulator)
        await #expect(throws: TransportError(kind: .timeout, mayHaveBeenDelivered: true)) {
            _ = try await transport.send(TransportRequest(path: "/pay/orderquery", body: Array("<xml/>".utf8)))
        }
    }

    @Test func anAnswerAboutAnotherOrderIsSignedAndNamesAPaidOtherOrder() throws {
        let harness = SimulatorHarness()
        #expect(harness.call("/pay/unifiedorder", SimulatorHarness.order("asked-0001", fee: 100))["result_code"] == "SUCCESS")
        #expect(harness.call("/pay/unifiedorder", SimulatorHarness.order("other-0001", fee: 250))["result_code"] == "SUCCESS")
        let paid = try harness.simulator.pay(outTradeNo: "other-0001")

        // With no other order to tell about, there is nothing to mix up: the answer is the true one.
        harness.simulator.apply(FaultPlan(endpoints: ["*": EndpointFaults(otherOrderRate: 1)]))
        let created = harness.call("/pay/unifiedorder", SimulatorHarness.order("asked-0001", fee: 100))
        #expect(created["prepay_id"] != nil && created["out_trade_no"] == nil, "unifiedorder answers name no order")

        let reply = harness.call("/pay/orderquery", ["out_trade_no": "asked-0001"])
        try harness.signer.verify(reply, expected: .md5)
        #expect(reply["out_trade_no"] == "other-0001")
        #expect(reply["trade_state"] == "SUCCESS" && reply["transaction_id"] == paid.transactionID)
        #expect(reply["total_fee"] == "250" && reply["result_code"] == "SUCCESS")
        #expect(harness.simulator.order("asked-0001")?.state == "NOTPAY")
        #expect(harness.simulator.counters.faultsInjected == ["other_order": 1])
        #expect(harness.simulator.orderQueryTimes["other-0001"] == nil, "the other order was not asked about")
    }

    @Test func businessFailuresAreCountedByErrorCodeApartFromInjectedOnes() {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("used-0001", fee: 100))
        #expect(harness.call("/pay/unifiedorder", SimulatorHarness.order("used-0001", fee: 101))["err_code"] == "OUT_TRADE_NO_USED")
        #expect(harness.call("/pay/orderquery", ["out_trade_no": "nobody"])["err_code"] == "ORDERNOTEXIST")
        harness.simulator.apply(FaultPlan(endpoints: ["*": EndpointFaults(systemErrorRate: 1)]))
        #expect(harness.call("/pay/orderquery", ["out_trade_no": "used-0001"])["err_code"] == "SYSTEMERROR")
        #expect(harness.simulator.counters.businessFailures == ["OUT_TRADE_NO_USED": 1, "ORDERNOTEXIST": 1])
        #expect(harness.simulator.counters.faultsInjected == ["systemerror": 1])
    }

    @Test func aWrittenFaultPlanTakesTheTimeoutAndOtherOrderKeys() throws {
        let plan = try JSONDecoder().decode(FaultPlan.self, from: Data("""
            {"endpoints":{"*":{"timeoutRate":0.5,"otherOrderRate":0.25},"/pay/orderquery":{"timeoutRate":1,"timeoutSeconds":3}}}
            """.utf8))
        #expect(plan.endpoints["*"] == EndpointFaults(timeoutRate: 0.5, otherOrderRate: 0.25))
        #expect(plan.endpoints["*"]?.timeoutSeconds == 15)
        #expect(plan.endpoints["/pay/orderquery"] == EndpointFaults(timeoutRate: 1, timeoutSeconds: 3))
    }
}
