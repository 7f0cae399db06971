// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import Observability
import StorageCore
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// What the battery's T3 (upstream faults) and T8 (polling under churn) found, one behaviour each:
/// every kind of upstream fault ends in the truth or a typed retryable error with `retry_after`;
/// an answer about another order settles nothing; a close answers an outcome, not "still open";
/// and WeChat hears about an order at most once per poll interval, waits and sweeps together.
struct UpstreamFaultTests {
    /// Each fault the simulator injects, at rate 1 on unifiedorder (timeouts held briefly: in
    /// process the transport reports the timeout a client that stopped waiting gets).
    static let createFaults: [(String, EndpointFaults)] = [
        ("reset", EndpointFaults(resetRate: 1)),
        ("timeout", EndpointFaults(timeoutRate: 1, timeoutSeconds: 0.01)),
        ("HTTP 502", EndpointFaults(http5xxRate: 1)),
        ("SYSTEMERROR", EndpointFaults(systemErrorRate: 1)),
        ("truncated XML", EndpointFaults(truncatedRate: 1)),
        ("non-UTF-8 XML", EndpointFaults(nonUTF8Rate: 1)),
        ("wrong signature", EndpointFaults(badSignatureRate: 1)),
        ("missing signature", EndpointFaults(missingSignatureRate: 1)),
    ]

    @Test(arguments: createFaults.map(\.0))
    func aCreateThatKeepsMeetingAnUpstreamFaultIsA503WithRetryAfterAndItsRetryCreatesTheOrderOnce(fault: String)
        async throws
    {
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        let faults = try #require(Self.createFaults.first { $0.0 == fault }?.1)
        rig.simulator.apply(FaultPlan(endpoints: ["/pay/unifiedorder": faults]))
        let failed = try await rig.createOrder("fault-0001")
        #expect(failed.status == 503)
        #expect(failed.error?["code"] as? String == "upstream_unavailable")
        #expect(failed.error?["retry_after"] as? Int == 1)
        #expect(failed.headers["Retry-After"] == "1")
        #expect(rig.simulator.counters.requests["/pay/unifiedorder"] == Upstream.attempts)

        // The client retries the same body: the same order, the same parameters, one prepay_id.
        rig.simulator.apply(FaultPlan())
        let retried = try await rig.createOrder("fault-0001")
        #expect(retried.status == 200)
        let prepay = try #require(retried.json["prepay_id"] as? String)
        #expect(rig.simulator.order("fault-0001")?.prepayID == prepay)
        let sent = rig.simulator.requests.filter { $0.path == "/pay/unifiedorder" }
        #expect(sent.count == Upstream.attempts + 1)
        #expect(Set(sent.map { $0.fields.elements.filter { !["nonce_str", "sign"].contains($0.name) }
            .map { "\($0.name)=\($0.value)" } }).count == 1, "every attempt had the same parameters")
        #expect(rig.simulator.counters.businessFailures["OUT_TRADE_NO_USED"] == nil)
        let events = try await rig.store.events("fault-0001")
        #expect(events.filter { $0.kind == "created" }.count == 1)
        #expect(events.filter { $0.kind == "prepay" }.count == 1)
    }

    @Test func anOrderqueryAnswerAboutAnotherPaidOrderSettlesNothingAndCountsAsAMismatch() async throws {
        let harness = try await GatewayRig.start(.inProcess, pollInterval: 0.05)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body("asked-0001"))
        _ = try await harness.create(Self.body("other-0001"))
        try harness.simulator.pay(outTradeNo: "other-0001")
        #expect(await eventually { (try? await harness.store.order("other-0001"))?.state == .success })

        harness.simulator.apply(FaultPlan(endpoints: ["/pay/orderquery": EndpointFaults(otherOrderRate: 1)]))
        let answer = try await harness.order("asked-0001", wait: 0.5)
        #expect(answer.string("state") == "NOTPAY")
        #expect(try await harness.store.order("asked-0001")?.state == .notPay)
        // The wait may answer while its last poll is still in flight: the counts are compared once
        // every answer WeChat gave has been counted.
        func mismatches() -> Double {
            harness.metrics.counter("wxpay_upstream_calls_total", ["api": "orderquery", "outcome": "answer_mismatch"])
        }
        #expect(await eventually {
            mismatches() >= 1 && Double(harness.simulator.counters.faultsInjected["other_order"] ?? 0) == mismatches()
        })
        // The timeline's entry follows the call's metric (after the call's last attempt).
        func failed() async -> [OrderEvent] {
            ((try? await harness.store.events("asked-0001")) ?? []).filter { $0.kind == "orderquery_failed" }
        }
        #expect(await eventually { await !failed().isEmpty })
        #expect(await failed().allSatisfy { $0.detail.contains("answer_mismatch") })
    }

    @Test func aCloseWhoseOrderpaidCannotBeConfirmedYetIsRetryableAndTheRetryAnswersSuccess() async throws {
        let harness = try await GatewayRig.start(.inProcess, clockScale: 0)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body("close-0001"))
        harness.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        try harness.simulator.pay(outTradeNo: "close-0001")
        harness.clock.advance(by: OrderClosing.minimumAgeToClose + 1)

        // closeorder answers ORDERPAID; the orderquery that must confirm it fails.
        harness.simulator.apply(FaultPlan(endpoints: ["/pay/orderquery": EndpointFaults(systemErrorRate: 1)],
                                          notify: NotifyFaults(dropRate: 1)))
        do {
            let answer = try await harness.services.closing.close("close-0001")
            Issue.record("the close answered \(GatewayRig.object(answer)) before WeChat confirmed anything")
        } catch {
            #expect(error.code == "upstream_unavailable" && error.status == 503 && error.retryAfter == 1)
        }
        #expect(try await harness.store.order("close-0001")?.state == .notPay)

        harness.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        let retried = GatewayRig.object(try await harness.services.closing.close("close-0001"))
        #expect(retried.string("state") == "SUCCESS")
    }

    @Test func aCloseOfAnUnpaidOrderAnswersClosed() async throws {
        let harness = try await GatewayRig.start(.inProcess, clockScale: 0)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body("close-0002"))
        harness.clock.advance(by: OrderClosing.minimumAgeToClose + 1)
        // The first closeorder took effect but its answer was lost: the retry hears ORDERCLOSED.
        harness.simulator.apply(FaultPlan(endpoints: ["/pay/closeorder": EndpointFaults(resetRate: 1)]))
        await #expect(throws: APIError.upstreamUnavailable) { _ = try await harness.services.closing.close("close-0002") }
        harness.simulator.apply(FaultPlan())
        #expect(GatewayRig.object(try await harness.services.closing.close("close-0002")).string("state") == "CLOSED")
    }

    @Test func aSweepAndTheWaitsAskWeChatAboutAnOrderAtMostOncePerPollInterval() async throws {
        // The longest poll interval there is: the pacing runs in real time, and on a machine at load
        // 70 this test once took longer than 30 s, so the recheck's query was not the only new one.
        // The gateway's clock is frozen: the sweep's leases (4.5 s of it) run out only when the test
        // moves it, never because a loaded machine was slow (a CI run once skipped an order so).
        let harness = try await GatewayRig.start(.inProcess, pollInterval: 60, clockScale: 0)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body("paced-0001"))
        _ = try await harness.create(Self.body("paced-0002"))
        harness.clock.advance(by: 1)
        let reconciler = Reconciler(services: harness.services,
                                    configuration: .init(interval: 5, after: 0, concurrency: 2, rate: 1000))
        func queries(_ number: String) -> Int { harness.simulator.orderQueryTimes[number]?.count ?? 0 }

        // A wait asks at once; a sweep right after leaves that order alone and asks about the other.
        // (The wait may answer before its poll reaches WeChat on a loaded machine.)
        _ = try await harness.order("paced-0001", wait: 0.2)
        #expect(await eventually { queries("paced-0001") == 1 })
        let report = await reconciler.sweep()
        #expect(report.checked == 2 && report.errors == 0 && report.skipped == 0)
        #expect(queries("paced-0001") == 1)
        #expect(queries("paced-0002") == 1)
        // A wait right after the sweep's query does not ask again either, nor does the next sweep
        // (once the first one's leases have run out on the gateway's clock).
        _ = try await harness.order("paced-0002", wait: 0.2)
        harness.clock.advance(by: 5)
        #expect(await reconciler.sweep().checked == 2)
        #expect(queries("paced-0001") == 1 && queries("paced-0002") == 1)

        // News is not paced: support's recheck asks now.
        _ = try await harness.services.support.recheck("paced-0001")
        #expect(queries("paced-0001") == 2)
    }

    static func body(_ outTradeNo: String) -> String {
        #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)"}"#
    }
}
