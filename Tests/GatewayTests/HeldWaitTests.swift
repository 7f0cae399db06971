// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import Observability
import Synchronization
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// `wait` queries held as data (OrderQueries+Wait.swift): answered on a wake, at the deadline
/// whatever orderquery does, and by the HTTP server's shutdown, with no task per held wait.
struct HeldWaitTests {
    static func body(_ outTradeNo: String) -> String {
        #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)"}"#
    }

    /// Answers given through the callback API, by order of arrival.
    final class Answers: Sendable {
        private let list = Mutex<[OrderQueries.OrderAnswer]>([])
        func record(_ answer: OrderQueries.OrderAnswer) { list.withLock { $0.append(answer) } }
        var count: Int { list.withLock { $0.count } }
        var objects: [[String: Any]] {
            list.withLock { $0 }.map { answer in
                guard case .success(let body) = answer else { return [:] }
                return GatewayRig.object(body)
            }
        }
    }

    @Test(arguments: StoreKind.all) func aThousandHeldWaitsOutliveTheirCallersShareOneOrderqueryAndAreAllAnsweredByOneNotify(store: StoreKind) async throws {
        // Waits and poll interval far longer than a loaded machine needs to park a thousand waits.
        let harness = try await GatewayRig.start(.inProcess, store: store, pollInterval: 60)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body("held-0001"))
        let queriesBefore = harness.simulator.requests.filter { $0.path == "/pay/orderquery" }.count
        let answers = Answers()
        // `order(_:wait:answer:)` returns at once: no caller task stays behind for a held wait.
        for _ in 0..<1_000 {
            harness.services.queries.order("held-0001", wait: 600, answer: answers.record)
        }
        #expect(await eventually(timeout: .seconds(300)) { harness.services.context.signals.openWaits == 1_000 })
        #expect(harness.metrics.gauge("wxpay_waits_open") == 1_000)
        #expect(answers.count == 0)
        // No task is working for them either: the read and recheck queues have drained, and
        // their worker tasks retire when a queue is empty.
        #expect(await eventually {
            harness.services.queries.queryWork.reads.backlog == 0 && harness.services.queries.queryWork.rechecks.backlog == 0
        })
        #expect(harness.services.context.signals.openWaits == 1_000)
        // One orderquery for all of them (single-flight), then one per 60 s poll interval: parking a
        // thousand waits can outlast an interval on a loaded machine, so the check is the spacing
        // (arrivals, which load can shift: at least half an interval apart), not a count.
        #expect(await eventually { harness.simulator.requests.filter { $0.path == "/pay/orderquery" }.count > queriesBefore })
        let queried = harness.simulator.requests.filter { $0.path == "/pay/orderquery" }.map(\.at).dropFirst(queriesBefore)
        #expect(zip(queried, queried.dropFirst()).allSatisfy { $1.timeIntervalSince($0) >= 30 }, "\(queried)")

        try harness.simulator.pay(outTradeNo: "held-0001")
        #expect(await eventually(timeout: .seconds(300)) { answers.count == 1_000 })
        #expect(answers.objects.allSatisfy { $0["state"] as? String == "SUCCESS" && $0["final"] as? Bool == true })
        #expect(harness.metrics.gauge("wxpay_waits_open") == 0)
        #expect(harness.services.context.signals.openWaits == 0)
    }

    @Test(arguments: StoreKind.all) func aWaitAnswersAtItsDeadlineWhileOrderqueryHangs(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store, pollInterval: 0.2)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body("held-0002"))
        harness.simulator.apply(FaultPlan(endpoints: ["/pay/orderquery": EndpointFaults(latency: 60)]))
        let started = ContinuousClock.now
        let order = try await harness.order("held-0002", wait: 1)
        #expect(order.string("state") == "NOTPAY")
        #expect(order["final"] as? Bool == false)
        // Answered at its own deadline, long before the hanging orderquery's 60 s.
        #expect(ContinuousClock.now - started >= .seconds(1))
        #expect(ContinuousClock.now - started < .seconds(50))
    }

    @Test(arguments: StoreKind.all) func aWaitAnswersAtItsDeadlineWhenOrderqueryFails(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store, pollInterval: 0.2)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body("held-0003"))
        harness.simulator.apply(FaultPlan(endpoints: ["/pay/orderquery": EndpointFaults(http5xxRate: 1)]))
        let order = try await harness.order("held-0003", wait: 1)
        #expect(order.string("state") == "NOTPAY")
        #expect(order["final"] as? Bool == false)
        #expect(harness.metrics.gauge("wxpay_waits_open") == 0)
    }

    @Test(arguments: StoreKind.all) func anUnknownOrderAndAFinalOrderAreAnsweredWithoutHoldingAnything(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        await #expect(throws: APIError.self) { _ = try await harness.order("held-none", wait: 20) }
        _ = try await harness.create(Self.body("held-0004"))
        try harness.simulator.pay(outTradeNo: "held-0004")
        #expect(await eventually { (try? await harness.order("held-0004"))?.string("state") == "SUCCESS" })
        let started = ContinuousClock.now
        // A final order is answered at once, not at the end of its 120 s wait.
        #expect(try await harness.order("held-0004", wait: 120).string("state") == "SUCCESS")
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(harness.services.context.signals.openWaits == 0)
    }

    // MARK: - Over HTTP

    @Test(arguments: StoreKind.all) func aHeldWaitIsAnsweredWithTheRealStateWhenTheOrderIsPaidDuringShutdown(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store, pollInterval: 30)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body("held-0005"))
        let (server, base) = try await Self.serve(harness)
        let client = try HTTPClient()
        async let answer = client.execute(Self.waitRequest(base, "held-0005"))
        #expect(await eventually { harness.services.context.signals.openWaits == 1 })
        // Shutdown drains: the held wait still gets its answer, the real one, within the grace period.
        let stopping = Task { await server.shutdown(gracePeriod: .seconds(20)) }
        try harness.simulator.pay(outTradeNo: "held-0005")
        let response = try await answer
        #expect(response.status == 200)
        #expect(GatewayRig.object(response.body).string("state") == "SUCCESS")
        await stopping.value
        await client.shutdown()
    }

    @Test(arguments: StoreKind.all)
    func aHeldWaitStillHeldWhenTheGracePeriodEndsIsAnsweredWithTheOrderAsItStandsAndGivesItsPlaceBack(
        store: StoreKind
    ) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store, pollInterval: 30)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body("held-0006"))
        // A cancellation window no loaded machine outlasts: the answer is the wait's own.
        let (server, base) = try await Self.serve(harness, cancellationWindow: .seconds(60))
        let client = try HTTPClient()
        async let answer = client.execute(Self.waitRequest(base, "held-0006"))
        #expect(await eventually { harness.services.context.signals.openWaits == 1 })
        await server.shutdown(gracePeriod: .milliseconds(300))
        let response = try await answer
        #expect(response.status == 200)
        #expect(GatewayRig.object(response.body).string("state") == "NOTPAY")
        // Ended, not left to run out its 25 seconds after the server has gone.
        #expect(harness.services.context.signals.openWaits == 0)
        await client.shutdown()
    }

    @Test(arguments: StoreKind.all) func aHeldWaitThatCannotAnswerInTheCancellationWindowIsAnswered503(store: StoreKind)
        async throws
    {
        let harness = try await GatewayRig.start(.inProcess, store: store, pollInterval: 30)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body("held-0007"))
        let (server, base) = try await Self.serve(harness, cancellationWindow: .zero)
        let client = try HTTPClient()
        async let answer = client.execute(Self.waitRequest(base, "held-0007"))
        #expect(await eventually { harness.services.context.signals.openWaits == 1 })
        await server.shutdown(gracePeriod: .milliseconds(300))
        #expect(try await answer.status == 503)
        await client.shutdown()
    }

    static func serve(_ harness: GatewayRig, cancellationWindow: Duration = .seconds(2)) async throws -> (HTTPServer, String) {
        var router = HTTPRouter()
        GatewayAPI(services: harness.services).register(in: &router)
        var configuration = HTTPServerConfiguration()
        configuration.shutdownCancellationWindow = cancellationWindow
        let server = HTTPServer(router: router, configuration: configuration)
        let address = try await server.start()
        return (server, "http://127.0.0.1:\(address.port)")
    }

    static func waitRequest(_ base: String, _ outTradeNo: String) -> HTTPClientRequest {
        HTTPClientRequest(
            method: .get, url: "\(base)/v1/orders/\(outTradeNo)?wait=25",
            headers: HTTPHeaders([("Authorization", "Bearer \(GatewayConfiguration.demoClientToken)")]),
            timeouts: .init(connect: .seconds(5), total: .seconds(40)))
    }
}
