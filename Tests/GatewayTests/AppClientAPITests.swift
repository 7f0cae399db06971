// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
@testable import Gateway
import HTTP
import Observability
import StorageCore
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// The Android app as a client of the API, each test in process and over real sockets: app
/// tokens, catalog prices, own orders only, the per-user limits and the trusted-proxy rule.
struct AppClientAPITests {
    static func create(_ rig: GatewayRig, _ token: String, _ body: String, headers: [String: String] = [:])
        async throws -> GatewayRig.Response
    {
        try await rig.send(.post, "/v1/orders", token: token, body: body, headers: headers)
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func anAppTokenBuysACatalogProductAtTheCatalogsPriceForItsUser(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode)
        defer { Task { await rig.stop() } }
        let token = TestTokens.minted("alice")
        let catalog = try await rig.send(.get, "/v1/catalog", token: token)
        #expect(catalog.status == 200)
        let ids = (catalog.json["products"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
        #expect(ids == ["swift-101", "swift-201", "ios-iap-301", "coins-60", "vip-month", "vip-year", "vip-month-ios", "vip-year-ios"])  // the inactive demo product is not listed

        let created = try await Self.create(rig, token, #"{"product_id":"swift-201","out_trade_no":"app-0001","attach":"a"}"#)
        #expect(created.status == 201)
        #expect(created.json["amount"] as? Int == 4990)
        #expect(created.json["description"] as? String == "Swift 并发进阶")
        let sent = try #require(rig.simulator.requests.last { $0.path == "/pay/unifiedorder" })
        #expect(sent.fields["total_fee"] == "4990")
        let stored = try #require(try await rig.store.order("app-0001"))
        #expect(stored.userID == "alice" && stored.productID == "swift-201" && stored.attach == "a")
        // The same create again is a replay (200), as for the backend.
        let replay = try await Self.create(rig, token, #"{"product_id":"swift-201","out_trade_no":"app-0001","attach":"a"}"#)
        #expect(replay.status == 200 && replay.body == created.body)
    }

    @Test("routing's own answers are JSON errors like the rest: a path no route has 404 not_found, a method the route does not take 405 with Allow, a path that is not percent-encoded UTF-8 or holds a NUL 400 invalid_request",
          arguments: GatewayRig.Mode.allCases)
    func routingAnswersAreJSONErrors(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode)
        defer { Task { await rig.stop() } }
        let token = TestTokens.minted("alice")
        for tokenUsed in [token, nil] {
            let missing = try await rig.send(.get, "/v1/no-such-route", token: tokenUsed)
            #expect(missing.status == 404 && missing.error?["code"] as? String == "not_found", "\(missing.json)")
            let method = try await rig.send(.post, "/v1/users/alice/entitlements", token: tokenUsed)
            #expect(method.status == 405 && method.error?["code"] as? String == "method_not_allowed", "\(method.json)")
            #expect(method.headers.first { $0.key.lowercased() == "allow" }?.value == "GET, HEAD")
            for path in ["/v1/users/alice%00/entitlements", "/v1/users/%ff%fe/entitlements"] {
                let malformed = try await rig.send(.get, path, token: tokenUsed)
                #expect(malformed.status == 400 && malformed.error?["code"] as? String == "invalid_request", "\(path): \(malformed.json)")
            }
        }
    }

    /// "zoë王" written with one scalar and with "e" + U+0308: the same text to Swift's `==`, two
    /// users to both databases (they compare bytes). An app token for one must see nothing of the
    /// other's.
    @Test("a user id that is another's written in another Unicode form is another user: the app token sees none of their orders or entitlements and closes none",
          arguments: GatewayRig.Mode.allCases)
    func aUserIDInAnotherUnicodeFormIsAnotherUser(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode)
        defer { Task { await rig.stop() } }
        let decomposed = "zoe\u{0308}王", composed = "zo\u{00EB}王"
        #expect(decomposed == composed && Array(decomposed.utf8) != Array(composed.utf8), "Swift calls them equal; their bytes differ")
        for outTradeNo in ["nfd-paid", "nfd-open"] {
            let created = try await rig.send(.post, "/v1/orders", body: #"{"product_id":"swift-101","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)","user_id":"\#(decomposed)"}"#)
            #expect(created.status == 201, "\(created.json)")
        }
        _ = try rig.simulator.pay(outTradeNo: "nfd-paid")
        #expect(try await rig.send(.get, "/v1/orders/nfd-paid?wait=20").json.string("state") == "SUCCESS")
        rig.clock.advance(by: 600)  // past WeChat's 5 minutes before a close

        let path = decomposed.utf8.map { String(format: "%%%02X", $0) }.joined()
        let other = TestTokens.minted(composed)
        for order in ["nfd-paid", "nfd-open"] {
            let read = try await rig.send(.get, "/v1/orders/\(order)", token: other)
            #expect(read.status == 404 && read.error?["code"] as? String == "order_not_found", "\(read.json)")
        }
        let entitlements = try await rig.send(.get, "/v1/users/\(path)/entitlements", token: other)
        #expect(entitlements.status == 404 && entitlements.error?["code"] as? String == "user_not_found", "\(entitlements.json)")
        let close = try await rig.send(.post, "/v1/orders/nfd-open/close", token: other)
        #expect(close.status == 404, "\(close.json)")
        #expect(try await rig.store.order("nfd-open")?.state == .notPay)
        let mine = try await rig.send(.get, "/v1/me/orders", token: other)
        #expect((mine.json["orders"] as? [Any])?.isEmpty == true, "\(mine.json)")

        // The user's own token, byte for byte: all of it.
        let own = TestTokens.minted(decomposed)
        #expect(try await rig.send(.get, "/v1/orders/nfd-paid", token: own).status == 200)
        let granted = try await rig.send(.get, "/v1/users/\(path)/entitlements", token: own)
        #expect(granted.status == 200 && String(decoding: granted.body, as: UTF8.self).contains("swift-101"), "\(granted.json)")
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func anAppCannotChooseThePriceTheUserOrAnUnknownProduct(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode)
        defer { Task { await rig.stop() } }
        let token = TestTokens.minted("alice")
        for (field, value) in [("amount", "1"), ("description", #""cheap""#), ("user_id", #""bob""#), ("expires_in", "300")] {
            let refused = try await Self.create(rig, token, #"{"product_id":"swift-101","\#(field)":\#(value)}"#)
            #expect(refused.status == 400)
            #expect(refused.error?["code"] as? String == "field_not_allowed")
            #expect(refused.error?["field"] as? String == field)
        }
        for product in ["no-such-course", "retired-100"] {
            let unknown = try await Self.create(rig, token, #"{"product_id":"\#(product)"}"#)
            #expect(unknown.status == 400 && unknown.error?["code"] as? String == "unknown_product")
            #expect(unknown.error?["field"] as? String == "product_id")
        }
        let missing = try await Self.create(rig, token, #"{"out_trade_no":"app-0002"}"#)
        #expect(missing.status == 400 && missing.error?["field"] as? String == "product_id")
        let unknownField = try await Self.create(rig, token, #"{"product_id":"swift-101","coupon":"x"}"#)
        #expect(unknownField.error?["code"] as? String == "invalid_request" && unknownField.error?["field"] as? String == "coupon")
        #expect(try await rig.store.counts().ordersByState.values.reduce(0, +) == 0)
        #expect(!rig.simulator.requests.contains { $0.path == "/pay/unifiedorder" })
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func aClientTokenCreateNamingACatalogProductGetsTheCatalogsPrice(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode)
        defer { Task { await rig.stop() } }
        let filled = try await Self.create(rig, GatewayRig.client, #"{"product_id":"swift-101","client_ip":"203.0.113.7","user_id":"u1"}"#)
        #expect(filled.status == 201)
        #expect(filled.json["amount"] as? Int == 990 && filled.json["description"] as? String == "Swift 入门课")
        let mismatch = try await Self.create(rig, GatewayRig.client, #"{"product_id":"swift-101","amount":1,"client_ip":"203.0.113.7"}"#)
        #expect(mismatch.status == 400 && mismatch.error?["code"] as? String == "amount_mismatch")
        #expect(mismatch.error?["field"] as? String == "amount")
        let same = try await Self.create(rig, GatewayRig.client, #"{"product_id":"swift-101","amount":990,"description":"own words","client_ip":"203.0.113.7"}"#)
        #expect(same.status == 201 && same.json["description"] as? String == "own words")
        // A product the catalog does not know: the backend is trusted with prices, as before.
        let trusted = try await Self.create(rig, GatewayRig.client, #"{"product_id":"bundle-9","amount":12345,"description":"bundle","client_ip":"203.0.113.7"}"#)
        #expect(trusted.status == 201 && trusted.json["amount"] as? Int == 12345)
        let unpriced = try await Self.create(rig, GatewayRig.client, #"{"product_id":"bundle-9","client_ip":"203.0.113.7"}"#)
        #expect(unpriced.status == 400 && unpriced.error?["code"] as? String == "unknown_product")
        // But not an entitlement the catalog's memberships grant: paid, it would grant it for ever.
        // Nor anything that reads as one once case, width, marks and surrounding spaces are set
        // aside, nor a product id with a character nobody sees (JSON escapes: a soft hyphen, a zero
        // width space, a word joiner, a byte order mark, a Hangul filler, a tag, a right-to-left
        // override, each inside the name).
        let orders = try await rig.store.counts().ordersByState.values.reduce(0, +)
        for name in ["vip", "VIP", " vip", "vip ", "ｖｉｐ", "vİp", "víp", #"vi\u00adp"#, #"vi\u200bp"#, #"vi\u2060p"#,
                     #"vi\ufeffp"#, #"vi\u3164p"#, #"vi\udb40\udc01p"#, #"vi\u202ep"#, #"bundle\u200b9"#,
                     // Other scripts' look-alikes (Cyrillic в, і, р), a blank that shows nothing (U+2800),
                     // a catalog product's id in capitals: ids are named as the catalog names products.
                     "вip", "vір", #"vi\u2800p"#, "VIP-MONTH", "ｖｉｐ-month", #"vip\u2010month"#,
                     // Punctuation, doubled letters and what passes for a letter set aside, or one held as
                     // whole words.
                     "vip.", "_vip", "v-i-p", "vlp", "v1p", "viip", "VIP_MONTH", "vipmonth", "vip-lifetime", "month-vip",
                     "swift-1O1", "swift_101", "swift-101-ios", "svvift-101", "5wift-101", "swift-z01"] {
            let entitlement = try await Self.create(
                rig, GatewayRig.client, #"{"product_id":"\#(name)","amount":1,"description":"x","user_id":"mallory","client_ip":"203.0.113.7"}"#)
            #expect(entitlement.status == 400 && entitlement.error?["code"] as? String == "invalid_request", "\(name)")
            #expect(entitlement.error?["field"] as? String == "product_id")
        }
        #expect(try await rig.store.counts().ordersByState.values.reduce(0, +) == orders)
        // A name that merely holds those letters is the backend's own product.
        for (index, name) in ["vipassana", "tv-ipad-stand", "swift-basics"].enumerated() {
            let own = try await Self.create(
                rig, GatewayRig.client, #"{"product_id":"\#(name)","amount":100,"description":"x","client_ip":"203.0.113.7","out_trade_no":"own-name-\#(index)"}"#)
            #expect(own.status == 201, "\(name): \(own.json)")
        }
    }

    /// An app token's `sub` becomes the order's `user_id`, so it follows the user id rule a client
    /// token's `user_id` follows (`UserID`): a line break, a tab, a right-to-left override or a NUL
    /// is 401 `invalid_token` naming the rule, before anything is stored or asked.
    @Test(arguments: GatewayRig.Mode.allCases)
    func anAppTokenWhoseSubBreaksTheUserIDRuleIsRefusedNamingTheRule(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode)
        defer { Task { await rig.stop() } }
        // JSON escapes: the token's sub decodes to these characters.
        for (name, sub) in [("line feed", #"alice\nbob"#), ("tab", #"alice\tbob"#), ("RLO", #"alice\u202Ebob"#),
                            ("NUL", #"alice\u0000"#), ("zero width", #"al\u200Bice"#), ("C1", #"alice\u0085"#),
                            ("65 bytes", String(repeating: "u", count: 65))] {
            let token = TestTokens.token(payload: TestTokens.payload(sub: sub))
            let refused = try await Self.create(rig, token, #"{"product_id":"swift-101","out_trade_no":"sub-\#(name.count)"}"#)
            #expect(refused.status == 401, "\(name)")
            #expect(refused.error?["code"] as? String == "invalid_token", "\(name)")
            #expect(refused.error?["message"] as? String
                == "the token's sub must be a user id: 1 to 64 bytes of UTF-8 without whitespace, control or invisible characters",
                "\(name)")
        }
        // The client token's user_id follows the same rule, said the same way.
        for userID in [#"alice\u202Ebob"#, #"a\u2028b"#] {
            let refused = try await Self.create(rig, GatewayRig.client,
                                                #"{"amount":990,"description":"d","client_ip":"203.0.113.7","user_id":"\#(userID)"}"#)
            #expect(refused.status == 400)
            #expect(refused.error?["field"] as? String == "user_id")
            #expect(refused.error?["message"] as? String
                == "user_id must be 1 to 64 bytes of UTF-8 without whitespace, control or invisible characters")
        }
        #expect(try await rig.store.counts().ordersByState.values.reduce(0, +) == 0)
        #expect(!rig.simulator.requests.contains { $0.path == "/pay/unifiedorder" })
        let metrics = String(decoding: try await rig.send(.get, "/metrics", token: nil).body, as: UTF8.self)
        #expect(metrics.contains(#"wxpay_app_token_refusals_total{rule="sub"} 7"#))
        // A user id in any script, emoji included, is fine.
        let fine = try await Self.create(rig, TestTokens.minted("用户-Ωmega-🎓"), #"{"product_id":"swift-101"}"#)
        #expect(fine.status == 201)
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func eachTokenRuleIsRefusedWithInvalidTokenAndARotatedSecretStillWorks(mode: GatewayRig.Mode) async throws {
        let old = "the-previous-secret-still-in-rotation-0001"
        let rig = try await GatewayRig.start(mode, environment: [
            "GATEWAY_APP_TOKEN_SECRETS": "the-new-secret-minting-from-now-on-0002,\(old)",
        ])
        defer { Task { await rig.stop() } }
        let secret = "the-new-secret-minting-from-now-on-0002"
        let now = Int(Date().timeIntervalSince1970)
        let good = TestTokens.payload(now: Date())
        var tampered = TestTokens.token(payload: good, secret: secret).split(separator: ".").map(String.init)
        tampered[1] = Base64.encode(Array(TestTokens.payload(sub: "mallory").utf8), .urlUnpadded)
        let cases: [(String, String, String)] = [
            ("expired", TestTokens.token(payload: TestTokens.payload(iat: now - 7200, exp: now - 3600), secret: secret), "expired"),
            ("future iat", TestTokens.token(payload: TestTokens.payload(iat: now + 600, exp: now + 1200), secret: secret), "future"),
            ("wrong aud", TestTokens.token(payload: TestTokens.payload(aud: #""another-service""#), secret: secret), "aud"),
            ("alg none", TestTokens.token(header: #"{"alg":"none"}"#, payload: good, secret: secret), "HS256"),
            ("alg none, unsigned", Base64.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8), .urlUnpadded) + "."
                + Base64.encode(Array(good.utf8), .urlUnpadded) + ".", "alg none"),
            ("HS512", TestTokens.token(header: #"{"alg":"HS512"}"#, payload: good) { TestTokens.hmacSHA512($0, secret: secret) }, "HS256"),
            ("tampered", tampered.joined(separator: "."), "signature"),
            ("wrong secret", TestTokens.token(payload: good, secret: "a-secret-nobody-configured-at-all-0003"), "signature"),
            ("two segments", tampered[0] + "." + tampered[1], "three"),
            ("too long", TestTokens.token(payload: #"{"sub":"a","aud":"wxpay-gateway","pad":"\#(String(repeating: "p", count: 4000))","iat":\#(now),"exp":\#(now + 60)}"#, secret: secret), "4096"),
        ]
        for (rule, token, says) in cases {
            let refused = try await rig.send(.get, "/v1/catalog", token: token)
            #expect(refused.status == 401, "\(rule)")
            #expect(refused.error?["code"] as? String == "invalid_token", "\(rule)")
            let message = refused.error?["message"] as? String ?? ""
            #expect(message.contains(says), "\(rule): \(message)")
            #expect(!message.contains(token.prefix(20)), "\(rule)")
            #expect(refused.headers["WWW-Authenticate"] == #"Bearer error="invalid_token""#, "\(rule)")
        }
        #expect(try await rig.send(.get, "/v1/catalog", token: TestTokens.minted("u", secret: secret)).status == 200)
        #expect(try await rig.send(.get, "/v1/catalog", token: TestTokens.minted("u", secret: old)).status == 200)
        let metrics = String(decoding: try await rig.send(.get, "/metrics", token: nil).body, as: UTF8.self)
        for rule in ["expired", "iat_in_future", "aud", "alg", "signature", "segments", "too_long"] {
            #expect(metrics.contains(#"wxpay_app_token_refusals_total{rule="\#(rule)"}"#), "\(rule)")
        }
        // An unknown opaque token is still plain `unauthorized`.
        #expect(try await rig.send(.get, "/v1/catalog", token: "not-a-jwt-token").error?["code"] as? String == "unauthorized")
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func aUserCannotSeeWaitOnOrCloseAnotherUsersOrder(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode)
        defer { Task { await rig.stop() } }
        let alice = TestTokens.minted("alice"), bob = TestTokens.minted("bob")
        #expect(try await Self.create(rig, alice, #"{"product_id":"swift-101","out_trade_no":"alice-0001"}"#).status == 201)
        #expect(try await rig.createOrder("backend-01").status == 201)  // user u-42, by the backend
        let none = try await rig.send(.get, "/v1/orders/nobody-0001", token: bob)
        #expect(none.status == 404 && none.error?["code"] as? String == "order_not_found")
        for outTradeNo in ["alice-0001", "backend-01"] {
            for path in ["/v1/orders/\(outTradeNo)", "/v1/orders/\(outTradeNo)?wait=5"] {
                let hidden = try await rig.send(.get, path, token: bob)
                #expect(hidden.status == 404 && hidden.body == none.body, "\(path)")
            }
            rig.clock.advance(by: 400)
            let close = try await rig.send(.post, "/v1/orders/\(outTradeNo)/close", token: bob)
            #expect(close.status == 404 && close.error?["code"] as? String == "order_not_found")
        }
        #expect(try await rig.store.order("alice-0001")?.state == .notPay)
        #expect(try await rig.send(.get, "/v1/orders/alice-0001", token: alice).status == 200)
        let closed = try await rig.send(.post, "/v1/orders/alice-0001/close", token: alice)
        #expect(closed.status == 200 && closed.json["state"] as? String == "CLOSED")
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func appTokensReachOnlyTheirRoutesAndMyOrdersPagesNewestFirst(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode)
        defer { Task { await rig.stop() } }
        let alice = TestTokens.minted("alice")
        for index in 0..<5 {
            #expect(try await Self.create(rig, alice, #"{"product_id":"swift-101","out_trade_no":"mine-000\#(index)"}"#).status == 201)
            rig.clock.advance(by: 1)
        }
        _ = try await Self.create(rig, TestTokens.minted("bob"), #"{"product_id":"swift-101","out_trade_no":"bobs-0001"}"#)
        var seen: [String] = []
        var path = "/v1/me/orders?limit=2"
        for _ in 0..<5 {
            let page = try await rig.send(.get, path, token: alice)
            #expect(page.status == 200)
            seen += (page.json["orders"] as? [[String: Any]] ?? []).compactMap { $0["out_trade_no"] as? String }
            guard let next = page.json["next_cursor"] as? String else { break }
            path = "/v1/me/orders?limit=2&cursor=\(next)"
        }
        #expect(seen == ["mine-0004", "mine-0003", "mine-0002", "mine-0001", "mine-0000"])
        #expect(try await rig.send(.get, "/v1/me/orders?limit=51", token: alice).error?["field"] as? String == "limit")
        #expect(try await rig.send(.get, "/v1/me/orders?cursor=bogus!", token: alice).error?["field"] as? String == "cursor")

        for (method, route) in [(HTTPMethod.get, "/v1/support/orders?user_id=alice"),
                                (.post, "/v1/support/orders/mine-0001/recheck"), (.post, "/v1/support/outbox/evt_1/redrive")] {
            let forbidden = try await rig.send(method, route, token: alice)
            #expect(forbidden.status == 403 && forbidden.error?["code"] as? String == "forbidden", "\(route)")
        }
        #expect(try await rig.send(.get, "/v1/me/orders", token: GatewayRig.client).status == 403)
        #expect(try await rig.send(.get, "/v1/catalog", token: GatewayRig.support).status == 403)
        #expect(try await rig.send(.get, "/openapi.json", token: nil).status == 200)
        // The support lookup by user pages the same way.
        let support = try await rig.send(.get, "/v1/support/orders?user_id=alice&limit=3", token: GatewayRig.support)
        #expect((support.json["orders"] as? [[String: Any]])?.count == 3)
        let next = try #require(support.json["next_cursor"] as? String)
        let rest = try await rig.send(.get, "/v1/support/orders?user_id=alice&limit=3&cursor=\(next)", token: GatewayRig.support)
        #expect((rest.json["orders"] as? [[String: Any]])?.compactMap { $0["out_trade_no"] as? String } == ["mine-0001", "mine-0000"])
        #expect(rest.json["next_cursor"] == nil)
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func createsPerMinuteArePerUserAndAnswer429WithRetryAfter(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode, environment: ["GATEWAY_APP_CREATE_RATE": "3"])
        defer { Task { await rig.stop() } }
        let alice = TestTokens.minted("alice")
        // Four at once, so all four fall in one minute however slow the machine: three are
        // created, one (whichever came last) is held back.
        let answers = try await withThrowingTaskGroup(of: (Int, GatewayRig.Response).self) { group in
            for index in 0..<4 {
                group.addTask {
                    (index, try await Self.create(rig, alice, #"{"product_id":"swift-101","out_trade_no":"rate-000\#(index)"}"#))
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(answers.values.filter { $0.status == 201 }.count == 3)
        let (limitedIndex, limited) = try #require(answers.first { $0.value.status != 201 })
        #expect(limited.status == 429)
        #expect(limited.error?["code"] as? String == "rate_limited")
        let retryAfter = try #require(limited.error?["retry_after"] as? Int)
        #expect((1...60).contains(retryAfter))
        #expect(limited.headers["Retry-After"] == String(retryAfter))
        #expect(try await rig.store.order("rate-000\(limitedIndex)") == nil)
        let metrics = String(decoding: try await rig.send(.get, "/metrics", token: nil).body, as: UTF8.self)
        #expect(metrics.contains(#"wxpay_app_rate_limited_total{limit="creates"} 1"#))
        // Another user, and the backend, are not held back by alice.
        #expect(try await Self.create(rig, TestTokens.minted("bob"), #"{"product_id":"swift-101"}"#).status == 201)
        #expect(try await rig.createOrder("rate-back1").status == 201)
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func openWaitsArePerUserAndTheOneTooManyIs429(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode, environment: ["GATEWAY_APP_MAX_WAITS": "2"])
        defer { Task { await rig.stop() } }
        let alice = TestTokens.minted("alice")
        for index in 0..<3 {
            #expect(try await Self.create(rig, alice, #"{"product_id":"swift-101","out_trade_no":"wait-000\#(index)"}"#).status == 201)
        }
        async let first = rig.send(.get, "/v1/orders/wait-0000?wait=30", token: alice)
        async let second = rig.send(.get, "/v1/orders/wait-0001?wait=30", token: alice)
        let held = await eventually { rig.services.context.userLimits.openWaits("alice") == 2 }
        #expect(held)
        let third = try await rig.send(.get, "/v1/orders/wait-0002?wait=20", token: alice)
        #expect(third.status == 429 && third.error?["code"] as? String == "rate_limited")
        #expect(third.headers["Retry-After"] != nil)
        // A plain read is not a wait and is never limited.
        #expect(try await rig.send(.get, "/v1/orders/wait-0002", token: alice).status == 200)
        try rig.simulator.pay(outTradeNo: "wait-0000")
        try rig.simulator.pay(outTradeNo: "wait-0001")
        #expect(try await first.json["state"] as? String == "SUCCESS")
        #expect(try await second.json["state"] as? String == "SUCCESS")
        #expect(await eventually { rig.services.context.userLimits.openWaits("alice") == 0 })
        try rig.simulator.pay(outTradeNo: "wait-0002")
        #expect(try await rig.send(.get, "/v1/orders/wait-0002?wait=20", token: alice).json["state"] as? String == "SUCCESS")
    }

    @Test("held waits whose app has gone (its connection closed, or in process its task cancelled) give their user's open-wait slots back at once, not when their time runs out",
          arguments: GatewayRig.Mode.allCases)
    func heldWaitsWhoseAppHasGoneGiveTheirSlotsBack(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode, environment: ["GATEWAY_APP_MAX_WAITS": "2"])
        defer { Task { await rig.stop() } }
        let bob = TestTokens.minted("bob")
        for index in 0..<3 {
            #expect(try await Self.create(rig, bob, #"{"product_id":"swift-101","out_trade_no":"gone-000\#(index)"}"#).status == 201)
        }
        let abandoned = (0..<2).map { index in
            Task { try await rig.send(.get, "/v1/orders/gone-000\(index)?wait=30", token: bob) }
        }
        #expect(await eventually { rig.services.context.userLimits.openWaits("bob") == 2 })
        for wait in abandoned { wait.cancel() }
        // Within seconds; the 30 s the waits asked for would also free them, but not as cancelled.
        #expect(await eventually { rig.services.context.userLimits.openWaits("bob") == 0 })
        let cancelled = Battery.sum(rig.services.metrics.exposition(), #"wxpay_wait_duration_seconds_count{state="cancelled""#)
        #expect(cancelled == 2)
        // The app, back, holds its two waits again; the orders were never touched.
        async let again = rig.send(.get, "/v1/orders/gone-0002?wait=20", token: bob)
        #expect(await eventually { rig.services.context.userLimits.openWaits("bob") == 1 })
        try rig.simulator.pay(outTradeNo: "gone-0002")
        #expect(try await again.json["state"] as? String == "SUCCESS")
        #expect(try await rig.send(.get, "/v1/orders/gone-0000", token: bob).json["state"] as? String == "NOTPAY")
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func theClientIPIsThePeerUnlessATrustedProxyForwardedIt(mode: GatewayRig.Mode) async throws {
        let forwarded = ["X-Forwarded-For": "192.0.2.1, 198.51.100.7, 10.0.0.5"]
        let direct = try await GatewayRig.start(mode)
        let token = TestTokens.minted("alice")
        // Stopped on every path, so a failing request does not leave a server running behind it.
        do {
            _ = try await Self.create(direct, token, #"{"product_id":"swift-101"}"#, headers: forwarded)
            #expect(direct.simulator.requests.last { $0.path == "/pay/unifiedorder" }?.fields["spbill_create_ip"] == "127.0.0.1")
            _ = try await Self.create(direct, token, #"{"product_id":"swift-101","client_ip":"203.0.113.9"}"#, headers: forwarded)
            #expect(direct.simulator.requests.last { $0.path == "/pay/unifiedorder" }?.fields["spbill_create_ip"] == "203.0.113.9")
        } catch {
            await direct.stop()
            throw error
        }
        await direct.stop()

        let proxied = try await GatewayRig.start(mode, environment: ["GATEWAY_TRUSTED_PROXIES": "127.0.0.1/32, 10.0.0.0/8"])
        defer { Task { await proxied.stop() } }
        _ = try await Self.create(proxied, token, #"{"product_id":"swift-101"}"#, headers: forwarded)
        // The right-most address that is not a trusted proxy; 192.0.2.1 was written by the client.
        #expect(proxied.simulator.requests.last { $0.path == "/pay/unifiedorder" }?.fields["spbill_create_ip"] == "198.51.100.7")
        _ = try await Self.create(proxied, token, #"{"product_id":"swift-101"}"#)
        #expect(proxied.simulator.requests.last { $0.path == "/pay/unifiedorder" }?.fields["spbill_create_ip"] == "127.0.0.1")
    }

    @Test("an app's retry of a create from another network address is the same create: the request's own address is no parameter, an explicit client_ip still is",
          arguments: GatewayRig.Mode.allCases)
    func aRetryFromAnotherAddressIsTheSameCreate(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode, environment: ["GATEWAY_TRUSTED_PROXIES": "127.0.0.1/32"])
        defer { Task { await rig.stop() } }
        let token = TestTokens.minted("alice")
        let body = #"{"product_id":"swift-101","out_trade_no":"roam-0001"}"#
        let onWiFi = try await Self.create(rig, token, body, headers: ["X-Forwarded-For": "198.51.100.7"])
        #expect(onWiFi.status == 201)
        // The phone moved to mobile data before it heard the answer: the same request, another address.
        let onMobile = try await Self.create(rig, token, body, headers: ["X-Forwarded-For": "203.0.113.80"])
        #expect(onMobile.status == 200, "\(String(decoding: onMobile.body, as: UTF8.self))")
        #expect(onMobile.json["prepay_id"] as? String == onWiFi.json["prepay_id"] as? String)
        #expect(try await rig.store.order("roam-0001")?.clientIP == "198.51.100.7", "the first address is the order's")
        // A client_ip the app chose is a parameter: another one is another create.
        let chosen = #"{"product_id":"swift-101","out_trade_no":"roam-0002","client_ip":"192.0.2.10"}"#
        #expect(try await Self.create(rig, token, chosen).status == 201)
        let other = #"{"product_id":"swift-101","out_trade_no":"roam-0002","client_ip":"192.0.2.11"}"#
        #expect(try await Self.create(rig, token, other).status == 409)
    }

    @Test("an order created while the request's address was part of the digest still replays from that address")
    func anOrderFromBeforeReplaysFromItsAddress() async throws {
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        let catalog = rig.services.context.catalog.catalog
        let input = try CreateOrderInput(appJSON: Array(#"{"product_id":"swift-101","out_trade_no":"legacy-0001"}"#.utf8),
                                         user: "alice", peerIP: "198.51.100.7", catalog: catalog)
        #expect(input.clientIPFromPeer && input.parametersDigest != input.legacyParametersDigest)
        let now = rig.clock.now()
        var record = OrderRecord(outTradeNo: "legacy-0001", amount: input.amount, description: input.description,
                                 clientIP: input.clientIP, userID: "alice", productID: input.productID, signType: "HMAC-SHA256",
                                 timeExpire: BeijingTime.format(now + 7200), expiresAt: now + 7200, createdAt: now,
                                 parametersDigest: input.legacyParametersDigest)
        record.app = nil
        _ = try await rig.store.create(record, event: NewOrderEvent(kind: "created", detail: "before", at: now))
        let replayed = try await rig.services.creation.create(input)
        #expect(!replayed.created)
        let elsewhere = try CreateOrderInput(appJSON: Array(#"{"product_id":"swift-101","out_trade_no":"legacy-0001"}"#.utf8),
                                             user: "alice", peerIP: "203.0.113.80", catalog: catalog)
        await #expect(throws: APIError.self) { _ = try await rig.services.creation.create(elsewhere) }
    }
}
