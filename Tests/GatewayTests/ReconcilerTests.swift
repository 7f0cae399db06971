// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import Observability
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

struct ReconcilerTests {
    /// A sweep every 0.2 s for orders 0.5 s without a notify, as the brief's short intervals.
    static let fast = ["GATEWAY_RECONCILE_INTERVAL": "0.2", "GATEWAY_RECONCILE_AFTER": "0.5"]

    static func order(_ outTradeNo: String, expiresIn: Int = 7200) -> String {
        #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)","expires_in":\#(expiresIn)}"#
    }

    static func dropAllNotifies(_ harness: GatewayRig) {
        harness.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
    }

    static func events(_ harness: GatewayRig, _ outTradeNo: String) async throws -> [OrderEvent] {
        try await harness.store.events(outTradeNo)
    }

    @Test(arguments: StoreKind.all) func aPaymentWhoseNotifyWasDroppedIsRecoveredByTheReconcilerAlone(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store, environment: Self.fast)
        defer { Task { await harness.stop() } }
        Self.dropAllNotifies(harness)
        _ = try await harness.create(Self.order("dropped-0001"))
        try harness.simulator.pay(outTradeNo: "dropped-0001")

        // Sweeps two seconds apart, each leasing its orders for 1.8 s: a sweeper starts no check
        // once its lease has run out, and the environment's 0.2 s (a 0.18 s lease) ran out before
        // every check on a machine loaded by the whole suite, twice, so nothing ever settled.
        let reconciler = Reconciler(services: harness.services, configuration: .init(interval: 2, after: 0.5))
        let sweeping = Task { await reconciler.run() }
        defer { sweeping.cancel() }
        let settled = await eventually(timeout: .seconds(120)) {
            (try? await harness.store.order("dropped-0001"))??.state == .success
        }
        #expect(settled)
        let order = try #require(try await harness.store.order("dropped-0001"))
        #expect(order.transactionID == harness.simulator.order("dropped-0001")?.transactionID)
        #expect(harness.simulator.counters.notifiesAcknowledged == 0)
        let events = try await Self.events(harness, "dropped-0001")
        #expect(events.contains { $0.kind == OrderEvent.stateChangedKind && $0.detail.contains("reconcile") })
        #expect(events.contains { $0.kind == "reconcile" && $0.detail.contains("trade_state=SUCCESS") })
        // The sweep records its metrics once every order of its batch is done.
        #expect(await eventually { harness.metrics.counter("wxpay_reconcile_orders_settled_total") == 1 })
        #expect(harness.metrics.counter("wxpay_reconcile_sweeps_total") >= 1)
        let outbox = try await harness.store.outboxEvents("dropped-0001")
        #expect(outbox.count == 1 && outbox.first?.type == "order.paid")
        #expect(harness.metrics.exposition().contains("wxpay_reconcile_lag_seconds"))
    }

    @Test(arguments: StoreKind.all) func anOrderIsNotAskedAboutBeforeItHasGoneWithoutANotifyForTheConfiguredTime(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store, environment: ["GATEWAY_RECONCILE_AFTER": "60"])
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.order("young-0001"))
        let reconciler = Reconciler(services: harness.services)
        #expect(await reconciler.sweep().claimed == 0)
        #expect(harness.simulator.counters.requests["/pay/orderquery"] == nil)
        harness.clock.advance(by: 61)
        let report = await reconciler.sweep()
        #expect(report.claimed == 1 && report.checked == 1 && report.settled == 0)
        #expect(harness.simulator.counters.requests["/pay/orderquery"] == 1)
        #expect(try await harness.store.order("young-0001")?.state == .notPay)
    }

    @Test(arguments: StoreKind.all) func anExpiredOrderPaidWithItsNotifyDroppedIsClosedGetsORDERPAIDAndEndsSuccess(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store, environment: Self.fast)
        defer { Task { await harness.stop() } }
        Self.dropAllNotifies(harness)
        _ = try await harness.create(Self.order("expired-paid", expiresIn: 300))
        _ = try await harness.create(Self.order("expired-unpaid", expiresIn: 300))
        try harness.simulator.pay(outTradeNo: "expired-paid")
        harness.clock.advance(by: 400)

        // A long period (so a long lease): on a loaded machine the sweep must not run out of lease.
        let configuration = Reconciler.Configuration(interval: 30, after: 0.5)
        let report = await Reconciler(services: harness.services, configuration: configuration).sweep()
        #expect(report.claimed == 2)
        #expect(report.settled == 1)
        #expect(report.closed == 1)
        #expect(try await harness.store.order("expired-paid")?.state == .success)
        #expect(try await harness.store.order("expired-unpaid")?.state == .closed)
        #expect(harness.simulator.counters.requests["/pay/closeorder"] == 2)
        let events = try await Self.events(harness, "expired-paid")
        let orderPaid = try #require(events.firstIndex { $0.detail.contains("closeorder answered ORDERPAID") })
        let settled = try #require(events.firstIndex { $0.kind == OrderEvent.stateChangedKind })
        // Settled only after the verified orderquery that followed ORDERPAID.
        #expect(orderPaid < settled)
        #expect(events[settled].detail.contains("NOTPAY -> SUCCESS"))
    }

    @Test(arguments: StoreKind.all) func aPaymentArrivingAfterALocalCloseIsStillRecordedAndFlagged(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store, environment: Self.fast)
        defer { Task { await harness.stop() } }
        Self.dropAllNotifies(harness)
        _ = try await harness.create(Self.order("late-0001"))
        // Closed locally (e.g. WeChat said ORDERCLOSED earlier) although the user pays after all.
        let record = try #require(try await harness.store.order("late-0001"))
        _ = try await harness.services.context.settlement.close(record, detail: "test: closed locally")
        try harness.simulator.pay(outTradeNo: "late-0001")
        let closed = try #require(try await harness.store.order("late-0001"))
        let response = try await harness.services.context.upstream.queryOrder(closed)
        _ = await harness.services.context.settlement.apply(response, to: closed, source: "reconcile")
        let order = try #require(try await harness.store.order("late-0001"))
        #expect(order.state == .success)
        #expect(order.flags.contains(.paidAfterClose))
    }

    @Test(arguments: StoreKind.all) func severalSweepersAtOnceQueryEachOrderAtMostOncePerSweep(store: StoreKind) async throws {
        // Frozen: the second round must come inside the first round's lease (27 s of the clock),
        // which a first round slowed by the whole suite outlasted in real time.
        let harness = try await GatewayRig.start(.inProcess, store: store, clockScale: 0)
        defer { Task { await harness.stop() } }
        Self.dropAllNotifies(harness)
        let numbers = (0..<30).map { String(format: "multi-%04d", $0) }
        for number in numbers { _ = try await harness.create(Self.order(number)) }
        for number in numbers.prefix(10) { try harness.simulator.pay(outTradeNo: number) }
        harness.clock.advance(by: 120)

        let configuration = Reconciler.Configuration(interval: 30, after: 60, concurrency: 4, rate: 2000)
        let sweepers = (0..<4).map { Reconciler(services: harness.services, configuration: configuration, claimant: "s\($0)") }
        let reports = await withTaskGroup(of: SweepReport.self) { group in
            for sweeper in sweepers { group.addTask { await sweeper.sweep() } }
            var reports: [SweepReport] = []
            for await report in group { reports.append(report) }
            return reports
        }
        #expect(reports.map(\.claimed).reduce(0, +) == 30)
        #expect(reports.map(\.settled).reduce(0, +) == 10)
        var queries: [String: Int] = [:]
        for request in harness.simulator.requests where request.path == "/pay/orderquery" {
            queries[request.fields["out_trade_no"] ?? "", default: 0] += 1
        }
        #expect(queries.count == 30)
        #expect(queries.values.allSatisfy { $0 == 1 })
        for number in numbers {
            let state = try await harness.store.order(number)?.state
            #expect(state == (numbers.prefix(10).contains(number) ? .success : .notPay))
        }
        // A second round inside the same period finds every order leased.
        let again = await sweepers[0].sweep()
        #expect(again.claimed == 0)
    }

    @Test(arguments: StoreKind.all) func aBacklogLargerThanOneBatchRotatesSoANewerPaidOrderIsNotStarved(store: StoreKind) async throws {
        // Frozen: on a loaded machine nine paced calls can outlast a real-time 0.9 s lease.
        let harness = try await GatewayRig.start(.inProcess, store: store, clockScale: 0)
        defer { Task { await harness.stop() } }
        Self.dropAllNotifies(harness)
        let numbers = (0..<20).map { String(format: "backlog-%02d", $0) }
        for number in numbers {
            _ = try await harness.create(Self.order(number))
            harness.clock.advance(by: 1)
        }
        try harness.simulator.pay(outTradeNo: "backlog-19")
        harness.clock.advance(by: 120)
        // 9 orders per sweep (rate 10/s over a 0.9 s lease), 20 unpaid or paid orders waiting.
        let configuration = Reconciler.Configuration(interval: 1, after: 60, concurrency: 1, rate: 10)
        let reconciler = Reconciler(services: harness.services, configuration: configuration)
        #expect(configuration.batchLimit == 9)
        var sweeps = 0
        while sweeps < 3, try await harness.store.order("backlog-19")?.state != .success {
            // A fresh period with the clock frozen for the sweep: every lease taken has run out.
            harness.clock.advance(by: 2)
            let report = await reconciler.sweep()
            #expect(report.skipped == 0)
            sweeps += 1
        }
        // Three sweeps of nine cover all twenty (the third fills up with the least recently
        // checked); checking only the oldest nine again would never get there.
        #expect(sweeps == 3)
        #expect(try await harness.store.order("backlog-19")?.state == .success)
        var queries: [String: Int] = [:]
        for request in harness.simulator.requests where request.path == "/pay/orderquery" {
            queries[request.fields["out_trade_no"] ?? "", default: 0] += 1
        }
        #expect(queries.count == 20)
        #expect(queries.values.reduce(0, +) == 27)
        #expect(queries.values.allSatisfy { $0 <= 2 })
    }

    @Test(arguments: StoreKind.all) func aSweepWhoseCallsKeepFailingStopsEarlyAndLeavesTheRestForLater(store: StoreKind) async throws {
        // Time frozen: five failing calls (each retried) can outlast the 27 s lease on a loaded
        // machine, and then the second sweeper rightly takes the failed orders too.
        let harness = try await GatewayRig.start(.inProcess, store: store, clockScale: 0)
        defer { Task { await harness.stop() } }
        for index in 0..<15 { _ = try await harness.create(Self.order("failing-\(index)")) }
        harness.clock.advance(by: 120)
        harness.simulator.apply(FaultPlan(endpoints: ["/pay/orderquery": EndpointFaults(http5xxRate: 1)]))
        let configuration = Reconciler.Configuration(interval: 30, after: 60, concurrency: 1, rate: 2000, failureLimit: 5)
        let reconciler = Reconciler(services: harness.services, configuration: configuration)
        let report = await reconciler.sweep()
        #expect(report.claimed == 15)
        #expect(report.errors == 5)
        #expect(report.skipped == 10)
        #expect(harness.metrics.counter("wxpay_reconcile_errors_total", ["stage": "orderquery", "error": "http_status"]) == 5)
        // Skipped orders were released: once WeChat answers again, another sweeper takes them now.
        harness.simulator.apply(FaultPlan())
        let other = Reconciler(services: harness.services, configuration: configuration, claimant: "other")
        let next = await other.sweep()
        #expect(next.claimed == 10)
        #expect(next.errors == 0)
        let events = try await Self.events(harness, "failing-0")
        #expect(events.contains { $0.kind == "reconcile_failed" })
    }

    @Test(arguments: StoreKind.all) func theRateLimitSpacesCallsToWeChat(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        for index in 0..<6 { _ = try await harness.create(Self.order("paced-\(index)")) }
        harness.clock.advance(by: 120)
        let configuration = Reconciler.Configuration(interval: 60, after: 60, concurrency: 6, rate: 10)
        let started = ContinuousClock.now
        let report = await Reconciler(services: harness.services, configuration: configuration).sweep()
        let elapsed = ContinuousClock.now - started
        #expect(report.checked == 6)
        // Six calls at 10 per second need at least five gaps of 0.1 s (a lower bound only).
        #expect(elapsed >= .milliseconds(480))
    }

    @Test func theRecoveryVariablesHaveDefaultsAndRefuseNonsense() throws {
        let defaults = GatewayConfiguration.demo()
        #expect(defaults.reconcileInterval == 30 && defaults.reconcileAfter == 60)
        #expect(defaults.reconcileConcurrency == 8 && defaults.reconcileRate == 50)
        #expect(defaults.fulfilment.url == nil && !defaults.billReconcile)
        let set = try GatewayConfiguration(environment: Environment([
            "GATEWAY_RECONCILE_INTERVAL": "0.2", "GATEWAY_RECONCILE_AFTER": "0.5", "GATEWAY_RECONCILE_CONCURRENCY": "2",
            "GATEWAY_RECONCILE_RATE": "5", "GATEWAY_FULFILMENT_URL": "https://shop.example/hooks/wxpay",
            "GATEWAY_FULFILMENT_SECRET": "0123456789abcdef", "GATEWAY_BILL_RECONCILE": "on",
        ]), demo: true)
        #expect(set.reconcileInterval == 0.2 && set.reconcileAfter == 0.5)
        #expect(set.reconcileConcurrency == 2 && set.reconcileRate == 5)
        #expect(set.fulfilment.url == "https://shop.example/hooks/wxpay" && set.billReconcile)
        #expect(try GatewayConfiguration(environment: Environment(["GATEWAY_RECONCILE_INTERVAL": "0"]), demo: true)
            .reconcileInterval == 0)
        let bad: [([String: String], String)] = [
            (["GATEWAY_RECONCILE_INTERVAL": "-1"], "GATEWAY_RECONCILE_INTERVAL"),
            (["GATEWAY_RECONCILE_CONCURRENCY": "0"], "GATEWAY_RECONCILE_CONCURRENCY"),
            (["GATEWAY_RECONCILE_RATE": "fast"], "GATEWAY_RECONCILE_RATE"),
            (["GATEWAY_FULFILMENT_URL": "ftp://shop.example/"], "GATEWAY_FULFILMENT_URL"),
            (["GATEWAY_FULFILMENT_URL": "https://shop.example/hooks"], "GATEWAY_FULFILMENT_SECRET"),
            (["GATEWAY_BILL_RECONCILE": "maybe"], "GATEWAY_BILL_RECONCILE"),
        ]
        for (environment, variable) in bad {
            do {
                _ = try GatewayConfiguration(environment: Environment(environment), demo: true)
                Issue.record("accepted \(environment)")
            } catch {
                #expect(error.variables == [variable])
                #expect(!error.description.contains("shop.example"))
            }
        }
    }
}
