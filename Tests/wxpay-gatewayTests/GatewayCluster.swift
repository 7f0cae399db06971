// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import HTTPClientTestSupport
import StoreTestSupport

/// Several production `wxpay-gateway serve` processes on one PostgreSQL database (a schema of its
/// own on the test server), with a separate `wxpay-gateway simulate` process playing WeChat. Each
/// instance's notify URL can point at another instance, as a load balancer in front of them would
/// send WeChat's notify anywhere.
final class GatewayCluster: @unchecked Sendable {
    // Touched only by the test that owns it, one step at a time.
    static let clientToken = "cluster-client-token"
    let client: HTTPClient
    let simulator: CommandProcess
    /// The simulator's base URL (WeChat's API and its control panel).
    let wechat: String
    let database: TestDatabase
    private(set) var gateways: [CommandProcess] = []
    private(set) var bases: [String] = []

    /// - Parameters:
    ///   - notifyTo: for each instance, the instance whose `/wechat/notify` its orders name.
    static func start(_ count: Int, notifyTo: [Int]? = nil, environment: [String: String] = [:]) async throws -> GatewayCluster {
        let cluster = try await GatewayCluster()
        do {
            try await cluster.startGateways(count, notifyTo: notifyTo ?? Array(0..<count), environment: environment)
        } catch {
            await cluster.stop()
            throw error
        }
        return cluster
    }

    private init() async throws {
        client = try HTTPClient()
        database = try await TestDatabase(.postgres)
        simulator = try CommandProcess(["simulate", "--port", "0", "--key", TestMerchant.apiKey], environment: [:])
        guard let line = await simulator.line(startingWith: "listening ") else {
            throw ClusterError("the simulator did not start: \(simulator.stderr)")
        }
        wechat = String(line.split(separator: " ")[1])
    }

    private func startGateways(_ count: Int, notifyTo: [Int], environment: [String: String]) async throws {
        // The notify URLs are needed before the starts; ports taken meanwhile by another test are retried.
        for _ in 0..<5 {
            let ports = (0..<count).map { _ in closedLoopbackPort() }
            var started: [CommandProcess] = []
            for index in 0..<count {
                var env = [
                    "WXPAY_APP_ID": "wxd930ea5d5a258f4f", "WXPAY_MCH_ID": "10000100",
                    "WXPAY_API_KEY": TestMerchant.apiKey,
                    "WXPAY_NOTIFY_URL": "http://127.0.0.1:\(ports[notifyTo[index]])/wechat/notify",
                    "WXPAY_API_BASE": wechat, "WXPAY_API_BACKUP_BASE": wechat,
                    "GATEWAY_CLIENT_TOKENS": Self.clientToken, "GATEWAY_LISTEN": "127.0.0.1:\(ports[index])",
                    "GATEWAY_DATABASE": database.location, "GATEWAY_DATABASE_POOL": "4",
                    "GATEWAY_RECONCILE_INTERVAL": "0", "GATEWAY_LOG_LEVEL": "warning",
                ]
                env.merge(environment) { _, new in new }
                started.append(try CommandProcess(["serve"], environment: env))
            }
            var allListening = true
            for gateway in started where await gateway.line(startingWith: "wxpay-gateway listening on ") == nil {
                allListening = false
            }
            if allListening {
                gateways = started
                bases = ports.map { "http://127.0.0.1:\($0)" }
                return
            }
            let reasons = started.map(\.stderr).joined(separator: "\n")
            for gateway in started { await gateway.stop() }
            // 69: the address was taken; anything else will not get better by retrying.
            guard reasons.contains("cannot listen") else { throw ClusterError("a gateway did not start: \(reasons)") }
        }
        throw ClusterError("no free ports for the gateways")
    }

    func stop() async {
        for gateway in gateways { await gateway.stop() }
        await simulator.stop()
        await client.shutdown()
        await database.remove()
    }

    // MARK: Requests

    func create(on instance: Int, _ outTradeNo: String, amount: Int = 990) async throws -> Exchange {
        try await client.send(.post, bases[instance] + "/v1/orders", token: Self.clientToken,
                              body: #"{"amount":\#(amount),"description":"cluster","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)"}"#)
    }

    func order(on instance: Int, _ outTradeNo: String, wait: Double = 0) async throws -> Exchange {
        try await client.send(.get, bases[instance] + "/v1/orders/\(outTradeNo)" + (wait > 0 ? "?wait=\(wait)" : ""),
                              token: Self.clientToken)
    }

    /// The user pays at WeChat; WeChat then posts its notify to the order's notify URL.
    func pay(_ outTradeNo: String) async throws {
        let answer = try await client.send(.post, wechat + "/simulator/orders/\(outTradeNo)/pay")
        guard answer.status == 200 else { throw ClusterError("pay answered \(answer.status)") }
    }

    /// The sum of an instance's Prometheus samples whose series starts with `prefix`.
    func metric(on instance: Int, _ prefix: String) async throws -> Double {
        let text = try await client.send(.get, bases[instance] + "/metrics").body
        return text.split(separator: "\n").filter { $0.hasPrefix(prefix) }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
    }

    /// When WeChat received each orderquery about `outTradeNo` (simulated seconds since 1970).
    func orderqueries(_ outTradeNo: String) async throws -> [Double] {
        let json = try await client.send(.get, wechat + "/simulator/orderqueries").json
        return ((json[outTradeNo] as? [Any]) ?? []).compactMap { ($0 as? NSNumber)?.doubleValue }.sorted()
    }

    /// How many requests WeChat received on `path` (e.g. `/pay/unifiedorder`).
    func wechatRequests(_ path: String) async throws -> Int {
        let json = try await client.send(.get, wechat + "/simulator/stats").json
        return ((json["requests"] as? [String: Any])?[path] as? NSNumber)?.intValue ?? 0
    }
}

struct ClusterError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
