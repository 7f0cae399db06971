// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import HTTP
import HTTPClientTestSupport
import StoreTestSupport
import Synchronization
import TestSupport
import Testing

/// `wxpay-gateway serve` started as an operator starts it: each refusal's exit status and message,
/// the demo on loopback, and a production start (against a `wxpay-gateway simulate` process) in
/// which the simulator's routes do not exist and the battery's crash hook does not either.
@Suite(.serialized)
struct ServeStartTests {
    static let required = ["WXPAY_APP_ID", "WXPAY_MCH_ID", "WXPAY_API_KEY", "WXPAY_NOTIFY_URL", "GATEWAY_CLIENT_TOKENS"]
    static let clientToken = "start-test-client-token"

    /// A database path in a fresh temp directory, and whether anything was created there.
    /// A fresh directory holding a simulator's root certificate (not Apple's), as `root.pem`.
    static func simulatorRoot() throws -> (directory: URL, root: Certificate, file: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-root-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let root = SimulatorPKI().root
        let file = directory.appendingPathComponent("root.pem").path
        try Data(root.pem.utf8).write(to: URL(fileURLWithPath: file))
        return (directory, root, file)
    }

    /// A production start of the merchant with the iOS app, its JWS root a simulator's (`rootFile`,
    /// allowed but not yet acknowledged), listening on `port`.
    static func productionWithApp(port: Int, rootFile: String) -> [String: String] {
        [
            "WXPAY_APP_ID": "wxd930ea5d5a258f4f", "WXPAY_MCH_ID": "10000100",
            "WXPAY_API_KEY": TestMerchant.apiKey, "WXPAY_NOTIFY_URL": "http://127.0.0.1:\(port)/wechat/notify",
            "GATEWAY_CLIENT_TOKENS": Self.clientToken, "GATEWAY_LISTEN": "127.0.0.1:\(port)",
            "GATEWAY_DATABASE": "sqlite:" + Self.databasePath(), "GATEWAY_RECONCILE_INTERVAL": "0",
            "APPSTORE_BUNDLE_ID": "com.example.courses", "APPSTORE_APP_APPLE_ID": "1234567890",
            "APPSTORE_ROOT_CA_FILE": rootFile, "APPSTORE_ALLOW_UNTRUSTED_ROOT": "1",
        ]
    }

    static func databasePath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-start-\(UUID().uuidString)/gateway.sqlite").path
    }

    @Test func aStartWithoutDemoAndWithoutAMerchantExitsTwoNamingEveryMissingVariable() async throws {
        let database = Self.databasePath()
        // One of the missing ones set under a misspelt name: the refusal says what it was likely meant as.
        let gateway = try CommandProcess(["serve"], environment: ["GATEWAY_DATABASE": "sqlite:" + database,
                                                                   "WXPAY_MHC_ID": "10000100"])
        #expect(await gateway.exitStatus() == 2)
        let message = gateway.stderr
        #expect(message.hasPrefix("serve: refusing to start"))
        let missing = try #require(message.split(separator: "\n").first { $0.contains("missing required variables") })
        for name in Self.required { #expect(missing.contains(name), "\(name) is not named") }
        #expect(message.contains("also: WXPAY_MHC_ID is set but is not a variable the gateway knows; it has no effect (did you mean WXPAY_MCH_ID?)"))
        #expect(message.contains("serve --demo"))
        #expect(gateway.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: database), "a refused start opened the database")
        await gateway.stop()
    }

    @Test("A production start whose WXPAY_APPS repeats a name and an app id and has an unknown kind exits 2 naming each, opening nothing")
    func duplicateAndUnknownAppsStopTheStart() async throws {
        let database = Self.databasePath()
        var environment = Self.productionWithApp(port: 0, rootFile: "/nonexistent").filter { !$0.key.hasPrefix("APPSTORE_") }
        environment["WXPAY_APP_ID"] = nil
        environment["GATEWAY_DATABASE"] = "sqlite:" + database
        environment["WXPAY_APPS"] = "android=wx1111111111111111:app,android=wx2222222222222222:native,"
            + "web=wx1111111111111111:native,mini=wx3333333333333333:miniapp"
        let gateway = try CommandProcess(["serve"], environment: environment)
        #expect(await gateway.exitStatus() == 2)
        let message = gateway.stderr
        #expect(message.hasPrefix("serve: refusing to start"))
        #expect(message.contains("WXPAY_APPS: the name android is given to two apps"))
        #expect(message.contains("WXPAY_APPS: apps android and web have the same app id wx1111111111111111"))
        #expect(message.contains("WXPAY_APPS: app mini: unknown kind \"miniapp\""))
        #expect(!FileManager.default.fileExists(atPath: database), "a refused start opened the database")
        await gateway.stop()
    }

    @Test func demoModeWithAWXPAYVariableSetExitsTwoNamingItButNotItsValue() async throws {
        let gateway = try CommandProcess(["serve", "--demo"], environment: [
            "WXPAY_API_KEY": "a-secret-key-that-must-not-leak!", "GATEWAY_LISTEN": "127.0.0.1:0",
            "GATEWAY_DATABASE": "sqlite:" + Self.databasePath()])
        #expect(await gateway.exitStatus() == 2)
        #expect(gateway.stderr.contains("WXPAY_API_KEY: not allowed with --demo"))
        #expect(!gateway.stderr.contains("a-secret-key"))
        await gateway.stop()
    }

    @Test func demoModeOutsideLoopbackExitsTwoAndSaysWhy() async throws {
        let gateway = try CommandProcess(["serve", "--demo"], environment: [
            "GATEWAY_LISTEN": "0.0.0.0:0", "GATEWAY_DATABASE": "sqlite:" + Self.databasePath()])
        #expect(await gateway.exitStatus() == 2)
        #expect(gateway.stderr.contains("GATEWAY_LISTEN: demo mode listens on loopback only"))
        await gateway.stop()
    }

    @Test func aMisspeltLogLevelExitsTwo() async throws {
        let gateway = try CommandProcess(["serve", "--demo"], environment: [
            "GATEWAY_LOG_LEVEL": "verbose", "GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:" + Self.databasePath()])
        #expect(await gateway.exitStatus() == 2)
        #expect(gateway.stderr.contains("GATEWAY_LOG_LEVEL: expected debug, info, notice, warning or error"))
        await gateway.stop()
    }

    @Test func anUnknownArgumentIsAUsageError() async throws {
        let gateway = try CommandProcess(["serve", "--dmeo"], environment: [:])
        #expect(await gateway.exitStatus() == 64)
        #expect(gateway.stderr.contains("usage: wxpay-gateway serve [--demo]"))
        await gateway.stop()
    }

    /// reconcile needs the merchant and its key, not what only `serve` uses (the notify URL, the
    /// clients' tokens).
    @Test func reconcileRefusesADemoStyleStartWithExitTwoNamingOnlyWhatItUses() async throws {
        let gateway = try CommandProcess(["reconcile", "--date", "2026-11-30"], environment: [
            "GATEWAY_DATABASE": "sqlite:" + Self.databasePath()])
        #expect(await gateway.exitStatus() == 2)
        for name in ["WXPAY_APP_ID", "WXPAY_MCH_ID", "WXPAY_API_KEY"] { #expect(gateway.stderr.contains(name)) }
        for name in ["WXPAY_NOTIFY_URL", "GATEWAY_CLIENT_TOKENS"] { #expect(!gateway.stderr.contains(name)) }
        await gateway.stop()
    }

    @Test func theDemoStartsOnLoopbackWarnsAboutAMisspeltVariableAndServesTheSimulator() async throws {
        let client = try HTTPClient()
        let gateway = try CommandProcess(["serve", "--demo"], environment: [
            "GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:" + Self.databasePath(),
            "GATEWAY_FULFILMENT_ULR": "https://shop.example/hook", "GATEWAY_RECONCILE_INTERVAL": "0"])
        defer { Task { await gateway.stop(); await client.shutdown() } }
        let listening = try #require(await gateway.line(startingWith: "listening on "), "stderr: \(gateway.stderr)")
        let base = String(listening.dropFirst("listening on ".count).prefix { $0 != " " })
        #expect(gateway.stdout.contains("DEMO MODE"))
        #expect(gateway.stderr.contains("GATEWAY_FULFILMENT_ULR is set but is not a variable the gateway knows"))
        #expect(gateway.stderr.contains("did you mean GATEWAY_FULFILMENT_URL?"))
        #expect(!gateway.stderr.contains("shop.example"))

        let created = try await client.send(.post, base + "/v1/orders", token: "demo-client-token",
                                            body: #"{"amount":990,"description":"x","client_ip":"203.0.113.7","out_trade_no":"start-demo-1"}"#)
        #expect(created.status == 201)
        let paid = try await client.send(.post, base + "/simulator/orders/start-demo-1/pay")
        #expect(paid.status == 200)
        let order = try await client.send(.get, base + "/v1/orders/start-demo-1?wait=20", token: "demo-client-token")
        #expect(order.json["state"] as? String == "SUCCESS")
        #expect(await gateway.stop() == 0)
    }

    /// A demo restarted after `clock/advance` carries on from the moved clock: its database was
    /// written on that calendar, and the wall clock would bring back what the moved one ended.
    @Test func aRestartedDemoCarriesOnFromWhereItsClockWasMoved() async throws {
        let path = Self.databasePath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let client = try HTTPClient()
        defer { Task { await client.shutdown() } }
        func start() async throws -> (CommandProcess, String) {
            let gateway = try CommandProcess(["serve", "--demo"], environment: [
                "GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:" + path, "GATEWAY_RECONCILE_INTERVAL": "0"])
            let listening = try #require(await gateway.line(startingWith: "listening on "), "stderr: \(gateway.stderr)")
            return (gateway, String(listening.dropFirst("listening on ".count).prefix { $0 != " " }))
        }
        func clock(_ base: String, advance seconds: Int) async throws -> Date {
            let answer = try await client.send(.post, base + "/simulator/clock/advance", body: #"{"seconds":\#(seconds)}"#)
            return try #require(ISO8601DateFormatter().date(from: answer.json["now"] as? String ?? ""), "\(answer.json)")
        }
        let month = 32 * 86_400
        let (first, firstBase) = try await start()
        #expect(try await clock(firstBase, advance: month).timeIntervalSinceNow > Double(month - 60))
        #expect(await first.stop() == 0)
        let (second, secondBase) = try await start()
        #expect(second.stderr.contains("demo mode's clock carries on ahead of the wall clock"), "\(second.stderr)")
        #expect(try await clock(secondBase, advance: 0).timeIntervalSinceNow > Double(month - 60))
        // The App Store simulator keeps the same clock (its answer is Apple's milliseconds).
        let apple = try await client.send(.post, secondBase + "/appstore-simulator/clock/advance", body: #"{"seconds":0}"#)
        let appleNow = try #require(apple.json["now"] as? Int, "\(apple.json)")
        #expect(Date(timeIntervalSince1970: Double(appleNow) / 1000).timeIntervalSinceNow > Double(month - 60))
        #expect(await second.stop() == 0)
        // A file the gateway did not write (beyond a thousand years, not a number) starts at the
        // wall clock, said in the log: never a crash, never the year 3 million.
        for written in ["1e300", "99999999999999999", "-86400", "abc"] {
            try written.write(toFile: path + ".demo-clock", atomically: true, encoding: .utf8)
            let (third, thirdBase) = try await start()
            #expect(third.stderr.contains("demo mode's clock file is not a file of"), "\(written): \(third.stderr)")
            #expect(abs(try await clock(thirdBase, advance: 0).timeIntervalSinceNow) < 600, "\(written)")
            #expect(await third.stop() == 0)
        }
        // A clock that cannot be kept (the path is a directory) says so when it is moved.
        try FileManager.default.removeItem(atPath: path + ".demo-clock")
        try FileManager.default.createDirectory(atPath: path + ".demo-clock", withIntermediateDirectories: false)
        let (fourth, fourthBase) = try await start()
        _ = try await clock(fourthBase, advance: 60)
        #expect(await eventually(timeout: .seconds(30)) { fourth.stderr.contains("demo mode's clock was moved but could not be kept") },
                "\(fourth.stderr)")
        #expect(await fourth.stop() == 0)
    }

    @Test("serve logs the schema it makes for a new database and the migrations of an upgrade, and nothing when the schema is current")
    func serveLogsTheSchemaItMakesAndEachUpgrade() async throws {
        let path = Self.databasePath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        func start() async throws -> [String] {
            let gateway = try CommandProcess(["serve", "--demo"], environment: [
                "GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:" + path, "GATEWAY_RECONCILE_INTERVAL": "0"])
            _ = try #require(await gateway.line(startingWith: "listening on "), "stderr: \(gateway.stderr)")
            let lines = gateway.stderr.split(separator: "\n").map(String.init).filter { $0.contains("the database's schema") }
            #expect(await gateway.stop() == 0)
            return lines
        }
        let made = try await start()
        let raw = RawSQLite(path: path)
        defer { raw.close() }
        let latest = try #require(raw.scalar("SELECT MAX(version) FROM schema_migrations"))
        #expect(made.count == 1)
        #expect(made.first?.contains("made the database's schema") == true, "\(made)")
        #expect(made.first?.contains(#""schema_version":"\#(latest)""#) == true, "\(made)")

        // As a database the previous release left: its last migration not applied yet.
        #expect(raw.execute("DELETE FROM schema_migrations WHERE version = \(latest)") == 0)
        let upgraded = try await start()
        #expect(upgraded.count == 1)
        let line = try #require(upgraded.first)
        #expect(line.contains("upgraded the database's schema"), "\(line)")
        #expect(line.contains(#""from_version":"\#(Int(latest)! - 1)""#), "\(line)")
        #expect(line.contains(#""schema_version":"\#(latest)""#), "\(line)")
        #expect(line.contains(#""migrations":"\#(latest) "#), "\(line)")
        #expect(line.contains(#""seconds":""#), "\(line)")

        #expect(try await start().isEmpty)
    }

    @Test("A second serve on a SQLite database another serve is serving exits 75 and changes nothing; once the first stops, it starts")
    func aSecondServeOnOneSQLiteDatabaseIsRefused() async throws {
        let path = Self.databasePath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let environment = ["GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:" + path, "GATEWAY_RECONCILE_INTERVAL": "0"]
        let first = try CommandProcess(["serve", "--demo"], environment: environment)
        _ = try #require(await first.line(startingWith: "listening on "), "stderr: \(first.stderr)")
        let second = try CommandProcess(["serve", "--demo"], environment: environment)
        #expect(await second.exitStatus() == 75)
        #expect(second.stderr.contains("another `wxpay-gateway serve` is serving"), "\(second.stderr)")
        #expect(!second.stdout.contains("listening on"))
        #expect(first.isRunning)
        #expect(await first.stop() == 0)
        let third = try CommandProcess(["serve", "--demo"], environment: environment)
        _ = try #require(await third.line(startingWith: "listening on "), "stderr: \(third.stderr)")
        #expect(await third.stop() == 0)
    }

    @Test("demo mode keeps one clock: moving the App Store simulator's dates the gateway's orders on the same calendar, and the banner's app token keeps working")
    func theDemoHasOneClock() async throws {
        let client = try HTTPClient()
        // The business's webhook: which orders it was told are paid, in deliveries signed at a
        // time its own clock accepts (the wall clock's, within the usual five minutes).
        let announced = Mutex<[String]>([])
        var hooks = HTTPRouter()
        hooks.add(.post, "/fulfil") { request in
            let signedAt = request.headers["Gateway-Signature"]?.firstMatch(of: /t=(\d+)/).flatMap { Double($0.output.1) } ?? 0
            guard abs(signedAt - Date().timeIntervalSince1970) < 300 else { return HTTPServerResponse(status: 400) }
            let event = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any]
            if event?["type"] as? String == "order.paid", let order = (event?["data"] as? [String: Any])?["out_trade_no"] as? String {
                announced.withLock { $0.append(order) }
            }
            return HTTPServerResponse(status: 204)
        }
        let receiver = HTTPServer(router: hooks, configuration: .patient)
        let hookPort = try await receiver.start().port
        let gateway = try CommandProcess(["serve", "--demo"], environment: [
            "GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:" + Self.databasePath(), "GATEWAY_RECONCILE_INTERVAL": "0",
            "GATEWAY_FULFILMENT_URL": "http://127.0.0.1:\(hookPort)/fulfil", "GATEWAY_FULFILMENT_SECRET": "demo-clock-webhook-secret"])
        defer { Task { await gateway.stop(); await client.shutdown(); await receiver.shutdown(gracePeriod: .seconds(1)) } }
        let listening = try #require(await gateway.line(startingWith: "listening on "), "stderr: \(gateway.stderr)")
        let base = String(listening.dropFirst("listening on ".count).prefix { $0 != " " })
        let token = try #require(gateway.stdout.firstMatch(of: /app token: (\S+)/)?.output.1)

        let days = 200.0
        let moved = try await client.send(.post, base + "/appstore-simulator/clock/advance", body: #"{"seconds":\#(days * 86400)}"#)
        #expect(moved.status == 200)
        let created = try await client.send(.post, base + "/v1/orders", token: "demo-client-token",
                                            body: #"{"amount":990,"description":"x","client_ip":"203.0.113.7","out_trade_no":"start-demo-clock"}"#)
        #expect(created.status == 201)
        let createdAt = try #require((created.json["created_at"] as? String).flatMap { try? Date($0, strategy: .iso8601) })
        #expect(abs(createdAt.timeIntervalSinceNow - days * 86400) < 3600, "created at \(createdAt)")
        // The WeChat simulator keeps the same time: the order is paid and settles as usual.
        #expect(try await client.send(.post, base + "/simulator/orders/start-demo-clock/pay").status == 200)
        let order = try await client.send(.get, base + "/v1/orders/start-demo-clock?wait=20", token: "demo-client-token")
        #expect(order.json["state"] as? String == "SUCCESS")
        // The webhook's dispatcher keeps it too: the event, dated 200 days ahead, is due now.
        #expect(await eventually(timeout: .seconds(60)) { announced.withLock { $0.contains("start-demo-clock") } },
                "\(gateway.stderr)")
        // Minted by the wall clock, the banner's app token is not expired by the moved one.
        #expect(try await client.send(.get, base + "/v1/catalog", token: String(token)).status == 200)
        #expect(await gateway.stop() == 0)
    }

    @Test("demo mode with WXPAY_API_VERSION=v3 creates v3 orders with the embedded simulator's v3 and settles them by its signed notify")
    func demoModeSpeaksV3() async throws {
        let client = try HTTPClient()
        let gateway = try CommandProcess(["serve", "--demo"], environment: [
            "GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:" + Self.databasePath(), "WXPAY_API_VERSION": "v3",
            "GATEWAY_RECONCILE_INTERVAL": "0", "GATEWAY_POLL_INTERVAL": "60"])
        defer { Task { await gateway.stop(); await client.shutdown() } }
        let listening = try #require(await gateway.line(startingWith: "listening on "), "stderr: \(gateway.stderr)")
        let base = String(listening.dropFirst("listening on ".count).prefix { $0 != " " })
        #expect(gateway.stdout.contains("(API v3)"))
        let created = try await client.send(.post, base + "/v1/orders", token: "demo-client-token",
                                            body: #"{"amount":990,"description":"x","client_ip":"203.0.113.7","out_trade_no":"start-demo-v3"}"#)
        #expect(created.status == 201)
        #expect((created.json["app_params"] as? [String: Any])?["signType"] as? String == "RSA")
        let paid = try await client.send(.post, base + "/simulator/orders/start-demo-v3/pay")
        #expect(paid.status == 200)
        // No reconciler and one poll a minute: the v3 notify is what settles it.
        let order = try await client.send(.get, base + "/v1/orders/start-demo-v3?wait=25", token: "demo-client-token")
        #expect(order.json["state"] as? String == "SUCCESS")
        // The wait's first orderquery may settle it a moment before the notify lands (a loaded
        // machine): the notify's line is waited for, not assumed.
        var text = ""
        _ = try await eventually(timeout: .seconds(30), every: .milliseconds(100)) {
            text = try await client.send(.get, base + "/v1/support/orders?out_trade_no=start-demo-v3", token: "demo-support-token").body
            return text.contains("notify_received")
        }
        #expect(text.contains("api=v3") && text.contains("notify_received"), "\(text)")
        #expect(await gateway.stop() == 0)
    }

    @Test("a start without API v3 on a database with v3 orders in flight warns that they are stranded; once they are final it does not")
    func aStartWithoutV3WarnsOfV3OrdersInFlight() async throws {
        let client = try HTTPClient()
        defer { Task { await client.shutdown() } }
        let path = Self.databasePath()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        func start(_ version: String?) async throws -> (CommandProcess, String) {
            var environment = ["GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:" + path, "GATEWAY_RECONCILE_INTERVAL": "0"]
            environment["WXPAY_API_VERSION"] = version
            let gateway = try CommandProcess(["serve", "--demo"], environment: environment)
            let listening = try #require(await gateway.line(startingWith: "listening on "), "stderr: \(gateway.stderr)")
            return (gateway, String(listening.dropFirst("listening on ".count).prefix { $0 != " " }))
        }
        let stranded = "are still in flight, and API v3 is not configured"
        let (v3, base) = try await start("v3")
        let created = try await client.send(.post, base + "/v1/orders", token: "demo-client-token",
                                            body: #"{"amount":990,"description":"x","client_ip":"203.0.113.7","out_trade_no":"start-back-v3"}"#)
        #expect(created.status == 201)
        #expect(!v3.stderr.contains(stranded))
        #expect(await v3.stop() == 0)

        let (back, _) = try await start(nil)
        #expect(back.stderr.contains(stranded), "\(back.stderr)")
        #expect(back.stderr.contains(#""in_flight":"1""#), "\(back.stderr)")
        #expect(await back.stop() == 0)
        // The order closed (in SQL, as a database a later v3 run left it): nothing of v3 in flight, no warning.
        let raw = RawSQLite(path: path)
        #expect(raw.execute("UPDATE orders SET state = 'CLOSED' WHERE out_trade_no = 'start-back-v3'") == 0)
        raw.close()
        let (after, _) = try await start(nil)
        #expect(!after.stderr.contains(stranded), "\(after.stderr)")
        #expect(await after.stop() == 0)
    }

    /// Production against a separate simulator process: `/simulator/*` answers exactly what an unknown
    /// path answers, a notify settles with GATEWAY_CRASH_POINT=notify_committed:1 set, and the
    /// process keeps running (this build has no crash hook: it warns once and ignores the variable).
    @Test func aProductionStartHasNoSimulatorRoutesAndNoCrashHook() async throws {
        let client = try HTTPClient()
        let simulator = try CommandProcess(["simulate", "--port", "0", "--key", TestMerchant.apiKey], environment: [:])
        let started = StartedGateway()
        defer { Task { await started.gateway?.stop(); await simulator.stop(); await client.shutdown() } }
        let simulatorLine = try #require(await simulator.line(startingWith: "listening "))
        let wechat = String(simulatorLine.split(separator: " ")[1])
        let running = try #require(await started.start { port in [
            "WXPAY_APP_ID": "wxd930ea5d5a258f4f", "WXPAY_MCH_ID": "10000100",
            "WXPAY_API_KEY": TestMerchant.apiKey, "WXPAY_NOTIFY_URL": "http://127.0.0.1:\(port)/wechat/notify",
            "WXPAY_API_BASE": wechat, "WXPAY_API_BACKUP_BASE": wechat, "GATEWAY_CLIENT_TOKENS": Self.clientToken,
            "GATEWAY_LISTEN": "127.0.0.1:\(port)", "GATEWAY_DATABASE": "sqlite:" + Self.databasePath(),
            "GATEWAY_RECONCILE_INTERVAL": "0", "GATEWAY_CRASH_POINT": "notify_committed:1",
        ] }, "the production gateway did not start")
        let base = started.base
        #expect(running.stderr.contains("GATEWAY_CRASH_POINT is set but ignored"))

        let unknown = try await client.send(.post, base + "/no/such/path")
        for path in ["/simulator/orders/start-prod-1/pay", "/simulator/faults", "/simulator/stats"] {
            let method: HTTPMethod = path.hasSuffix("/pay") ? .post : .get
            let answer = try await client.send(method, base + path)
            #expect(answer.status == 404 && answer.body == unknown.body, "\(path) exists outside demo mode")
        }

        // WeChat's side: the user pays, and WeChat posts its signed notify to the gateway.
        #expect(try await client.createAndPay("start-prod-1", base: base, wechat: wechat, token: Self.clientToken) == "SUCCESS")
        let metrics = try await client.send(.get, base + "/metrics").body
        #expect(metrics.contains(#"wxpay_notifies_total{channel="app",outcome="settled"} 1"#), "the notify itself settled the order")
        #expect(running.isRunning, "the gateway died at the crash point")
        #expect(try await client.send(.get, base + "/healthz").status == 200)
        #expect(!running.stderr.contains("crash point "))
        #expect(await running.stop() == 0)
    }

    /// A production gateway trusting a root other than Apple Root CA - G3 credits whatever that
    /// root's key signs. `APPSTORE_ALLOW_UNTRUSTED_ROOT=1` alone (one word, easy to copy from a test
    /// setup) is refused; the root's own SHA-256 in `APPSTORE_UNTRUSTED_ROOT_SHA256` acknowledges
    /// it, and even then the start says so.
    @Test func aProductionStartTrustingARootThatIsNotApplesIsRefusedUnlessThatRootIsAcknowledged() async throws {
        let (directory, root, rootFile) = try Self.simulatorRoot()
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = { (port: Int, acknowledgement: String?) -> [String: String] in
            var variables = Self.productionWithApp(port: port, rootFile: rootFile)
            variables["APPSTORE_UNTRUSTED_ROOT_SHA256"] = acknowledgement
            return variables
        }
        for acknowledgement in [nil, String(repeating: "ab", count: 32)] {
            let refused = try CommandProcess(["serve"], environment: environment(closedLoopbackPort(), acknowledgement))
            #expect(await refused.exitStatus() == 2)
            #expect(refused.stderr.contains("APPSTORE_UNTRUSTED_ROOT_SHA256"), "\(refused.stderr)")
            #expect(refused.stderr.contains(root.sha256Fingerprint), "the refusal says which root it would trust")
            await refused.stop()
        }

        let started = StartedGateway()
        defer { Task { await started.gateway?.stop() } }
        let running = try #require(await started.start { port in
            environment(port, root.sha256Fingerprint.uppercased())
        }, "the acknowledged start did not start")
        #expect(running.stderr.contains("a root that is not Apple Root CA - G3"))
        #expect(running.stderr.contains(root.sha256Fingerprint))
        #expect(await running.stop() == 0)
    }

    /// The receipt root (APPSTORE_RECEIPT_ROOT_CA_FILE) follows the same rule: another root than
    /// Apple Root CA in production needs its own SHA-256 in APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256.
    @Test("A production start verifying receipts to a root that is not Apple Root CA is refused unless that root is acknowledged")
    func aReceiptRootThatIsNotApplesIsRefusedUnlessAcknowledged() async throws {
        let (directory, root, rootFile) = try Self.simulatorRoot()
        defer { try? FileManager.default.removeItem(at: directory) }
        let refused = try CommandProcess(["serve"], environment: [
            "WXPAY_APP_ID": "wxd930ea5d5a258f4f", "WXPAY_MCH_ID": "10000100",
            "WXPAY_API_KEY": TestMerchant.apiKey, "WXPAY_NOTIFY_URL": "http://127.0.0.1:9/wechat/notify",
            "GATEWAY_CLIENT_TOKENS": Self.clientToken, "GATEWAY_LISTEN": "127.0.0.1:\(closedLoopbackPort())",
            "GATEWAY_DATABASE": "sqlite:" + Self.databasePath(), "GATEWAY_RECONCILE_INTERVAL": "0",
            "APPSTORE_BUNDLE_ID": "com.example.courses", "APPSTORE_APP_APPLE_ID": "1234567890",
            "APPSTORE_ROOT_CA_FILE": rootFile, "APPSTORE_ALLOW_UNTRUSTED_ROOT": "1",
            "APPSTORE_UNTRUSTED_ROOT_SHA256": root.sha256Fingerprint, "APPSTORE_RECEIPT_ROOT_CA_FILE": rootFile,
        ])
        #expect(await refused.exitStatus() == 2)
        #expect(refused.stderr.contains("APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256") && refused.stderr.contains("Apple Root CA"),
                "\(refused.stderr)")
        #expect(refused.stderr.contains(root.sha256Fingerprint))
        await refused.stop()
    }

    /// The Server API key without the receipt root refuses the start, saying where Apple Root CA is
    /// and its fingerprint; `APPSTORE_RECEIPT_VERIFICATION=off` starts it, and the start says what
    /// that costs.
    @Test("A production start with the Server API key and no receipt root is refused unless APPSTORE_RECEIPT_VERIFICATION=off, which still warns")
    func theKeyWithoutAReceiptRootIsRefusedUnlessTurnedOff() async throws {
        let (directory, root, rootFile) = try Self.simulatorRoot()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("key.p8").path
        try Data(ES256PrivateKey.generate().pkcs8PEM.utf8).write(to: URL(fileURLWithPath: keyFile))
        let environment = { (port: Int, off: Bool) -> [String: String] in
            var variables = Self.productionWithApp(port: port, rootFile: rootFile).merging([
                "APPSTORE_UNTRUSTED_ROOT_SHA256": root.sha256Fingerprint,
                "APPSTORE_ISSUER_ID": "57246542-96fe-1a63-e053-0824d011072a", "APPSTORE_KEY_ID": "SIMKEY0001",
                "APPSTORE_PRIVATE_KEY_FILE": keyFile, "APPSTORE_BACKFILL_INTERVAL": "0",
                "APPSTORE_API_BASE": RefusedLoopbackPort().baseURL, "APPSTORE_SANDBOX_API_BASE": RefusedLoopbackPort().baseURL,
            ]) { $1 }
            if off { variables["APPSTORE_RECEIPT_VERIFICATION"] = "off" }
            return variables
        }
        let refused = try CommandProcess(["serve"], environment: environment(closedLoopbackPort(), false))
        #expect(await refused.exitStatus() == 2)
        #expect(refused.stderr.contains("APPSTORE_RECEIPT_ROOT_CA_FILE") && refused.stderr.contains("AppleIncRootCertificate.cer")
                    && refused.stderr.contains(TrustedRoots.appleRootCAFingerprint), "\(refused.stderr)")
        await refused.stop()

        let started = StartedGateway()
        defer { Task { await started.gateway?.stop() } }
        let running = try #require(await started.start { port in environment(port, true) }, "the acknowledged start did not start")
        #expect(running.stderr.contains("APPSTORE_RECEIPT_VERIFICATION=off"), "\(running.stderr)")
        #expect(await running.stop() == 0)
    }
}
