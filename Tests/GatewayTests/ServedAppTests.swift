// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
@testable import Gateway
import Glibc
import HTTP
import StorageCore
import StoreTestSupport
import Testing
import WeChatPaySimulator

/// The app-facing parts of the built binary: demo mode's app token, the catalog reloaded on
/// SIGHUP, a bad catalog refusing start-up, and the `app-token` command.
@Suite(.serialized)
struct ServedAppTests {
    static func get(_ url: String, token: String?) async throws -> (status: Int, json: [String: Any]) {
        let client = try HTTPClient()
        defer { Task { await client.shutdown() } }
        var headers = HTTPHeaders()
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        let response = try await client.execute(HTTPClientRequest(
            method: .get, url: url, headers: headers, timeouts: .init(connect: .seconds(5), total: .seconds(30))))
        return (response.status, GatewayRig.object(response.body))
    }

    static func prices(_ gateway: ServedGateway) async throws -> [String: Int] {
        let catalog = try await get(gateway.base + "/v1/catalog", token: gateway.appToken)
        var prices: [String: Int] = [:]
        for product in catalog.json["products"] as? [[String: Any]] ?? [] {
            if let id = product["id"] as? String { prices[id] = product["amount"] as? Int }
        }
        return prices
    }

    @Test func demoModePrintsAnAppTokenForTheDemoUserAndShipsACatalog() async throws {
        let gateway = try await ServedGateway.start()
        defer { Task { await gateway.stop() } }
        let token = try #require(gateway.appToken)
        let claims = try AppTokenVerifier(secrets: [AppConfiguration.demoTokenSecret]).verify(token, now: Date())
        #expect(claims.subject == AppConfiguration.demoUser)
        #expect(try await Self.prices(gateway)["swift-101"] == 990)
        #expect(try await Self.get(gateway.base + "/v1/me/orders", token: token).json["orders"] as? [Any] != nil)
        let spec = try await Self.get(gateway.base + "/openapi.json", token: nil)
        #expect(spec.status == 200 && spec.json["openapi"] as? String == "3.1.0")
        // The banner names the demo's WeChat apps and a JSAPI payer's openid that the simulator takes.
        let banner = try String(contentsOf: gateway.directory.appendingPathComponent("out"), encoding: .utf8)
        for app in WeChatApps.demo {
            #expect(banner.contains("\(app.name)=\(app.appID):\(app.kind.rawValue)"), "\(app.name) missing:\n\(banner)")
        }
        // The catalog's iOS memberships are the embedded App Store's subscriptions, yearly above monthly.
        let client = try HTTPClient()
        defer { Task { await client.shutdown() } }
        let products = try await client.execute(HTTPClientRequest(
            method: .get, url: gateway.base + "/appstore-simulator/subscription-products", headers: HTTPHeaders(),
            timeouts: .init(connect: .seconds(5), total: .seconds(30))))
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(products.body)) as? [[String: Any]])
        #expect(Set(listed.map { "\($0["productId"] ?? "") \($0["period"] ?? "") \($0["level"] ?? "")" })
                == ["com.example.vip.monthly P1M 2", "com.example.vip.yearly P1Y 1"])
        #expect(banner.contains(#""productId":"com.example.vip.monthly","type":"Auto-Renewable Subscription""#))
        let mini = WeChatApps.demo[1]
        #expect(banner.contains(#""app":"mini","openid":"\#(SimulatorConfiguration.openID(of: AppConfiguration.demoUser, under: mini.appID))""#))
    }

    @Test func sighupReloadsAGoodCatalogAndKeepsTheOldOneWhenTheNewIsBad() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        // Written as an operator should: a temp file renamed over the old one.
        func write(_ text: String) throws {
            let temporary = file.appendingPathExtension("new")
            try Data(text.utf8).write(to: temporary)
            _ = rename(temporary.path, file.path)
        }
        try write(#"{"products":[{"id":"swift-101","amount":990,"description":"Swift 入门课"}]}"#)
        let gateway = try await ServedGateway.start(environment: ["GATEWAY_CATALOG": file.path])
        defer { Task { await gateway.stop() } }
        #expect(try await Self.prices(gateway) == ["swift-101": 990])

        try write(#"{"products":[{"id":"swift-101","amount":1990,"description":"Swift 入门课"},{"id":"go-1","amount":5,"description":"Go"}]}"#)
        gateway.send(signal: SIGHUP)
        var reloaded = false
        for _ in 0..<600 where !reloaded {
            reloaded = try await Self.prices(gateway) == ["swift-101": 1990, "go-1": 5]
            if !reloaded { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(reloaded)

        try write(#"{"products":[{"id":"swift-101","amount":0,"description":"Swift 入门课"}]}"#)
        gateway.send(signal: SIGHUP)
        var refused = false
        for _ in 0..<600 where !refused {
            refused = gateway.log.contains("catalog reload refused")
            if !refused { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(refused)
        #expect(gateway.log.contains(#"product \"swift-101\": amount"#))
        #expect(try await Self.prices(gateway) == ["swift-101": 1990, "go-1": 5])
        #expect(gateway.process.isRunning)
    }

    @Test func aBadCatalogStopsStartUpNamingTheProductAndTheRule() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"products":[{"id":"swift-101","amount":990,"description":"ok"},{"id":"bad one","amount":1,"description":"x"}]}"#.utf8)
            .write(to: file)
        let run = try await ServedGateway.run(ServedGateway.demoArguments, environment: ["GATEWAY_CATALOG": file.path])
        #expect(run.status != 0)
        #expect(run.errors.contains("GATEWAY_CATALOG") && run.errors.contains("product #2: id must be"), "\(run.errors)")
    }

    @Test func theAppTokenCommandMintsATokenTheGatewayAccepts() async throws {
        let secret = "a-backend-secret-of-at-least-32-bytes-01"
        let fromEnvironment = try await ServedGateway.run(["app-token", "--sub", "u-7", "--ttl", "600"],
                                                    environment: ["GATEWAY_APP_TOKEN_SECRETS": "\(secret),older-secret-also-32-bytes-long-0002"])
        #expect(fromEnvironment.status == 0)
        let token = fromEnvironment.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let claims = try AppTokenVerifier(secrets: [secret]).verify(token, now: Date())
        #expect(claims.subject == "u-7" && claims.expiresAt - claims.issuedAt == 600)

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data((secret + "\n").utf8).write(to: file)
        let fromFile = try await ServedGateway.run(["app-token", "--sub", "u-8", "--secret-file", file.path])
        #expect(fromFile.status == 0)
        let minted = fromFile.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try AppTokenVerifier(secrets: [secret]).verify(minted, now: Date()).expiresAt
            - AppTokenVerifier(secrets: [secret]).verify(minted, now: Date()).issuedAt == 3600)

        for (arguments, environment, says) in [
            (["app-token", "--sub", "u"], [String: String](), "no secret"),
            (["app-token", "--sub", "u"], ["GATEWAY_APP_TOKEN_SECRETS": "too-short"], "at least 32 bytes"),
            (["app-token"], ["GATEWAY_APP_TOKEN_SECRETS": secret], "--sub"),
            (["app-token", "--sub", "u", "--ttl", "86401"], ["GATEWAY_APP_TOKEN_SECRETS": secret], "--ttl"),
            // A name the configured gateway does not have would mint a token that creates nothing.
            (["app-token", "--sub", "u", "--apps", "android,wbe"],
             ["GATEWAY_APP_TOKEN_SECRETS": secret, "WXPAY_APPS": "android=wx1111111111111111:app,web=wx4444444444444444:native"],
             "--apps names wbe, not an app of this gateway (its apps: android, web)"),
            (["app-token", "--sub", "u", "--apps", "web"], ["GATEWAY_APP_TOKEN_SECRETS": secret, "WXPAY_APP_ID": "wx1111111111111111"],
             "--apps names web, not an app of this gateway (its apps: app)"),
            // One the gateway would not start with cannot vouch for any name.
            (["app-token", "--sub", "u", "--apps", "zzz"], ["GATEWAY_APP_TOKEN_SECRETS": secret, "WXPAY_APPS": "android=wx1111111111111111:app,"],
             "--apps cannot be checked: the gateway would refuse this WXPAY_APPS"),
            (["app-token", "--sub", "u", "--apps", "web,web"], ["GATEWAY_APP_TOKEN_SECRETS": secret], "each app named once"),
            (["app-token", "--sub", "u", "--apps", "web", "--apps", "h5"], ["GATEWAY_APP_TOKEN_SECRETS": secret], "--apps is given once"),
        ] {
            let refused = try await ServedGateway.run(arguments, environment: environment)
            #expect(refused.status == 64, "\(arguments)")
            #expect(refused.errors.contains(says), "\(refused.errors)")
            #expect(!refused.errors.contains("too-short") && !refused.errors.contains(secret))
        }
    }

    @Test("a token the app-token command mints with --apps creates orders through the apps it names and is 403 app_not_allowed through another",
          arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func theAppTokenCommandsAppsRestrictCreates(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let minted = try await ServedGateway.run(["app-token", "--sub", "u-apps", "--apps", "web,h5"],
                                                 environment: ["GATEWAY_APP_TOKEN_SECRETS": AppConfiguration.demoTokenSecret])
        #expect(minted.status == 0, "\(minted.errors)")
        let token = minted.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        let web = try await rig.send(.post, "/v1/orders", token: token,
                                     body: #"{"product_id":"swift-101","out_trade_no":"cmd-apps-1","app":"web"}"#)
        #expect(web.status == 201 && web.json.string("app") == "web", "\(String(decoding: web.body, as: UTF8.self))")
        #expect(try await rig.store.order("cmd-apps-1")?.userID == "u-apps")
        for (number, extra) in [("cmd-apps-2", #","app":"android""#), ("cmd-apps-3", "")] {
            let refused = try await rig.send(.post, "/v1/orders", token: token,
                                             body: #"{"product_id":"swift-101","out_trade_no":"\#(number)"\#(extra)}"#)
            #expect(refused.status == 403 && refused.error?["code"] as? String == "app_not_allowed", "\(refused.json)")
            #expect(try await rig.store.order(number) == nil)
        }
    }
}
