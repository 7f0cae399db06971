// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import JSON
import StorageCore
import Testing

/// The catalog file: its rules, unknown keys kept, and a bad file refused at start.
struct CatalogTests {
    static func parse(_ text: String) -> Result<Catalog, CatalogError> {
        do throws(CatalogError) {
            return .success(try Catalog.parse(Array(text.utf8)))
        } catch {
            return .failure(error)
        }
    }

    @Test func aValidCatalogKeepsItsProductsInOrderTheirAppleIdsAndUnknownKeys() throws {
        let catalog = try Self.parse(#"""
            {"products":[{"id":"swift-101","amount":990,"description":"Swift 入门课","active":true,"apple_product_id":"com.x.swift101","tier":3},
                         {"id":"old.1","amount":1,"description":"d","active":false},
                         {"id":"A_b-9","amount":1000000000,"description":"max"}],"version":3}
            """#).get()
        #expect(catalog.products.map(\.id) == ["swift-101", "old.1", "A_b-9"])
        #expect(catalog.product("swift-101")?.appleProductID == "com.x.swift101")
        #expect(catalog.product(appleProductID: "com.x.swift101")?.id == "swift-101")
        #expect(catalog.product(appleProductID: "swift-101") == nil)
        #expect(catalog.product("swift-101")?.extra == ["tier": .int(3)])
        #expect(catalog.product("old.1")?.active == false)
        #expect(catalog.product("A_b-9")?.active == true)
        #expect(String(decoding: catalog.json, as: UTF8.self)
            == #"{"products":[{"amount":990,"apple_product_id":"com.x.swift101","description":"Swift 入门课","entitlement":"swift-101","id":"swift-101","type":"course"},{"amount":1000000000,"description":"max","entitlement":"A_b-9","id":"A_b-9","type":"course"}]}"#)
    }

    @Test("A membership names its period and entitlement; several products may share one; a course grants its own id unless renamed")
    func membershipsAndEntitlementsAreRead() throws {
        let catalog = try Self.parse(#"""
            {"products":[{"id":"vip-m","amount":3000,"description":"月卡","type":"membership","period":"P1M","entitlement":"vip"},
                         {"id":"vip-y","amount":29800,"description":"年卡","type":"membership","period":"P1Y","entitlement":"vip"},
                         {"id":"vip-w","amount":900,"description":"周卡","type":"membership","period":"P2W","entitlement":"vip"},
                         {"id":"swift-101","amount":990,"description":"课"},
                         {"id":"swift-102","amount":990,"description":"课","type":"course","entitlement":"swift-bundle"},
                         {"id":"coins-60","amount":600,"description":"60 币","type":"consumable"}]}
            """#).get()
        #expect(catalog.product("vip-m")?.kind == .membership(try #require(MembershipPeriod("P1M"))))
        #expect(catalog.product("vip-y")?.kind.period?.months == 12)
        #expect(catalog.product("vip-w")?.kind.period?.days == 14)
        #expect(catalog.products.filter { $0.entitlement == "vip" }.count == 3)
        #expect(catalog.product("swift-101")?.entitlement == "swift-101")
        #expect(catalog.product("swift-101")?.kind == .course)
        #expect(catalog.product("swift-102")?.entitlement == "swift-bundle")
        #expect(catalog.product("coins-60")?.kind == .consumable)
        #expect(catalog.product("vip-m")?.extra == [:])
        #expect(String(decoding: try #require(catalog.product("vip-m")).json, as: UTF8.self)
            == #"{"amount":3000,"description":"月卡","entitlement":"vip","id":"vip-m","period":"P1M","type":"membership"}"#)
    }

    @Test("Periods are one ISO 8601 unit of up to ten years; anything else is refused", arguments: [
        ("P1D", 0, 1), ("P3660D", 0, 3660), ("P1W", 0, 7), ("P1M", 1, 0), ("P3M", 3, 0), ("P120M", 120, 0), ("P1Y", 12, 0), ("P10Y", 120, 0),
    ])
    func periodsParse(text: String, months: Int, days: Int) throws {
        let period = try #require(MembershipPeriod(text))
        #expect(period.months == months && period.days == days && period.text == text)
    }

    @Test("Malformed periods are refused", arguments: [
        "", "P", "PM", "P0M", "P01M", "P-1M", "P+1M", "P1", "1M", "p1m", "P1m", "P1Y6M", "PT1H", "P1.5M", "P11Y", "P121M", "P3661D", "P521W", "P 1M",
    ])
    func badPeriodsAreRefused(text: String) {
        #expect(MembershipPeriod(text) == nil)
    }

    @Test("One message names every problem of every product: a bad period, a membership without one, an unknown type")
    func everyProblemIsNamedAtOnce() {
        guard case .failure(let error) = Self.parse(#"""
            {"products":[{"id":"a","amount":1,"description":"d","type":"membership","period":"P1X","entitlement":"vip"},
                         {"id":"b","amount":1,"description":"d","type":"membership"},
                         {"id":"c","amount":1,"description":"d","type":"subscription"},
                         {"id":"d","amount":0,"description":"d","entitlement":"bad name"},
                         {"id":"e","amount":1,"description":"d","period":"P1M"},
                         {"id":"f","amount":1,"description":"d","type":"membership","period":30}]}
            """#)
        else {
            Issue.record("accepted")
            return
        }
        for says in [#"product "a": period must be one ISO 8601 unit"#, #"product "b": a membership needs a period"#,
                     #"product "c": type must be "course", "membership" or "consumable""#, #"product "d": amount"#,
                     #"product "d": entitlement must be"#, #"product "e": period is for a membership only"#,
                     #"product "f": period must be"#] {
            #expect(error.description.contains(says), "\(error)")
        }
    }

    @Test(arguments: [
        (#"{"products":[{"id":"a","amount":0,"description":"d"}]}"#, #"product "a": amount"#),
        (#"{"products":[{"id":"a","amount":1000000001,"description":"d"}]}"#, #"product "a": amount"#),
        (#"{"products":[{"id":"a","amount":9.9,"description":"d"}]}"#, #"product "a": amount"#),
        (#"{"products":[{"id":"a","amount":"990","description":"d"}]}"#, #"product "a": amount"#),
        (#"{"products":[{"id":"a","amount":1}]}"#, #"product "a": description"#),
        (#"{"products":[{"id":"a","amount":1,"description":""}]}"#, #"product "a": description"#),
        (#"{"products":[{"id":"a","amount":1,"description":"\#(String(repeating: "课", count: 43))"}]}"#, #"product "a": description"#),
        (#"{"products":[{"id":"a","amount":1,"description":"d","active":"yes"}]}"#, #"product "a": active"#),
        (#"{"products":[{"id":"a","amount":1,"description":"d","apple_product_id":"com x"}]}"#, #"product "a": apple_product_id"#),
        (#"{"products":[{"id":"a","amount":1,"description":"d","apple_product_id":7}]}"#, #"product "a": apple_product_id"#),
        (#"{"products":[{"id":"a","amount":1,"description":"d","apple_product_id":"p"},{"id":"b","amount":1,"description":"d","apple_product_id":"p"}]}"#,
         #"product "b": apple_product_id is another product's too"#),
        (#"{"products":[{"id":"a b","amount":1,"description":"d"}]}"#, "product #1: id"),
        (#"{"products":[{"id":"\#(String(repeating: "x", count: 33))","amount":1,"description":"d"}]}"#, "product #1: id"),
        (#"{"products":[{"amount":1,"description":"d"}]}"#, "product #1: id"),
        (#"{"products":[{"id":"a","amount":1,"description":"d"},{"id":"a","amount":2,"description":"e"}]}"#, #"product "a": id appears more than once"#),
        (#"{"products":[{"id":"a","amount":1,"amount":2,"description":"d"}]}"#, "repeats a JSON key"),
        (#"{"products":{}}"#, #""products" array"#),
        (#"{"products":[1]}"#, "product #1: must be a JSON object"),
        (#"[]"#, "not a JSON object"),
        (#"{"products":[{"id":"a","amount":1,"desc"#, "not valid JSON at byte 39 of 39"),
        ("", "the catalog file is empty"),
        (#"{"products":[{"id":"a","amount":1,"description":"d","type":"membership","period":"1 month"}]}"#, #"product "a": period must be"#),
        (#"{"products":[{"id":"a","amount":1,"description":"d","type":"membership"}]}"#, #"product "a": a membership needs a period"#),
        (#"{"products":[{"id":"a","amount":1,"description":"d","type":7}]}"#, #"product "a": type must be"#),
        (#"{"products":[{"id":"a","amount":1,"description":"d","entitlement":""}]}"#, #"product "a": entitlement must be"#),
    ])
    func aBadCatalogNamesTheProductAndTheRule(text: String, says: String) {
        guard case .failure(let error) = Self.parse(text) else {
            Issue.record("accepted: \(text)")
            return
        }
        #expect(error.description.contains(says), "\(error)")
    }

    @Test func theRefusalOfAnAppStoreIDTakenFromASoldProductSaysWhereItsRenewalsWouldGo() throws {
        let terms = "membership P1M vip"
        let message = try #require(Catalog.refusal([
            ProductTermsChange(productID: "vip-month", recorded: terms, given: terms,
                               appStore: .init(soldAs: "com.x.month", given: nil, takenBy: "gold")),
            ProductTermsChange(productID: "vip-year", recorded: terms, given: terms,
                               appStore: .init(soldAs: "com.x.year", given: "com.x.year2", takenBy: nil)),
            ProductTermsChange(productID: "swift-101", recorded: "course swift-101", given: "course swift-101",
                               appStore: .init(soldAs: "com.x.swift", given: nil, takenBy: nil)),
        ])).message
        #expect(message.contains("vip-month was sold through the App Store as com.x.month; this catalog gives it no App Store "
            + "product id and com.x.month to gold, so the renewals Apple keeps charging under com.x.month would be credited to "
            + "gold, granting what gold grants"))
        #expect(message.contains("vip-year was sold through the App Store as com.x.year; this catalog gives it the App Store "
            + "product id com.x.year2 instead, so the renewals Apple keeps charging under com.x.year would be credited to no "
            + "product, granting nothing"))
        #expect(message.contains("swift-101 was sold through the App Store as com.x.swift; this catalog gives it no App Store "
            + "product id, so the purchases the App Store goes on making under com.x.swift would be credited to no product"))
        #expect(message.hasSuffix("a product sold through the App Store keeps its apple_product_id (retired, it still credits renewals)"))
    }

    @Test func aCatalogThatIsNotUTF8IsCalledThat() {
        let bytes = Array(#"{"products":[{"id":"a","amount":1,"description":"d"#.utf8) + [0xFF] + Array(#""}]}"#.utf8)
        #expect(throws: CatalogError(message: "the catalog is not UTF-8 (at byte 48)")) { try Catalog.parse(bytes) }
    }

    @Test func reloadReplacesTheCatalogWholeOrKeepsTheOldOne() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"products":[{"id":"a","amount":1,"description":"d"}]}"#.utf8).write(to: file)
        let source = CatalogSource(try Catalog.load(path: file.path), path: file.path)
        try Data(#"{"products":[{"id":"a","amount":2,"description":"d"},{"id":"b","amount":3,"description":"e"}]}"#.utf8).write(to: file)
        #expect((try? await source.reload().get())?.products.count == 2)
        #expect(source.catalog.product("a")?.amount == 2)
        try Data(#"{"products":[{"id":"a","amount":-1,"description":"d"}]}"#.utf8).write(to: file)
        guard case .failure(let error) = await source.reload() else {
            Issue.record("a bad catalog was taken")
            return
        }
        #expect(error.description.contains(#"product "a": amount"#))
        #expect(source.catalog.product("b")?.amount == 3)
    }

    @Test func aBadCatalogOrAppVariableStopsTheConfiguration() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"products":[{"id":"swift-101","amount":0,"description":"d"}]}"#.utf8).write(to: file)
        let membership = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: membership) }
        try Data(#"{"products":[{"id":"vip","amount":1,"description":"d","type":"membership"}]}"#.utf8).write(to: membership)
        let cases: [([String: String], String)] = [
            (["GATEWAY_CATALOG": file.path], #"product "swift-101": amount"#),
            (["GATEWAY_CATALOG": membership.path], #"product "vip": a membership needs a period"#),
            (["GATEWAY_CATALOG": "/nonexistent/catalog.json"], "cannot read"),
            (["GATEWAY_APP_TOKEN_SECRETS": "short"], "GATEWAY_APP_TOKEN_SECRETS"),
            (["GATEWAY_APP_CREATE_RATE": "0"], "GATEWAY_APP_CREATE_RATE"),
            (["GATEWAY_APP_MAX_WAITS": "x"], "GATEWAY_APP_MAX_WAITS"),
            (["GATEWAY_TRUSTED_PROXIES": "10.0.0.0/33"], "GATEWAY_TRUSTED_PROXIES"),
        ]
        for (environment, says) in cases {
            do {
                _ = try GatewayConfiguration(environment: Environment(environment), demo: true)
                Issue.record("accepted \(environment)")
            } catch {
                #expect(error.description.contains(says), "\(error)")
                #expect(!error.description.contains("short"))
            }
        }
    }

    @Test func trustedProxyNetworksMatchTheirAddressesOnly() throws {
        let v4 = try #require(IPNetwork("10.0.0.0/8"))
        #expect(v4.contains(try #require(IPAddress("10.255.1.2"))))
        #expect(!v4.contains(try #require(IPAddress("11.0.0.1"))))
        // A dual-stack socket's mapped peer is the same IPv4 address.
        #expect(v4.contains(try #require(IPAddress("::ffff:10.1.2.3"))))
        let v6 = try #require(IPNetwork("2001:db8::/32"))
        #expect(v6.contains(try #require(IPAddress("2001:db8:1::5"))))
        #expect(!v6.contains(try #require(IPAddress("2001:db9::1"))))
        #expect(IPNetwork("203.0.113.7")?.contains(try #require(IPAddress("203.0.113.7"))) == true)
        for bad in ["10.0.0.0/", "10.0.0.0/+8", "host.example", "::/129"] { #expect(IPNetwork(bad) == nil, "\(bad)") }
        let resolver = ClientAddressResolver(trustedProxies: [v4])
        #expect(resolver.clientIP(peer: "10.0.0.1", forwardedFor: ["203.0.113.5", "10.0.0.9"]) == "203.0.113.5")
        #expect(resolver.clientIP(peer: "10.0.0.1", forwardedFor: []) == "10.0.0.1")
        #expect(resolver.clientIP(peer: "10.0.0.1", forwardedFor: ["garbage, 10.0.0.9"]) == "10.0.0.9")
        #expect(resolver.clientIP(peer: "198.51.100.1", forwardedFor: ["203.0.113.5"]) == "198.51.100.1")
        #expect(resolver.clientIP(peer: "::ffff:198.51.100.1", forwardedFor: []) == "198.51.100.1")
    }
}
