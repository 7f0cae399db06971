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
}
