// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import Glibc
import HTTP
import HTTPClientTestSupport
import Testing

/// deploy/ checked by the tools that will read it: promtool for the rules and their unit tests,
/// systemd-analyze for the unit, nginx for the TLS front (and nginx really proxying to a gateway).
@Suite(.serialized)
struct DeployFilesTests {
    @Test func theAlertRulesAreValidPassTheirUnitTestsAndAreTheTemplateRenderedWithTheDefaults() async throws {
        let check = try await Operations.tool("promtool", ["check", "rules", Operations.path("deploy/prometheus/alerts.yml")])
        #expect(check.status == 0, "\(check.output)\(check.errors)")
        let tests = try await Operations.tool("promtool", ["test", "rules", Operations.path("deploy/prometheus/alerts_test.yml")])
        #expect(tests.status == 0, "\(tests.output)\(tests.errors)")
        #expect(tests.output.contains("SUCCESS"))
        let rendered = try await Operations.tool("python3", [Operations.path("deploy/prometheus/render-alerts")])
        let committed = try String(contentsOfFile: Operations.path("deploy/prometheus/alerts.yml"), encoding: .utf8)
        #expect(rendered.status == 0 && rendered.output == committed,
                "deploy/prometheus/alerts.yml is not alerts.yml.in rendered with thresholds.json: run deploy/prometheus/render-alerts -o deploy/prometheus/alerts.yml")
        // A threshold that does not exist is refused, not silently ignored.
        let unknown = try await Operations.tool("python3", [Operations.path("deploy/prometheus/render-alerts"), "--set", "NO_SUCH=1"])
        #expect(unknown.status != 0 && unknown.errors.contains("unknown threshold NO_SUCH"))
        // A value of the wrong kind is refused too, not written into a rule's expression.
        for (setting, words) in [("RECONCILE_LAG_SECONDS=abc", "must be a non-negative number"),
                                 ("RATE_WINDOW=5", "must be a Prometheus duration"), ("JOB=a\"b", "must be a label value")] {
            let wrong = try await Operations.tool("python3", [Operations.path("deploy/prometheus/render-alerts"), "--set", setting])
            #expect(wrong.status != 0 && wrong.errors.contains(words), "\(setting): \(wrong.errors)")
        }
    }

    @Test func everyAlertHasASummaryASeverityAndARunbookParagraph() throws {
        let rules = try String(contentsOfFile: Operations.path("deploy/prometheus/alerts.yml.in"), encoding: .utf8)
        let operations = try String(contentsOfFile: Operations.path("docs/operations.md"), encoding: .utf8)
        let names = rules.split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("- alert: ") ? String(trimmed.dropFirst("- alert: ".count)) : nil
        }
        #expect(names.count >= 16)
        for name in names {
            #expect(operations.contains("#### \(name)\n"), "docs/operations.md has no runbook for \(name)")
            #expect(rules.contains("runbook: \"docs/operations.md#\(name.lowercased())\""), "\(name) does not link its runbook")
        }
        #expect(rules.components(separatedBy: "summary: ").count - 1 == names.count)
        #expect(rules.components(separatedBy: "labels: {severity: ").count - 1 == names.count)
    }

    /// Each counter an alert rule compares over time (`rate(` or `increase(` of a `_total`, or of a
    /// histogram's `_bucket`), with the label matchers of its selector (`name`, `op`, `value`).
    static func alertCounters(_ rules: String) -> [(counter: String, matchers: [(label: String, op: String, value: String)])] {
        rules.matches(of: #/(?:rate|increase)\((wxpay_[a-z0-9_]+_(?:total|bucket))(?:\{([^}]*)\})?\[/#).map { match in
            let matchers = (match.output.2.map(String.init) ?? "").matches(of: #/([a-z_]+)\s*(=~|!~|!=|=)\s*"([^"]*)"/#).map {
                (label: String($0.output.1), op: String($0.output.2), value: String($0.output.3))
            }
            return (String(match.output.1), matchers)
        }
    }

    /// The labels of one exposition line (`name{a="x",b="y"} 0`).
    static func labels(_ line: Substring) -> [String: String] {
        var labels: [String: String] = [:]
        for match in line.matches(of: #/([a-z_]+)="([^"]*)"/#) { labels[String(match.output.1)] = String(match.output.2) }
        return labels
    }

    static func matches(_ value: String?, _ op: String, _ pattern: String) -> Bool {
        let value = value ?? ""
        let full = (try? Regex("^(?:\(pattern))$")).map { value.wholeMatch(of: $0) != nil } ?? false
        switch op {
        case "=": return value == pattern
        case "!=": return value != pattern
        case "=~": return full
        default: return !full
        }
    }

    @Test("A fresh gateway exports, at 0, a series for every counter and histogram selector the alert rules take a rate or an increase of")
    func everyCounterAnAlertComparesOverTimeExistsFromTheStart() async throws {
        let rules = try String(contentsOfFile: Operations.path("deploy/prometheus/alerts.yml.in"), encoding: .utf8)
        let selectors = Self.alertCounters(rules)
        #expect(selectors.count >= 10, "the rules' counters were not found: \(selectors.map(\.counter))")
        #expect(selectors.filter { $0.counter.hasSuffix("_bucket") }.count >= 2, "the rules' histograms were not found")
        let directory = try Operations.temporaryDirectory("wxpay-fresh-metrics")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let started = StartedGateway()
        // Everything an alert watches switched on: the reconciler, the webhook dispatcher (its
        // receiver never answers), the embedded App Store.
        let gateway = try #require(try await started.start({ port in
            ["GATEWAY_LISTEN": "127.0.0.1:\(port)", "GATEWAY_DATABASE": "sqlite:\(directory)/gateway.sqlite",
             "GATEWAY_FULFILMENT_URL": "http://127.0.0.1:9/fulfil", "GATEWAY_FULFILMENT_SECRET": "0123456789abcdef"]
        }, demo: true))
        let client = try HTTPClient()
        do {
            let metrics = try await client.send(.get, started.base + "/metrics")
            #expect(metrics.status == 200)
            let samples = metrics.body.split(separator: "\n").filter { !$0.hasPrefix("#") }
            for (counter, matchers) in selectors {
                let found = samples.contains { line in
                    guard line.hasPrefix(counter + "{") || line.hasPrefix(counter + " ") else { return false }
                    let labels = Self.labels(line)
                    return matchers.allSatisfy { Self.matches(labels[$0.label], $0.op, $0.value) }
                }
                let selector = matchers.map { "\($0.label)\($0.op)\"\($0.value)\"" }.joined(separator: ",")
                #expect(found, "no sample of \(counter){\(selector)} in a fresh gateway's /metrics")
            }
        } catch {
            Issue.record("\(error)")
        }
        await client.shutdown()
        await gateway.stop()
    }

    /// `systemd-analyze verify` exits 0 even for unknown keys and bad values, printing a warning:
    /// any output at all is a failure.
    static func verifyUnit(_ unit: String, binary: String) async throws -> (status: Int32, messages: String) {
        let directory = try Operations.temporaryDirectory("wxpay-unit")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let text = try String(contentsOfFile: unit, encoding: .utf8)
        // verify insists the ExecStart binary exists: the built one stands in for /usr/bin's.
        let path = directory + "/wxpay-gateway.service"
        try text.replacingOccurrences(of: "/usr/bin/wxpay-gateway", with: binary).write(toFile: path, atomically: true, encoding: .utf8)
        let run = try await Operations.tool("systemd-analyze", ["verify", path])
        return (run.status, (run.output + run.errors).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func theSystemdUnitVerifiesCleanlyAndHasTheSandboxing() async throws {
        let unit = Operations.path("deploy/systemd/wxpay-gateway.service")
        let verified = try await Self.verifyUnit(unit, binary: CommandProcess.executable.path)
        #expect(verified.status == 0 && verified.messages.isEmpty, "systemd-analyze verify: \(verified.messages)")
        let text = try String(contentsOfFile: unit, encoding: .utf8)
        for directive in ["EnvironmentFile=/etc/wxpay-gateway/env", "User=wxpay-gateway", "ProtectSystem=strict",
                          "NoNewPrivileges=yes", "StateDirectory=wxpay-gateway", "LimitNOFILE=", "Restart=on-failure",
                          "TimeoutStopSec=", "KillSignal=SIGTERM", "ExecStart=/usr/bin/wxpay-gateway serve"] {
            #expect(text.contains(directive), "the unit lacks \(directive)")
        }
        // And verify does catch a broken unit.
        let broken = try Operations.temporaryDirectory("wxpay-unit-broken")
        defer { try? FileManager.default.removeItem(atPath: broken) }
        try text.replacingOccurrences(of: "NoNewPrivileges=yes", with: "NoNewPrivileges=perhaps")
            .write(toFile: broken + "/broken.service", atomically: true, encoding: .utf8)
        let caught = try await Self.verifyUnit(broken + "/broken.service", binary: CommandProcess.executable.path)
        #expect(!caught.messages.isEmpty)
    }

    /// The nginx example with the test certificate, its own pid and log files, on free ports.
    static func nginxConfiguration(directory: String, httpsPort: Int, httpPort: Int, upstream: String) throws -> String {
        let site = try String(contentsOfFile: Operations.path("deploy/nginx/wxpay-gateway.conf"), encoding: .utf8)
            .replacingOccurrences(of: "/etc/wxpay-gateway/tls/server.crt", with: TestCertificates.serverCertificate)
            .replacingOccurrences(of: "/etc/wxpay-gateway/tls/server.key", with: TestCertificates.serverKey)
            .replacingOccurrences(of: "server 127.0.0.1:8080;", with: "server \(upstream);")
            .replacingOccurrences(of: "listen 443 ssl http2;", with: "listen 127.0.0.1:\(httpsPort) ssl http2;")
            .replacingOccurrences(of: "listen [::]:443 ssl http2;", with: "")
            .replacingOccurrences(of: "listen 80;", with: "listen 127.0.0.1:\(httpPort);")
            .replacingOccurrences(of: "listen [::]:80;", with: "")
        try site.write(toFile: directory + "/site.conf", atomically: true, encoding: .utf8)
        let main = """
            daemon off;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log;
            events {}
            http {
                access_log off;
                client_body_temp_path \(directory)/body; proxy_temp_path \(directory)/proxy;
                fastcgi_temp_path \(directory)/fastcgi; uwsgi_temp_path \(directory)/uwsgi; scgi_temp_path \(directory)/scgi;
                include \(directory)/site.conf;
            }

            """
        try main.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        return directory + "/nginx.conf"
    }

    @Test(.timeLimit(.minutes(5)))
    func nginxAcceptsTheExampleAndProxiesOnlyThePublicPathsWithTheClientAddress() async throws {
        let directory = try Operations.temporaryDirectory("wxpay-nginx")
        let database = directory + "/gateway.sqlite"
        let started = StartedGateway()
        let admin = closedLoopbackPort()
        let gateway = try #require(try await started.start({ port in
            ["GATEWAY_LISTEN": "127.0.0.1:\(port)", "GATEWAY_ADMIN_LISTEN": "127.0.0.1:\(admin)",
             "GATEWAY_DATABASE": "sqlite:" + database, "GATEWAY_TRUSTED_PROXIES": "127.0.0.1/32",
             "GATEWAY_RECONCILE_INTERVAL": "0"]
        }, demo: true))
        let httpsPort = closedLoopbackPort()
        let configuration = try Self.nginxConfiguration(directory: directory, httpsPort: httpsPort, httpPort: closedLoopbackPort(),
                                                        upstream: String(started.base.dropFirst("http://".count)))
        let test = try await Operations.tool("nginx", ["-t", "-c", configuration, "-p", directory])
        #expect(test.status == 0, "nginx -t: \(test.errors)")
        let nginx = try ChildProcess("nginx", ["-c", configuration, "-p", directory],
                                     environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/sbin:/usr/bin"],
                                     output: directory + "/stdout", errors: directory + "/stderr")
        let client = try HTTPClient(configuration: .init(tls: .init(caFile: TestCertificates.ca)))
        do {
            let front = "https://127.0.0.1:\(httpsPort)"
            var up = false
            for _ in 0..<100 where !up {
                up = (try? await client.send(.get, front + "/openapi.json"))?.status == 200
                if !up { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(up, "nginx did not come up: \((try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? "")")
            // WeChat's notify reaches the gateway, which answers it (FAIL: nothing valid was sent).
            let notify = try await client.send(.post, front + "/wechat/notify", body: "<xml></xml>")
            #expect(notify.status == 200 && notify.body.contains("<return_code><![CDATA[FAIL]]></return_code>"), "\(notify.body)")
            // An app creates an order with its own token; the address the gateway records is the one
            // nginx saw, not what the client wrote into X-Forwarded-For.
            let token = try #require(gateway.stdout.split(separator: "\n").first { $0.contains("A='Authorization: Bearer ") })
            let appToken = String(token.split(separator: " ").last!.dropLast())
            let created = try await client.execute(HTTPClientRequest(
                method: .post, url: front + "/v1/orders",
                headers: ["Authorization": "Bearer \(appToken)", "X-Forwarded-For": "198.51.100.66"],
                body: Array(#"{"product_id":"swift-101","out_trade_no":"nginx-0001"}"#.utf8)))
            #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
            let recorded = try await Operations.tool(
                "sqlite3", [database, "SELECT client_ip FROM orders WHERE out_trade_no = 'nginx-0001'"])
            #expect(recorded.output.trimmingCharacters(in: .whitespacesAndNewlines) == "127.0.0.1",
                    "spbill_create_ip: \(recorded.output)\(recorded.errors)")
            // A StoreKit 1 report of 100 KiB (a heavy buyer's receipt) reaches the gateway, and one
            // past the gateway's cap is the gateway's JSON 413 with finish_transaction, not nginx's page.
            for (size, status) in [(100 * 1024, 400), (700 * 1024, 413)] {
                let report = try await client.execute(HTTPClientRequest(
                    method: .post, url: front + "/v1/iap/transactions", headers: ["Authorization": "Bearer \(appToken)"],
                    body: Array(#"{"transaction_id":"2000000000000001","receipt":""#.utf8) + Array(repeating: UInt8(ascii: "A"), count: size)
                        + Array(#""}"#.utf8)))
                let text = String(decoding: report.body, as: UTF8.self)
                #expect(report.status == status && text.contains(#""finish_transaction":false"#), "\(size): \(report.status) \(text.prefix(200))")
            }
            // Metrics, probes and the console are not published.
            for path in ["/metrics", "/healthz", "/readyz", "/console/", "/simulator/orders/nginx-0001"] {
                #expect(try await client.send(.get, front + path).status == 404, "\(path) is reachable through nginx")
            }
            #expect(try await client.send(.get, "http://127.0.0.1:\(admin)/healthz").status == 200)
        } catch {
            Issue.record("\(error)")
        }
        nginx.send(SIGQUIT)
        _ = await nginx.wait(timeout: .seconds(20))
        if nginx.isRunning { nginx.send(SIGKILL) }
        await client.shutdown()
        await started.gateway?.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The package's environment file (deploy/debian/env) is read two ways — systemd's
/// `EnvironmentFile=` and the `doctor` recipe's `sh -c 'set -a; . env'` — and its examples must
/// come out of the second as the gateway expects them.
struct DebianEnvironmentFileTests {
    @Test("Every example in the package's environment file, JSON included, reaches the gateway intact through the doctor recipe")
    func theEnvironmentFilesExamplesSurviveTheDoctorRecipe() async throws {
        let text = try String(contentsOfFile: Operations.path("deploy/debian/env"), encoding: .utf8)
        // Every example uncommented, as an operator fills the file in.
        let examples = text.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("#"), let equals = line.firstIndex(of: "="),
                  line.dropFirst().prefix(while: { $0 != "=" }).allSatisfy({ $0.isUppercase || $0 == "_" || $0.isNumber })
            else { return nil }
            return equals > line.index(after: line.startIndex) ? String(line.dropFirst()) : nil
        }
        #expect(examples.contains { $0.hasPrefix("APPSTORE_BUNDLE_ID=") })
        #expect(examples.contains { $0.hasPrefix("APPSTORE_CONSUMPTION_DEFAULTS=") })
        let directory = try Operations.temporaryDirectory("wxpay-env")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try examples.joined(separator: "\n").write(toFile: directory + "/env", atomically: true, encoding: .utf8)
        let printed = try await Operations.tool("sh", ["-c", "set -a; . \(directory)/env; exec printenv APPSTORE_CONSUMPTION_DEFAULTS"])
        let value = printed.output.trimmingCharacters(in: .newlines)
        #expect(value == #"{"customer_consented":true,"delivery_status":"DELIVERED","sample_content_provided":false}"#, "\(value)")
    }
}
