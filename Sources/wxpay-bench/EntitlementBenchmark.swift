// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import SQLiteStore
import StorageCore
import WeChatPay
import WeChatPaySimulator

/// `wxpay-bench entitlements [payments] [reads] [concurrency] [rounds]`: entitlement reads of one
/// user with `payments` paid orders (monthly and yearly passes stacked, courses, a few refunded in
/// full) against plain order reads of one of them, in process, on one SQLite store, in the same
/// run: both through the flows the routes call (`EntitlementQueries.json`, `OrderQueries.order`),
/// `concurrency` tasks at a time, the two alternating round by round so a shared machine's noise
/// falls on both. The figure is the ratio of their medians.
enum EntitlementBenchmark {
    static let command = BenchmarkCommand(
        name: "entitlements", summary: "entitlement reads/s of a user with 100 payments against plain order reads",
        arguments: run)

    static func run(_ arguments: [String]) async {
        let payments = arguments.first.flatMap(Int.init) ?? 100
        let reads = arguments.dropFirst().first.flatMap(Int.init) ?? 20_000
        let concurrency = arguments.dropFirst(2).first.flatMap(Int.init) ?? 8
        let rounds = arguments.dropFirst(3).first.flatMap(Int.init) ?? 5
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-entitlements-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store: SQLiteOrderStore
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            store = try await SQLiteOrderStore.open(path: directory.appendingPathComponent("orders.sqlite").path)
        } catch {
            print("entitlements benchmark failed: \(error)")
            return
        }
        do {
            var configuration = GatewayConfiguration.demo()
            configuration.app.catalog = Catalog.demo
            let clock = ScaledClock(start: Date(), scale: 1)
            let simulator = WeChatPaySimulator(
                configuration: SimulatorConfiguration(appID: configuration.appID, mchID: configuration.mchID,
                                                      key: APIKey(GatewayConfiguration.demoKey)),
                clock: clock, notifySender: ClosureNotifySender { _, _ in nil })
            simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
            let services = GatewayServices(GatewayContext(configuration: configuration, store: store,
                                                          transport: SimulatorTransport(simulator: simulator),
                                                          now: { clock.now() }))
            // Bound as serve binds it: entitlements then read the products' terms on record once.
            if let refusal = try await configuration.app.catalog.bind(in: store, at: clock.now()) { throw refusal }
            // The user's history: mostly monthly passes, some yearly, some courses, an hour apart,
            // each settled through the door (the notify dropped, support's recheck asks WeChat).
            let products = ["vip-month", "vip-month", "vip-month", "vip-year", "swift-101", "vip-month", "swift-201", "vip-month"]
            for index in 0..<payments {
                let product = configuration.app.catalog.product(products[index % products.count])
                    ?? CatalogProduct(id: "missing", amount: 1, description: "missing")
                let body = #"{"amount":\#(product.amount),"description":"\#(product.description)","product_id":"\#(product.id)","client_ip":"203.0.113.7","user_id":"bench-user","out_trade_no":"bench-ent-\#(index)"}"#
                _ = try await services.creation.create(try CreateOrderInput(json: Array(body.utf8)))
                try simulator.pay(outTradeNo: "bench-ent-\(index)")
                _ = try await services.support.recheck("bench-ent-\(index)")
                clock.advance(by: 3600)
            }
            let paid = try await store.paidOrders(userID: "bench-user").count
            let sample = try await services.entitlements.json(of: "bench-user", owner: nil)
            print("setup: \(paid) paid orders of one user; entitlements answer \(sample.count) bytes")

            var entitlementRates: [Double] = []
            var orderRates: [Double] = []
            for _ in 0..<rounds {
                entitlementRates.append(try await rate(reads: reads, concurrency: concurrency) { _ in
                    _ = try await services.entitlements.json(of: "bench-user", owner: nil)
                })
                orderRates.append(try await rate(reads: reads, concurrency: concurrency) { index in
                    _ = try await services.queries.order("bench-ent-\(index % payments)")
                })
            }
            let entitlements = median(entitlementRates), orders = median(orderRates)
            print("in process, the flows the routes call:")
            print("entitlement reads: \(formatted(entitlements, decimals: 0))/s (rounds: \(entitlementRates.map { formatted($0, decimals: 0) }))")
            print("order reads:       \(formatted(orders, decimals: 0))/s (rounds: \(orderRates.map { formatted($0, decimals: 0) }))")
            print("ratio: \(formatted(entitlements / orders, decimals: 2))x (bar 0.5x), \(payments) payments, \(reads) reads × \(concurrency) tasks, \(rounds) rounds")
            try await overHTTP(services: services, payments: payments, reads: reads, rounds: rounds)
        } catch {
            print("entitlements benchmark failed: \(error)")
        }
        await store.close()
    }

    /// The same two reads as a client makes them: `GET /v1/users/{user_id}/entitlements` against
    /// `GET /v1/orders/{out_trade_no}`, each answered 200 by the gateway's routes on an HTTP server
    /// on 127.0.0.1, 32 keep-alive connections from `GatewayLoadGenerator` on a thread of its own,
    /// alternating round by round.
    private static func overHTTP(services: GatewayServices, payments: Int, reads: Int, rounds: Int) async throws {
        var router = HTTPRouter()
        GatewayAPI(services: services).register(in: &router)
        let server = HTTPServer(router: router, configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0))
        let address = try await server.start()
        let generator = GatewayLoadGenerator(host: "127.0.0.1", ports: [address.port], connections: 32, timeout: 300)
        let authorization = "Host: 127.0.0.1\r\nAuthorization: Bearer \(GatewayConfiguration.demoClientToken)\r\n\r\n"
        var entitlementRequests = GatewayLoadGenerator.Requests(), orderRequests = GatewayLoadGenerator.Requests()
        for index in 0..<reads {
            entitlementRequests.append("GET /v1/users/bench-user/entitlements HTTP/1.1\r\n\(authorization)".utf8)
            orderRequests.append("GET /v1/orders/bench-ent-\(index % payments) HTTP/1.1\r\n\(authorization)".utf8)
        }
        let entitlementAnswer = Array(#""entitlements":["#.utf8), orderAnswer = Array(#""out_trade_no":"bench-ent-"#.utf8)
        var entitlementRates: [Double] = []
        var orderRates: [Double] = []
        for _ in 0..<rounds {
            entitlementRates.append(try await rate(generator, entitlementRequests, answer: entitlementAnswer))
            orderRates.append(try await rate(generator, orderRequests, answer: orderAnswer))
        }
        await server.shutdown(gracePeriod: .seconds(2))
        let entitlements = median(entitlementRates), orders = median(orderRates)
        print("over HTTP, as clients ask (GET, 32 keep-alive connections):")
        print("entitlement reads: \(formatted(entitlements, decimals: 0))/s (rounds: \(entitlementRates.map { formatted($0, decimals: 0) }))")
        print("order reads:       \(formatted(orders, decimals: 0))/s (rounds: \(orderRates.map { formatted($0, decimals: 0) }))")
        print("ratio: \(formatted(entitlements / orders, decimals: 2))x (bar 0.5x), \(payments) payments, \(reads) requests, \(rounds) rounds")
    }

    /// Answers per second of one pass of `requests`, every one 200 with `answer` in its body; the
    /// generator blocks, so it runs on a thread of its own, off the gateway's.
    private static func rate(_ generator: GatewayLoadGenerator, _ requests: GatewayLoadGenerator.Requests,
                             answer: [UInt8]) async throws -> Double {
        let outcome = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<GatewayLoadGenerator.Outcome, any Error>) in
            let thread = Thread {
                continuation.resume(with: Result { try generator.run(requests) { status, body in
                    status == 200 && GatewayBench.contains(body, answer)
                } })
            }
            thread.start()
        }
        guard outcome.completed == requests.count else {
            throw GatewayLoadGenerator.Failed(description: "\(outcome.completed) of \(requests.count) answered: \(outcome.firstFailure ?? "timeout")")
        }
        return Double(outcome.completed) / outcome.seconds
    }

    /// Reads per second: `reads` calls of `body`, `concurrency` at a time.
    private static func rate(reads: Int, concurrency: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    var index = worker
                    while index < reads {
                        try await body(index)
                        index += concurrency
                    }
                }
            }
            try await group.waitForAll()
        }
        return Double(reads) / (ContinuousClock.now - started).seconds
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }
}
