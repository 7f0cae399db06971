// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import HTTP
import HTTPClientTestSupport
import TestSupport
import Testing

/// What a database is bound to once used (`BindingStore`): whose it is — demo mode's, or one
/// merchant's — and what each product sold from it grants. A gateway configured otherwise refuses
/// to start, and a catalog reload that changes a sold product's grant is refused, because either
/// changes what payments already on record mean.
@Suite(.serialized)
struct DatabaseBindingTests {
    static let catalog = #"""
        {"products":[{"id":"swift-101","amount":990,"description":"Swift"},
         {"id":"vip-month","amount":3000,"description":"VIP","type":"membership","period":"P1M","entitlement":"vip"}]}
        """#

    /// `serve --demo` on `database` with the catalog file at `catalog`.
    static func demo(_ database: String, catalog: String) throws -> CommandProcess {
        try CommandProcess(["serve", "--demo"], environment: [
            "GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:" + database, "GATEWAY_RECONCILE_INTERVAL": "0",
            "GATEWAY_CATALOG": catalog,
        ])
    }

    /// Writes `text` to `path` the way operations.md says: a new file renamed into place.
    static func replace(_ path: String, with text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path + ".new"))
        #expect(rename(path + ".new", path) == 0)
    }

    @Test(.timeLimit(.minutes(5)))
    func aCatalogThatChangesWhatASoldProductGrantsIsRefusedOnReloadAndAtStart() async throws {
        let directory = try Operations.temporaryDirectory("wxpay-bind")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/gateway.sqlite"
        let catalog = directory + "/catalog.json"
        try Self.replace(catalog, with: Self.catalog)
        let started = StartedGateway()
        let gateway = try #require(try await started.start({ port in
            ["GATEWAY_LISTEN": "127.0.0.1:\(port)", "GATEWAY_DATABASE": "sqlite:" + database,
             "GATEWAY_RECONCILE_INTERVAL": "0", "GATEWAY_CATALOG": catalog]
        }, demo: true))
        let base = started.base
        let client = try HTTPClient()
        do {
            let token = "demo-client-token"
            let created = try await client.send(.post, base + "/v1/orders", token: token, body:
                #"{"product_id":"vip-month","user_id":"kim","client_ip":"203.0.113.7","out_trade_no":"bind-vip-1"}"#)
            #expect(created.status == 201, "\(created.body)")
            #expect(try await client.send(.post, base + "/simulator/orders/bind-vip-1/pay").status == 200)
            func vip() async throws -> String? {
                let entitlements = try await client.send(.get, base + "/v1/users/kim/entitlements", token: token).json
                let grants = entitlements["entitlements"] as? [[String: Any]] ?? []
                return grants.first { $0["entitlement"] as? String == "vip" }?["expires_at"] as? String
            }
            #expect(try await eventually(timeout: .seconds(60)) { try await vip() != nil })
            let paidFor = try await vip()
            // What WxpayReloadRefused reads: 1 before any reload, 0 once one is refused, 1 again
            // with the first applied.
            func reloadSuccessful() async throws -> String? {
                let metrics = try await client.send(.get, base + "/metrics")
                return metrics.body.split(separator: "\n").first { $0.hasPrefix(#"wxpay_reload_successful{what="catalog"} "#) }
                    .map { String($0.split(separator: " ").last ?? "") }
            }
            #expect(try await eventually(timeout: .seconds(30)) { try await reloadSuccessful() == "1" })

            // The month's pass made a year's: refused, and the pass still ends where it did.
            let longer = Self.catalog.replacingOccurrences(of: "P1M", with: "P1Y")
            try Self.replace(catalog, with: longer)
            kill(gateway.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(60)) { gateway.stderr.contains("catalog reload refused") })
            #expect(gateway.stderr.contains("vip-month was sold as a membership of P1M granting vip; this catalog makes it "
                                            + "a membership of P1Y granting vip"), "\(gateway.stderr)")
            #expect(try await vip() == paidFor)
            // (set once the hook has returned, just after its log line)
            #expect(try await eventually(timeout: .seconds(30)) { try await reloadSuccessful() == "0" })
            // Nor may it leave the catalog (its buyers would be left a course's grant of its id).
            try Self.replace(catalog, with: #"{"products":[{"id":"swift-101","amount":990,"description":"Swift"}]}"#)
            kill(gateway.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(60)) { gateway.stderr.contains("this catalog deletes it") })
            #expect(try await vip() == paidFor)
            // Nor may a new membership take the name of a product sold outside the catalog: its
            // buyer holds a course of `prem2`, and an id reading as a catalog name grants nothing.
            let outside = try await client.send(.post, base + "/v1/orders", token: token, body:
                #"{"amount":100,"description":"x","product_id":"prem2","user_id":"kim","client_ip":"203.0.113.7","out_trade_no":"bind-prem-1"}"#)
            #expect(outside.status == 201, "\(outside.body)")
            #expect(try await client.send(.post, base + "/simulator/orders/bind-prem-1/pay").status == 200)
            func grants() async throws -> [String] {
                let entitlements = try await client.send(.get, base + "/v1/users/kim/entitlements", token: token).json
                return (entitlements["entitlements"] as? [[String: Any]] ?? []).compactMap { $0["entitlement"] as? String }
            }
            #expect(try await eventually(timeout: .seconds(60)) { try await grants().contains("prem2") })
            let premium = #",{"id":"prem2-month","amount":3000,"description":"P","type":"membership","period":"P1M","entitlement":"prem2"}]}"#
            try Self.replace(catalog, with: Self.catalog.replacingOccurrences(of: "]}", with: premium))
            kill(gateway.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(60)) { gateway.stderr.contains("which prem2 reads as") })
            #expect(gateway.stderr.contains("prem2 was sold outside the catalog as a course granting prem2"), "\(gateway.stderr)")
            #expect(try await grants().contains("prem2"))
            // A product nobody bought may still change what it grants (a mistake fixed in time).
            try Self.replace(catalog, with: Self.catalog.replacingOccurrences(
                of: #""description":"Swift"}"#, with: #""description":"Swift","entitlement":"swift-basics"}"#))
            kill(gateway.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(60)) { gateway.stderr.contains("catalog reloaded") })
            #expect(try await eventually(timeout: .seconds(30)) { try await reloadSuccessful() == "1" })
            #expect(await gateway.stop() == 0)

            // Nor does a start take the changed catalog.
            try Self.replace(catalog, with: longer)
            let refused = try Self.demo(database, catalog: catalog)
            #expect(await refused.exitStatus() == 2)
            #expect(refused.stderr.contains("GATEWAY_CATALOG: vip-month was sold as a membership of P1M granting vip"),
                    "\(refused.stderr)")
            await refused.stop()
            // doctor says so before a start would, in serve's words, and passes the catalog as sold.
            let changed = try Self.doctor(database, catalog: catalog)
            _ = await changed.exitStatus(within: 120)
            #expect(changed.stdout.contains("FAIL  catalog: GATEWAY_CATALOG: vip-month was sold as a membership of P1M granting vip"),
                    "\(changed.stdout)")
            await changed.stop()
            try Self.replace(catalog, with: Self.catalog)
            let same = try Self.doctor(database, catalog: catalog)
            _ = await same.exitStatus(within: 120)
            #expect(same.stdout.contains("ok    catalog: "), "\(same.stdout)")
            await same.stop()
        } catch {
            Issue.record("\(error)")
        }
        await client.shutdown()
        await gateway.stop()
    }

    /// doctor with a production merchant on `database` (its WeChat checks fail: nothing answers
    /// for WeChat Pay; the database line fails too on demo mode's database).
    static func doctor(_ database: String, catalog: String? = nil) throws -> CommandProcess {
        let port = closedLoopbackPort()
        var environment = [
            "WXPAY_APP_ID": "wxd930ea5d5a258f4f", "WXPAY_MCH_ID": "10000100", "WXPAY_API_KEY": TestMerchant.apiKey,
            "WXPAY_NOTIFY_URL": "http://127.0.0.1:\(port)/wechat/notify", "GATEWAY_CLIENT_TOKENS": "binding-client-token",
            "WXPAY_API_BASE": "http://127.0.0.1:\(port)", "WXPAY_API_BACKUP_BASE": "http://127.0.0.1:\(port)",
            "GATEWAY_DATABASE": "sqlite:" + database,
        ]
        environment["GATEWAY_CATALOG"] = catalog
        return try CommandProcess(["doctor"], environment: environment)
    }

    @Test(.timeLimit(.minutes(5)))
    func aDatabaseServesOnlyTheModeAndMerchantItWasMadeBy() async throws {
        let directory = try Operations.temporaryDirectory("wxpay-owner")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/gateway.sqlite"
        let catalog = directory + "/catalog.json"
        try Self.replace(catalog, with: Self.catalog)
        let demo = try Self.demo(database, catalog: catalog)
        _ = try #require(await demo.line(startingWith: "listening on "), "stderr: \(demo.stderr)")
        #expect(await demo.stop() == 0)

        func production(_ database: String, merchant: String) throws -> CommandProcess {
            let port = closedLoopbackPort()
            return try CommandProcess(["serve"], environment: [
                "WXPAY_APP_ID": "wxd930ea5d5a258f4f", "WXPAY_MCH_ID": merchant, "WXPAY_API_KEY": TestMerchant.apiKey,
                "WXPAY_NOTIFY_URL": "http://127.0.0.1:\(port)/wechat/notify", "GATEWAY_CLIENT_TOKENS": "binding-client-token",
                "GATEWAY_LISTEN": "127.0.0.1:\(port)", "GATEWAY_DATABASE": "sqlite:" + database,
                "GATEWAY_RECONCILE_INTERVAL": "0",
            ])
        }
        // Demo mode's database: its simulated payments must never reach production's webhook.
        let onDemo = try production(database, merchant: "10000100")
        #expect(await onDemo.exitStatus() == 2)
        #expect(onDemo.stderr.contains("GATEWAY_DATABASE is demo mode's database"), "\(onDemo.stderr)")
        await onDemo.stop()
        // doctor says so before a start would: its database line fails with serve's reason.
        let doctor = try Self.doctor(database)
        _ = await doctor.exitStatus(within: 120)
        #expect(doctor.stdout.contains("FAIL  database: GATEWAY_DATABASE is demo mode's database"), "\(doctor.stdout)")
        await doctor.stop()

        // A merchant's database: neither demo mode nor another merchant serves it.
        let merchantDatabase = directory + "/merchant.sqlite"
        let first = try production(merchantDatabase, merchant: "10000100")
        _ = try #require(await first.line(startingWith: "wxpay-gateway listening on "), "stderr: \(first.stderr)")
        #expect(await first.stop() == 0)
        let other = try production(merchantDatabase, merchant: "10000200")
        #expect(await other.exitStatus() == 2)
        #expect(other.stderr.contains("holds merchant 10000100's orders, and WXPAY_MCH_ID is 10000200"), "\(other.stderr)")
        await other.stop()
        let demoOnMerchant = try Self.demo(merchantDatabase, catalog: catalog)
        #expect(await demoOnMerchant.exitStatus() == 2)
        #expect(demoOnMerchant.stderr.contains("GATEWAY_DATABASE is merchant 10000100's production database"),
                "\(demoOnMerchant.stderr)")
        await demoOnMerchant.stop()
        let again = try production(merchantDatabase, merchant: "10000100")
        _ = try #require(await again.line(startingWith: "wxpay-gateway listening on "), "stderr: \(again.stderr)")
        #expect(await again.stop() == 0)
    }
}
