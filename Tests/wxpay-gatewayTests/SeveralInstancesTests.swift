// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import StoreTestSupport
import TestSupport
import Testing

/// Two and three real gateway processes on one PostgreSQL database, WeChat played by a separate
/// simulator process: what a deployment of several instances behind a load balancer relies on.
// Serialized: each test runs three or four processes; all at once would crowd a shared machine.
@Suite(.serialized, .enabled(if: TestPostgres.url != nil, "needs WXPAY_TEST_POSTGRES (scripts/test starts a server)"))
struct SeveralInstancesTests {
    /// A held wait is answered by its instance as soon as another instance settled the order:
    /// created on A, WeChat's notify posted to B, the wait on A woken through LISTEN/NOTIFY. The
    /// poll interval is 60 s and the wait 30 s, so nothing but the wake-up can answer it SUCCESS.
    @Test(.timeLimit(.minutes(3)))
    func aWaitOnOneInstanceIsAnsweredByANotifySettledOnAnother() async throws {
        let cluster = try await GatewayCluster.start(2, notifyTo: [1, 1], environment: ["GATEWAY_POLL_INTERVAL": "60"])
        do {
            #expect(try await cluster.create(on: 0, "multi-0001").status == 201)
            let waiting = Task { try await cluster.order(on: 0, "multi-0001", wait: 30) }
            try await cluster.heldWithItsFirstPollAnswered(on: 0)
            try await cluster.pay("multi-0001")
            let answer = try await waiting.value
            #expect(answer.status == 200)
            #expect(answer.json["state"] as? String == "SUCCESS")
            #expect(try await cluster.metric(on: 1, #"wxpay_notifies_total{channel="app",outcome="settled"}"#) == 1)
            #expect(try await cluster.metric(on: 0, "wxpay_notifies_total") == 0)
            // The one orderquery is the wait's first, before the payment.
            #expect(try await cluster.orderqueries("multi-0001").count == 1)
            // B answers the same truth.
            #expect(try await cluster.order(on: 1, "multi-0001").json["state"] as? String == "SUCCESS")
        } catch {
            await cluster.stop()
            throw error
        }
        await cluster.stop()
    }

    /// Three instances: created on A, waited on from B, WeChat's notify posted to C.
    @Test(.timeLimit(.minutes(3)))
    func anOrderCreatedOnAWaitedOnFromBIsSettledByANotifyToC() async throws {
        let cluster = try await GatewayCluster.start(3, notifyTo: [2, 2, 2], environment: ["GATEWAY_POLL_INTERVAL": "60"])
        do {
            #expect(try await cluster.create(on: 0, "multi-0002").status == 201)
            let waiting = Task { try await cluster.order(on: 1, "multi-0002", wait: 30) }
            try await cluster.heldWithItsFirstPollAnswered(on: 1)
            try await cluster.pay("multi-0002")
            #expect(try await waiting.value.json["state"] as? String == "SUCCESS")
            #expect(try await cluster.metric(on: 2, #"wxpay_notifies_total{channel="app",outcome="settled"}"#) == 1)
        } catch {
            await cluster.stop()
            throw error
        }
        await cluster.stop()
    }

    /// 60 identical creates at once, spread over three instances: one order, one unifiedorder, and
    /// every answer carries the same prepay_id and app parameters.
    @Test(.timeLimit(.minutes(3)))
    func identicalCreatesSpreadOverThreeInstancesMakeOneOrderAndOneUpstreamCall() async throws {
        let cluster = try await GatewayCluster.start(3)
        do {
            let answers = try await withThrowingTaskGroup(of: Exchange.self) { group in
                for attempt in 0..<60 {
                    group.addTask { try await cluster.create(on: attempt % 3, "multi-0003") }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.filter { $0.status == 201 }.count == 1)
            #expect(answers.filter { $0.status == 200 }.count == 59)
            let prepays = Set(answers.compactMap { $0.json["prepay_id"] as? String })
            #expect(prepays.count == 1)
            let parameters = Set(answers.compactMap { ($0.json["app_params"] as? [String: Any])?["sign"] as? String })
            #expect(parameters.count == 1)
            #expect(try await cluster.wechatRequests("/pay/unifiedorder") == 1)
        } catch {
            await cluster.stop()
            throw error
        }
        await cluster.stop()
    }

    /// 30 clients waiting on one unpaid order, ten on each of three instances, with a 1 s poll
    /// interval: WeChat is asked at most once per interval in all (without the shared claim it
    /// would be once per interval per instance).
    @Test(.timeLimit(.minutes(3)))
    func clientsWaitingOnThreeInstancesCauseOneOrderqueryPerPollInterval() async throws {
        let cluster = try await GatewayCluster.start(3, environment: ["GATEWAY_POLL_INTERVAL": "1"])
        do {
            #expect(try await cluster.create(on: 0, "multi-0004").status == 201)
            let answers = try await withThrowingTaskGroup(of: Exchange.self) { group in
                for client in 0..<30 {
                    group.addTask { try await cluster.order(on: client % 3, "multi-0004", wait: 6) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.status == 200 && $0.json["state"] as? String == "NOTPAY" })
            let queries = try await cluster.orderqueries("multi-0004")
            let span = (queries.last ?? 0) - (queries.first ?? 0)
            // Claims are at least an interval apart; arrivals at WeChat jitter by the calls' latency.
            #expect(queries.count >= 2)
            #expect(Double(queries.count) <= span / 1 + 2, "\(queries.count) orderqueries in \(span) s")
            let queried = try await (0..<3).asyncSum { try await cluster.metric(on: $0, #"wxpay_wait_polls_total{outcome="queried"}"#) }
            let left = try await (0..<3).asyncSum { try await cluster.metric(on: $0, #"wxpay_wait_polls_total{outcome="claimed_elsewhere"}"#) }
            #expect(queried == Double(queries.count))
            #expect(left > 0, "no instance ever found the claim taken by another")
        } catch {
            await cluster.stop()
            throw error
        }
        await cluster.stop()
    }
}

extension GatewayCluster {
    /// Waits until the instance holds one wait and has its first orderquery's answer (unpaid): a
    /// payment made after this reaches the gateway only by WeChat's notify.
    func heldWithItsFirstPollAnswered(on instance: Int) async throws {
        try #require(try await eventually { try await self.metric(on: instance, "wxpay_waits_open") == 1 })
        try #require(try await eventually { try await self.metric(on: instance, #"wxpay_upstream_calls_total{api="orderquery""#) >= 1 })
    }
}

extension Range<Int> {
    func asyncSum(_ value: (Int) async throws -> Double) async throws -> Double {
        var sum = 0.0
        for index in self { sum += try await value(index) }
        return sum
    }
}
