// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import SQLiteStore
import StorageCore
import WeChatPay
import WeChatPaySimulator

/// `wxpay-bench reconcile [orders] [sweepers]`: T7's shape. Orders are created through the gateway
/// against the in-process simulator, 6 % are paid with every notify dropped, and several sweepers
/// sweep the same SQLite store at once, unthrottled, so the figure is the gateway's own cost per
/// checked order (a real sweep is paced by GATEWAY_RECONCILE_RATE).
enum ReconcileBenchmark {
    static func run(_ arguments: [String]) async {
        let orders = arguments.first.flatMap(Int.init) ?? 10_000
        let sweeperCount = arguments.dropFirst().first.flatMap(Int.init) ?? 4
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-reconcile-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let configuration = GatewayConfiguration.demo()
            let store = try await SQLiteOrderStore.open(path: directory.appendingPathComponent("orders.sqlite").path)
            let clock = ScaledClock(start: Date(), scale: 1)
            let simulator = WeChatPaySimulator(
                configuration: SimulatorConfiguration(appID: configuration.appID, mchID: configuration.mchID,
                                                      key: APIKey(GatewayConfiguration.demoKey)),
                clock: clock, notifySender: ClosureNotifySender { _, _ in nil })
            simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
            let services = GatewayServices(GatewayContext(configuration: configuration, store: store,
                                                          transport: SimulatorTransport(simulator: simulator),
                                                          now: { clock.now() }))
            let creation = services.creation
            let setupStart = ContinuousClock.now
            for index in 0..<orders {
                let body = #"{"amount":990,"description":"bench","client_ip":"203.0.113.7","out_trade_no":"bench-\#(index)"}"#
                _ = try await creation.create(try CreateOrderInput(json: Array(body.utf8)))
                if index % 50 < 3 { try simulator.pay(outTradeNo: "bench-\(index)") }
            }
            let paid = (0..<orders).filter { $0 % 50 < 3 }.count
            print("setup: \(orders) orders created, \(paid) paid with the notify dropped, in "
                + formatted((ContinuousClock.now - setupStart).seconds, decimals: 1) + " s")
            clock.advance(by: 120)

            let pacing = Reconciler.Configuration(interval: 600, after: 60, concurrency: 8, rate: 1_000_000)
            let sweepers = (0..<sweeperCount).map { Reconciler(services: services, configuration: pacing, claimant: "bench-\($0)") }
            let cpuBefore = cpuSeconds()
            let started = ContinuousClock.now
            let reports = await withTaskGroup(of: SweepReport.self) { group in
                for sweeper in sweepers { group.addTask { await sweeper.sweep() } }
                var reports: [SweepReport] = []
                for await report in group { reports.append(report) }
                return reports
            }
            let elapsed = (ContinuousClock.now - started).seconds
            let cpu = cpuSeconds() - cpuBefore
            let checked = reports.map(\.checked).reduce(0, +)
            let settled = reports.map(\.settled).reduce(0, +)
            let queries = simulator.counters.requests["/pay/orderquery"] ?? 0
            var success = 0
            for index in 0..<orders where index % 50 < 3 {
                if try await store.order("bench-\(index)")?.state == .success { success += 1 }
            }
            print("sweep: \(sweeperCount) sweepers, claimed \(reports.map(\.claimed)), checked \(checked), settled \(settled)")
            print("       \(formatted(elapsed, decimals: 2)) s wall, \(formatted(Double(checked) / elapsed, decimals: 0)) orders/s, "
                + "\(formatted(cpu * 1e6 / Double(max(checked, 1)), decimals: 0)) µs CPU per checked order (gateway + simulator)")
            print("check: orderquery calls \(queries) for \(orders) orders (each at most once: \(queries <= orders)); "
                + "paid orders SUCCESS \(success)/\(paid)")
            await store.close()
        } catch {
            print("reconcile benchmark failed: \(error)")
        }
    }

    private static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
