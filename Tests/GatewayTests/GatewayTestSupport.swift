// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import Observability
import StorageCore
import StoreTestSupport
import Synchronization
import WeChatPay
import WeChatPaySimulator

/// A gateway order service wired to the in-process simulator, with a store of either kind on a
/// fresh database (a SQLite file in a temp directory, or a PostgreSQL schema of its own).
/// Notifies from the simulator go straight into `handleNotify`, as they would over HTTP.
final class GatewayHarness: Sendable {
    let services: GatewayServices
    let simulator: WeChatPaySimulator
    let clock: ScaledClock
    let store: TestStore
    let metrics: MetricsRegistry
    let database: TestDatabase
    private let notifyTask: Mutex<Task<Void, Never>?> = Mutex(nil)

    /// - Parameter clockScale: simulated seconds per real second (0 freezes the clock, so only
    ///   `clock.advance` moves it: for tests whose outcome must not depend on the machine's speed).
    static func make(store kind: StoreKind = .sqlite, signType: SignType = .hmacSHA256, pollInterval: Double = 0.2,
                     environment: [String: String] = [:], clockScale: Double = 1) async throws -> GatewayHarness {
        var env = environment
        env["GATEWAY_POLL_INTERVAL"] = String(pollInterval)
        var configuration = try GatewayConfiguration(environment: Environment(env), demo: true)
        // Demo mode takes no WXPAY_* variable; the tests' merchant signs with either algorithm.
        configuration.signType = signType
        let database = try await TestDatabase(kind)
        let store = try await database.open()
        return GatewayHarness(configuration: configuration, store: store, database: database, clockScale: clockScale)
    }

    private init(configuration: GatewayConfiguration, store: TestStore, database: TestDatabase, clockScale: Double) {
        // Simulated time runs with real time (unless frozen), so prepay lifetimes and close windows
        // can be crossed with `clock.advance` while the gateway's own clock follows the simulator's.
        let clock = ScaledClock(start: Date(), scale: clockScale)
        let target = NotifyTarget()
        let simulator = WeChatPaySimulator(
            configuration: SimulatorConfiguration(appID: configuration.appID, mchID: configuration.mchID,
                                                  key: configuration.apiKey),
            clock: clock,
            notifySender: ClosureNotifySender { body, _ in await target.deliver(body) })
        let metrics = MetricsRegistry()
        let services = GatewayServices(GatewayContext(
            configuration: configuration, store: store, transport: SimulatorTransport(simulator: simulator), metrics: metrics,
            now: { clock.now() }))
        target.set(services)
        self.services = services
        self.simulator = simulator
        self.clock = clock
        self.store = store
        self.metrics = metrics
        self.database = database
        notifyTask.withLock { $0 = Task { await simulator.run() } }
    }

    func shutdown() async {
        notifyTask.withLock { $0?.cancel() }
        await store.close()
        await database.remove()
    }

    /// Creates an order through the service with a JSON body.
    func create(_ json: String) async throws(APIError) -> (created: Bool, body: [String: Any]) {
        let result = try await services.creation.create(try CreateOrderInput(json: Array(json.utf8)))
        return (result.created, Self.object(result.json))
    }

    func order(_ outTradeNo: String, wait: Double = 0) async throws(APIError) -> [String: Any] {
        Self.object(try await services.queries.order(outTradeNo, wait: wait))
    }

    static func object(_ bytes: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
    }

    /// Waits (real time, bounded) until `condition` holds.
    func eventually(timeout: Double = 30, _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return await condition()
    }
}

/// Breaks the cycle simulator → notify → services → transport → simulator.
final class NotifyTarget: Sendable {
    private let composed = Mutex<GatewayServices?>(nil)
    func set(_ value: GatewayServices) { composed.withLock { $0 = value } }
    var services: GatewayServices? { composed.withLock { $0 } }
    func deliver(_ body: [UInt8]) async -> [UInt8]? {
        guard let services else { return nil }
        return await services.notifies.handleNotify(body)
    }
}

extension Dictionary where Key == String, Value == Any {
    func string(_ key: String) -> String? { self[key] as? String }
    func object(_ key: String) -> [String: Any]? { self[key] as? [String: Any] }
}
