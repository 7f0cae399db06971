// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import JSON
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
            == #"{"products":[{"amount":990,"apple_product_id":"com.x.swift101","description":"Swift 入门课","id":"swift-101"},{"amount":1000000000,"description":"max","id":"A_b-9"}]}"#)
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
    ])
    func aBadCatalogNamesTheProductAndTheRule(text: String, says: String) {
        guard case .failure(let error) = Self.parse(text) else {
            Issue.record("accepted: \(text)")
            return
        }
        #expect(error.description.contains(says), "\(error)")
    }

    @Test func reloadReplacesTheCatalogWholeOrKeepsTheOldOne() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"products":[{"id":"a","amount":1,"description":"d"}]}"#.utf8).write(to: file)
        let source = CatalogSource(try Catalog.load(path: file.path), path: file.path)
        try Data(#"{"products":[{"id":"a","amount":2,"description":"d"},{"id":"b","amount":3,"description":"e"}]}"#.utf8).write(to: file)
        #expect((try? source.reload().get())?.products.count == 2)
        #expect(source.catalog.product("a")?.amount == 2)
        try Data(#"{"products":[{"id":"a","amount":-1,"description":"d"}]}"#.utf8).write(to: file)
        guard case .failure(let error) = source.reload() else {
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
        let cases: [([String: String], String)] = [
            (["GATEWAY_CATALOG": file.path], #"product "swift-101": amount"#),
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
