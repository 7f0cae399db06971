// SPDX-License-Identifier: Apache-2.0
import AppStore
import ChildProcessSupport
import Crypto
import Foundation
import Glibc
import HTTP
import HTTPClientTestSupport
import Testing

/// The repository this test runs in, and the tools of docs/operations.md, run as an operator would.
enum Operations {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    static func path(_ relative: String) -> String { root + "/" + relative }

    /// Runs a tool (Debian's, installed by scripts/setup) to its end; its status and output.
    static func tool(_ executable: String, _ arguments: [String], timeout: Duration = .seconds(120),
                     environment: [String: String] = [:]) async throws -> (status: Int32, output: String, errors: String)
    {
        var env = environment
        env["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/sbin:/usr/bin:/sbin:/bin"
        if env["PATH"]?.contains("/usr/sbin") == false { env["PATH"]! += ":/usr/sbin:/sbin" }
        let run = try await ChildProcess.run(executable, arguments, environment: env, timeout: timeout)
        return (run.status, String(decoding: run.output, as: UTF8.self), String(decoding: run.errors, as: UTF8.self))
    }

    /// A fresh directory under the temporary directory.
    static func temporaryDirectory(_ prefix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The metric names (`wxpay_…`) an expression text uses, histogram series folded into their family.
    static func metricNames(in text: String) -> Set<String> {
        var names = Set<String>()
        let pattern = try! NSRegularExpression(pattern: "\\bwxpay_[a-z0-9_]+")
        for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            var name = String(text[Range(match.range, in: text)!])
            for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) { name = String(name.dropLast(suffix.count)) }
            names.insert(name)
        }
        return names
    }

    /// Every family `/metrics` declares (`# TYPE name …`) or has a sample of.
    static func exportedFamilies(_ exposition: String) -> Set<String> {
        var names = Set<String>()
        for line in exposition.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                names.insert(String(line.dropFirst(7).prefix { $0 != " " }))
            } else if !line.hasPrefix("#") {
                names.insert(String(line.prefix { $0 != "{" && $0 != " " }))
            }
        }
        return names
    }
}

/// The outside world as processes: `wxpay-gateway simulate` over HTTPS demanding the merchant
/// certificate, and `simulate-appstore` for the Server API (its notifications to
/// `notificationURL`), with the production variables that point the gateway at them.
final class SimulatedUpstreams: @unchecked Sendable {
    // Set up once by `start`, read by the test, torn down by `stop`.
    let wechat: CommandProcess
    let appStore: CommandProcess
    let wechatBase: String
    let appStoreBase: String
    let directory: String
    let app: [String: String]

    private init(wechat: CommandProcess, appStore: CommandProcess, wechatBase: String, appStoreBase: String,
                 directory: String, app: [String: String]) {
        self.wechat = wechat
        self.appStore = appStore
        self.wechatBase = wechatBase
        self.appStoreBase = appStoreBase
        self.directory = directory
        self.app = app
    }

    static func start(notificationURL: String? = nil) async throws -> SimulatedUpstreams {
        let directory = try Operations.temporaryDirectory("wxpay-ops")
        let wechat = try CommandProcess(["simulate", "--port", "0", "--key", TestMerchant.apiKey, "--tls-cert", TestCertificates.serverCertificate,
                                         "--tls-key", TestCertificates.serverKey, "--client-ca", TestCertificates.ca],
                                        environment: [:])
        let appStore = try CommandProcess(["simulate-appstore", "--port", "0", "--root-out", directory + "/appstore-root.pem",
                                           "--api-key-out", directory + "/appstore-key.p8"]
                                          + (notificationURL.map { ["--notification-url", $0] } ?? []), environment: [:])
        let wechatLine = try #require(await wechat.line(startingWith: "listening "), "simulate: \(wechat.stderr)")
        let appStoreLine = try #require(await appStore.line(startingWith: "listening "), "simulate-appstore: \(appStore.stderr)")
        let appLine = try #require(await appStore.line(startingWith: "app bundle_id="))
        var app: [String: String] = [:]
        for pair in appLine.split(separator: " ").dropFirst() {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { app[String(parts[0])] = String(parts[1]) }
        }
        return SimulatedUpstreams(wechat: wechat, appStore: appStore, wechatBase: String(wechatLine.split(separator: " ")[1]),
                                  appStoreBase: String(appStoreLine.split(separator: " ")[1]), directory: directory, app: app)
    }

    /// The merchant, its certificate and the App Store's settings, for a gateway whose public
    /// address is `public`.
    func environment(public base: String) -> [String: String] {
        [
            "WXPAY_APP_ID": "wxd930ea5d5a258f4f", "WXPAY_MCH_ID": "10000100", "WXPAY_API_KEY": TestMerchant.apiKey,
            "WXPAY_NOTIFY_URL": base + "/wechat/notify", "WXPAY_REFUND_NOTIFY_URL": base + "/wechat/refund-notify",
            "WXPAY_API_BASE": wechatBase, "WXPAY_API_BACKUP_BASE": wechatBase, "WXPAY_API_CA_FILE": TestCertificates.ca,
            "WXPAY_CLIENT_CERT": TestCertificates.clientCertificate, "WXPAY_CLIENT_KEY": TestCertificates.clientKey,
            "APPSTORE_BUNDLE_ID": app["bundle_id"] ?? "", "APPSTORE_APP_APPLE_ID": app["app_apple_id"] ?? "",
            "APPSTORE_ROOT_CA_FILE": directory + "/appstore-root.pem", "APPSTORE_ALLOW_UNTRUSTED_ROOT": "1",
            // The simulator's root, acknowledged by its fingerprint as production requires.
            "APPSTORE_UNTRUSTED_ROOT_SHA256": appStoreRootFingerprint,
            // Its receipts are signed under the same root: verified, as production requires with the key.
            "APPSTORE_RECEIPT_ROOT_CA_FILE": directory + "/appstore-root.pem",
            "APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256": appStoreRootFingerprint,
            "APPSTORE_ISSUER_ID": app["issuer"] ?? "", "APPSTORE_KEY_ID": app["key_id"] ?? "",
            "APPSTORE_PRIVATE_KEY_FILE": directory + "/appstore-key.p8",
            "APPSTORE_API_BASE": appStoreBase, "APPSTORE_SANDBOX_API_BASE": appStoreBase + "/sandbox",
        ]
    }

    /// The SHA-256 of the App Store simulator's root certificate, as the gateway computes it.
    var appStoreRootFingerprint: String {
        FileManager.default.contents(atPath: directory + "/appstore-root.pem")
            .flatMap { Certificate(pemOrDER: Array($0)) }?.sha256Fingerprint ?? ""
    }

    func stop() async {
        await wechat.stop()
        await appStore.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A production gateway as docs/operations.md deploys it, against `SimulatedUpstreams`: its admin
/// address apart, refunds, the webhook and the App Store on.
final class ProductionStack: @unchecked Sendable {
    // Set up once by `start`, read by the test, torn down by `stop`.
    let upstreams: SimulatedUpstreams
    private let started = StartedGateway()
    private(set) var adminBase = ""
    var base: String { started.base }
    var wechatBase: String { upstreams.wechatBase }
    var gateway: CommandProcess? { started.gateway }
    static let clientToken = "operations-client-token"
    /// The webhook's receiver: a port that refuses, so events stay pending.
    private let webhook = RefusedLoopbackPort()

    private init(upstreams: SimulatedUpstreams) {
        self.upstreams = upstreams
    }

    /// Starts both simulators and the gateway on `database` (`sqlite:…` or a PostgreSQL URI), with
    /// `extra` variables on top.
    static func start(database: String? = nil, extra: [String: String] = [:]) async throws -> ProductionStack {
        let stack = ProductionStack(upstreams: try await SimulatedUpstreams.start())
        stack.database = database ?? "sqlite:\(stack.upstreams.directory)/gateway.sqlite"
        stack.extra = extra
        guard try await stack.startGateway() else {
            await stack.stop()
            throw OperationsTestError("the production gateway did not start")
        }
        return stack
    }

    private var database = ""
    private var extra: [String: String] = [:]

    private func startGateway() async throws -> Bool {
        try await started.start { [self] port in
            let admin = closedLoopbackPort()
            adminBase = "http://127.0.0.1:\(admin)"
            return upstreams.environment(public: "http://127.0.0.1:\(port)").merging([
                "GATEWAY_CLIENT_TOKENS": Self.clientToken,
                "GATEWAY_LISTEN": "127.0.0.1:\(port)", "GATEWAY_ADMIN_LISTEN": "127.0.0.1:\(admin)",
                "GATEWAY_DATABASE": database,
                "GATEWAY_FULFILMENT_URL": webhook.baseURL + "/fulfil", "GATEWAY_FULFILMENT_SECRET": "operations-webhook-secret",
            ]) { $1 }.merging(extra) { $1 }
        } != nil
    }

    /// Stops the gateway, runs `between` (the database is free then: a restore, say), and starts it
    /// again with the same variables on new ports; the simulators keep running.
    func restartGateway(between: () async throws -> Void) async throws {
        await started.gateway?.stop()
        try await between()
        guard try await startGateway() else { throw OperationsTestError("the production gateway did not start again") }
    }

    func stop() async {
        await started.gateway?.stop()
        await upstreams.stop()
    }
}

struct OperationsTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Debian's `prometheus`, on a free loopback port, scraping what it is told every two seconds and
/// evaluating the rules every second; its data in a temporary directory removed by `stop`.
final class TestPrometheus: @unchecked Sendable {
    // Set once by `start`; the test owns it.
    let child: ChildProcess
    let base: String
    let directory: String
    let client: HTTPClient

    private init(child: ChildProcess, base: String, directory: String, client: HTTPClient) {
        self.child = child
        self.base = base
        self.directory = directory
        self.client = client
    }

    /// `rules`: the text of a rule file; `targets`: `host:port` of each `/metrics`.
    static func start(targets: [String], rules: String) async throws -> TestPrometheus {
        let directory = try Operations.temporaryDirectory("wxpay-prometheus")
        try rules.write(toFile: directory + "/alerts.yml", atomically: true, encoding: .utf8)
        let config = """
            global: {scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 1s}
            rule_files: [alerts.yml]
            scrape_configs:
              - job_name: wxpay-gateway
                static_configs: [{targets: [\(targets.map { "'\($0)'" }.joined(separator: ", "))]}]

            """
        try config.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        let client = try HTTPClient()
        for _ in 0..<5 {
            let port = closedLoopbackPort()
            let child = try ChildProcess(
                "prometheus", ["--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/data",
                               "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn"],
                environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"],
                output: directory + "/stdout", errors: directory + "/stderr", directory: directory)
            let base = "http://127.0.0.1:\(port)"
            let deadline = ContinuousClock.now + .seconds(120)
            while child.isRunning && ContinuousClock.now < deadline {
                if (try? await client.send(.get, base + "/-/ready"))?.status == 200 {
                    return TestPrometheus(child: child, base: base, directory: directory, client: client)
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            child.send(SIGKILL)
            _ = await child.wait(timeout: .seconds(30))
        }
        let log = (try? String(contentsOfFile: directory + "/stderr", encoding: .utf8)) ?? ""
        await client.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
        throw OperationsTestError("prometheus did not start: \(log.suffix(2000))")
    }

    /// The alerts now pending or firing: name, state and labels.
    func alerts() async throws -> [(name: String, state: String, labels: [String: String])] {
        let answer = try await client.send(.get, base + "/api/v1/alerts")
        let data = answer.json["data"] as? [String: Any]
        return (data?["alerts"] as? [[String: Any]] ?? []).map { alert in
            let labels = alert["labels"] as? [String: String] ?? [:]
            return (labels["alertname"] ?? "", alert["state"] as? String ?? "", labels)
        }
    }

    /// Polls until `alert` is firing (every state seen on the way is returned), for at most `within`.
    func waitUntilFiring(_ alert: String, within: Duration = .seconds(240)) async throws -> [String] {
        var seen: [String] = []
        let deadline = ContinuousClock.now + within
        while ContinuousClock.now < deadline {
            for state in try await alerts().filter({ $0.name == alert }).map(\.state) where seen.last != state {
                seen.append(state)
            }
            if seen.last == "firing" { return seen }
            try await Task.sleep(for: .milliseconds(500))
        }
        return seen
    }

    /// Whether Prometheus ever evaluated `alert` as pending: its `ALERTS` series keeps every
    /// evaluation, so a pending phase shorter than the test's polling is still seen.
    func wasPending(_ alert: String) async throws -> Bool {
        let answer = try await query("count_over_time(ALERTS{alertname=\"\(alert)\",alertstate=\"pending\"}[1h])")
        return answer.status == 200 && answer.body.contains("\"value\"")
    }

    /// Polls until `alert` is neither pending nor firing; false if it still is after `within`.
    func waitUntilResolved(_ alert: String, within: Duration = .seconds(240)) async throws -> Bool {
        let deadline = ContinuousClock.now + within
        while ContinuousClock.now < deadline {
            if try await !alerts().contains(where: { $0.name == alert }) { return true }
            try await Task.sleep(for: .milliseconds(500))
        }
        return false
    }

    /// An instant query: its HTTP status and Prometheus' `status` (`success`, or `error` with `error`).
    func query(_ expression: String) async throws -> (status: Int, result: String, error: String?, body: String) {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = expression.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        let answer = try await client.send(.get, base + "/api/v1/query?query=" + encoded)
        return (answer.status, answer.json["status"] as? String ?? "", answer.json["error"] as? String, answer.body)
    }

    func stop() async {
        child.send(SIGTERM)
        if await child.wait(timeout: .seconds(20)) < 0 || child.isRunning { child.send(SIGKILL) }
        _ = await child.wait(timeout: .seconds(10))
        await client.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
