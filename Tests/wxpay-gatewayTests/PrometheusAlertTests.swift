// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import HTTPClientTestSupport
import StoreTestSupport
import TestSupport
import Testing

/// The alert rules against the real thing: Debian's Prometheus scrapes a production gateway (on a
/// PostgreSQL server of its own, against the simulators as processes), the test causes each
/// condition for real and watches the alert go pending, fire and resolve through Prometheus' API.
/// The rules are deploy/prometheus/alerts.yml rendered with short windows and `for:` durations
/// (`render-alerts --set`), so each condition is seen within seconds; every wait is generous.
@Suite(.serialized, .enabled(if: TestPostgresServer.isAvailable, "needs PostgreSQL (scripts/test starts the servers)"))
struct PrometheusAlertTests {
    static let fast = [
        "RATE_WINDOW=15s", "RECONCILE_LAG_SECONDS=3", "RECONCILE_LAG_FOR=2s", "RECONCILE_ERRORS_PER_MINUTE=2",
        "RECONCILE_ERRORS_FOR=2s", "REJECTED_NOTIFIES_PER_MINUTE=20", "REJECTED_NOTIFIES_FOR=2s", "DATABASE_DOWN_FOR=2s",
        "NOT_READY_FOR=2s",
    ]

    static func renderedRules(_ settings: [String]) async throws -> String {
        let run = try await Operations.tool("python3", [Operations.path("deploy/prometheus/render-alerts")]
            + settings.flatMap { ["--set", $0] })
        #expect(run.status == 0, "render-alerts: \(run.errors)")
        return run.output
    }

    @Test(.timeLimit(.minutes(15)))
    func droppedOrdersForgedNotifiesAndADatabaseOutageFireTheirAlertsAndResolve() async throws {
        let postgres = try await TestPostgresServer.start()
        let stack: ProductionStack
        do {
            stack = try await ProductionStack.start(database: postgres.url, extra: [
                "GATEWAY_RECONCILE_INTERVAL": "0.5", "GATEWAY_RECONCILE_AFTER": "1", "GATEWAY_POLL_INTERVAL": "1",
            ])
        } catch {
            await postgres.remove()
            throw error
        }
        let client = try HTTPClient(configuration: .init(tls: .init(caFile: TestCertificates.ca)))
        var prometheus: TestPrometheus?
        do {
            let admin = String(stack.adminBase.dropFirst("http://".count))
            let started = try await TestPrometheus.start(targets: [admin], rules: try await Self.renderedRules(Self.fast))
            prometheus = started
            try await scenarios(stack, started, client, postgres)
        } catch {
            Issue.record("\(error)")
        }
        await prometheus?.stop()
        await client.shutdown()
        await stack.stop()
        await postgres.remove()
    }

    private func scenarios(_ stack: ProductionStack, _ prometheus: TestPrometheus, _ client: HTTPClient,
                           _ postgres: TestPostgresServer) async throws {
        // Prometheus sees the instance up and ready first.
        var ready = false
        for _ in 0..<480 where !ready {
            let answer = try await client.send(.get, prometheus.base + "/api/v1/query?query=wxpay_ready")
            let alerts = try await prometheus.alerts()
            ready = answer.body.contains("\"1\"]") && alerts.isEmpty
            if !ready { try await Task.sleep(for: .milliseconds(500)) }
        }
        #expect(ready, "Prometheus never saw the gateway ready")

        try await droppedNotifiesWithWeChatDown(stack, prometheus, client)
        try await forgedNotifies(stack, prometheus, client)
        try await databaseOutage(prometheus, postgres)
        try await dashboardQueriesAreValid(prometheus)
    }

    /// WeChat's notifies are lost and WeChat stops answering the reconciler's orderqueries: paid
    /// orders go unsettled, the reconciler's lag grows past its bound and its checks fail. Once
    /// WeChat answers again the reconciler settles them and both alerts resolve.
    private func droppedNotifiesWithWeChatDown(_ stack: ProductionStack, _ prometheus: TestPrometheus,
                                               _ client: HTTPClient) async throws {
        let token = ProductionStack.clientToken
        #expect(try await client.send(.put, stack.wechatBase + "/simulator/faults", body: #"{"notify":{"dropRate":1}}"#).status == 200)
        for index in 1...3 {
            let created = try await client.send(.post, stack.base + "/v1/orders", token: token, body:
                #"{"amount":990,"description":"x","client_ip":"203.0.113.7","out_trade_no":"alert-drop-\#(index)"}"#)
            #expect(created.status == 201, "\(created.body)")
        }
        #expect(try await client.send(.put, stack.wechatBase + "/simulator/faults", body:
            #"{"notify":{"dropRate":1},"endpoints":{"/pay/orderquery":{"resetRate":1}}}"#).status == 200)
        for index in 1...3 {
            #expect(try await client.send(.post, stack.wechatBase + "/simulator/orders/alert-drop-\(index)/pay").status == 200)
        }
        let lagging = try await prometheus.waitUntilFiring("WxpayReconcilerLagging")
        #expect(lagging.last == "firing", "WxpayReconcilerLagging went \(lagging)")
        let failing = try await prometheus.waitUntilFiring("WxpayReconcilerFailing")
        #expect(failing.last == "firing", "WxpayReconcilerFailing went \(failing)")
        #expect(try await prometheus.wasPending("WxpayReconcilerLagging"), "the lag alert fired without being pending")
        #expect(try await prometheus.wasPending("WxpayReconcilerFailing"), "the failure alert fired without being pending")
        for index in 1...3 {
            let order = try await client.send(.get, stack.base + "/v1/orders/alert-drop-\(index)", token: token)
            #expect(order.json["state"] as? String == "NOTPAY", "paid at WeChat, unknown here while WeChat is down")
        }

        #expect(try await client.send(.put, stack.wechatBase + "/simulator/faults", body: "{}").status == 200)
        #expect(try await prometheus.waitUntilResolved("WxpayReconcilerLagging"), "the lag alert never resolved")
        #expect(try await prometheus.waitUntilResolved("WxpayReconcilerFailing"), "the failure alert never resolved")
        for index in 1...3 {
            let order = try await client.send(.get, stack.base + "/v1/orders/alert-drop-\(index)", token: token)
            #expect(order.json["state"] as? String == "SUCCESS", "the reconciler found the payment")
        }
    }

    /// Notifies that do not verify, posted for a while: the forgery alert fires, and resolves once
    /// they stop.
    private func forgedNotifies(_ stack: ProductionStack, _ prometheus: TestPrometheus, _ client: HTTPClient) async throws {
        let forged = """
            <xml><appid><![CDATA[wxd930ea5d5a258f4f]]></appid><mch_id><![CDATA[10000100]]></mch_id>\
            <nonce_str><![CDATA[forged]]></nonce_str><result_code><![CDATA[SUCCESS]]></result_code>\
            <return_code><![CDATA[SUCCESS]]></return_code><out_trade_no><![CDATA[alert-drop-1]]></out_trade_no>\
            <total_fee>1</total_fee><transaction_id><![CDATA[4200000000000000000000000001]]></transaction_id>\
            <sign><![CDATA[0123456789ABCDEF0123456789ABCDEF]]></sign></xml>
            """
        var firing = false
        var states: [String] = []
        let deadline = ContinuousClock.now + .seconds(240)
        while !firing && ContinuousClock.now < deadline {
            for _ in 0..<3 {
                let reply = try await client.send(.post, stack.base + "/wechat/notify", body: forged)
                #expect(reply.body.contains("FAIL"))
            }
            for state in try await prometheus.alerts().filter({ $0.name == "WxpayNotifyForgeryBurst" }).map(\.state)
            where states.last != state {
                states.append(state)
            }
            firing = states.last == "firing"
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(firing, "WxpayNotifyForgeryBurst went \(states)")
        #expect(try await prometheus.wasPending("WxpayNotifyForgeryBurst"))
        #expect(try await prometheus.waitUntilResolved("WxpayNotifyForgeryBurst"), "the forgery alert never resolved")
    }

    /// The PostgreSQL server stops: the instance's database is down and it is not ready; both
    /// alerts name the instance, and resolve once the server is back.
    private func databaseOutage(_ prometheus: TestPrometheus, _ postgres: TestPostgresServer) async throws {
        try await postgres.halt()
        let down = try await prometheus.waitUntilFiring("WxpayDatabaseUnavailable")
        #expect(down.last == "firing", "WxpayDatabaseUnavailable went \(down)")
        let notReady = try await prometheus.waitUntilFiring("WxpayInstanceNotReady")
        #expect(notReady.last == "firing", "WxpayInstanceNotReady went \(notReady)")
        #expect(try await prometheus.wasPending("WxpayDatabaseUnavailable"))
        let instance = try await prometheus.alerts().first { $0.name == "WxpayDatabaseUnavailable" }?.labels["instance"]
        #expect(instance?.hasPrefix("127.0.0.1:") == true)
        try await postgres.resume()
        #expect(try await prometheus.waitUntilResolved("WxpayDatabaseUnavailable"), "the database alert never resolved")
        #expect(try await prometheus.waitUntilResolved("WxpayInstanceNotReady"), "the readiness alert never resolved")
    }

    /// Every query of the Grafana dashboard is valid PromQL to this Prometheus (Grafana's
    /// `$__rate_interval` stands for a minute).
    private func dashboardQueriesAreValid(_ prometheus: TestPrometheus) async throws {
        let expressions = try DashboardTests.expressions()
        #expect(expressions.count >= 16)
        for expression in expressions {
            let answer = try await prometheus.query(expression.replacingOccurrences(of: "$__rate_interval", with: "1m"))
            #expect(answer.status == 200 && answer.result == "success", "\(expression): \(answer.error ?? "HTTP \(answer.status)")")
        }
        // And the check can fail: a broken query is refused.
        let broken = try await prometheus.query("sum(rate(wxpay_notifies_total[5m])")
        #expect(broken.status == 400 && broken.result == "error")
    }
}

/// The dashboard and the rules name only metrics the gateway exports.
@Suite(.serialized)
struct DashboardTests {
    /// Every `expr` of deploy/grafana/wxpay-gateway.json.
    static func expressions() throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: Operations.path("deploy/grafana/wxpay-gateway.json")))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = dashboard["panels"] as? [[String: Any]] ?? []
        return panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
    }

    @Test(.timeLimit(.minutes(5)))
    func everyMetricARuleOrTheDashboardNamesIsExportedByAProductionGateway() async throws {
        let stack = try await ProductionStack.start()
        let client = try HTTPClient()
        do {
            // The reconciler's refund figures are listed from its first sweep on, which runs beside
            // the first scrape: the scrape that counts is one taken after a sweep.
            var exposition = ""
            try #require(try await eventually(timeout: .seconds(120)) {
                exposition = try await client.send(.get, stack.adminBase + "/metrics").body
                return exposition.split(separator: "\n").contains { line in
                    line.hasPrefix("wxpay_reconcile_sweeps_total ") && (Double(line.split(separator: " ").last ?? "") ?? 0) >= 1
                }
            })
            let exported = Operations.exportedFamilies(exposition)
            let rules = try String(contentsOfFile: Operations.path("deploy/prometheus/alerts.yml.in"), encoding: .utf8)
            let named = Operations.metricNames(in: rules).union(Operations.metricNames(in: try Self.expressions().joined(separator: "\n")))
            #expect(named.count >= 30, "\(named.sorted())")
            for name in named.sorted() {
                #expect(exported.contains(name), "\(name) is named in an alert rule or the dashboard but not exported")
            }
            // The check sees what is missing: a name the gateway never exports is reported.
            #expect(!exported.contains("wxpay_no_such_metric_total"))
            // The public address does not serve what the admin address does.
            #expect(try await client.send(.get, stack.base + "/metrics").status == 404)
            #expect(try await client.send(.get, stack.base + "/readyz").status == 404)
            // /readyz gives the database 1 s, which a machine loaded by the whole suite has missed:
            // a late answer is asked again, a few times.
            var ready = false
            for _ in 0..<5 where !ready { ready = try await client.send(.get, stack.adminBase + "/readyz").status == 200 }
            #expect(ready)
        } catch {
            Issue.record("\(error)")
        }
        await client.shutdown()
        await stack.stop()
    }
}
