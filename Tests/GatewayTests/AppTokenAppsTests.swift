// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
@testable import Gateway
import StorageCore
import StoreTestSupport
import Testing
import WeChatPaySimulator

/// An app token's `apps` claim: the merchant's apps a user's token may create orders through
/// (several apps on one merchant, each app's users with tokens for that app only).
struct AppTokenAppsTests {
    @Test("apps is read as a set of app names; absent is every app; empty, not an array, or a malformed name is refused naming apps")
    func theAppsClaimIsReadStrictly() throws {
        let verifier = AppTokenVerifier(secrets: [TestTokens.secret])
        let now = Date()
        #expect(try verifier.verify(TestTokens.minted("u1", now: now), now: now).apps == nil)
        #expect(try verifier.verify(TestTokens.minted("u1", now: now, apps: ["mini", "mp"]), now: now).apps == ["mini", "mp"])
        let issued = Int(now.timeIntervalSince1970)
        for apps in [#"[]"#, #""mini""#, #"["Mini"]"#, #"[1]"#, #"["mini",null]"#, #"["\#(String(repeating: "a", count: 33))"]"#] {
            let payload = #"{"apps":\#(apps),"sub":"u1","aud":"wxpay-gateway","iat":\#(issued),"exp":\#(issued + 600)}"#
            #expect(throws: AppTokenError.apps, "\(apps)") { try verifier.verify(TestTokens.token(payload: payload), now: now) }
        }
        #expect(AppTokenError.apps.description.contains("apps"))
    }

    @Test("several apps on one merchant: a token restricted by apps creates through its apps only; another app (named or the default) is 403 app_not_allowed and writes nothing",
          arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func aRestrictedTokenCreatesThroughItsAppsOnly(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        let miniUser = SimulatorConfiguration.openID(of: "alice", under: WeChatApps.demo[1].appID)
        let miniOnly = TestTokens.minted("alice", apps: ["mini"])
        let created = try await rig.send(.post, "/v1/orders", token: miniOnly,
                                         body: #"{"product_id":"swift-101","out_trade_no":"apps-0001","app":"mini","openid":"\#(miniUser)"}"#)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        #expect(created.json.string("app") == "mini" && created.json.object("jsapi_params") != nil)
        #expect(try await rig.store.order("apps-0001")?.userID == "alice")

        for (number, extra) in [("apps-0002", #","app":"web""#), ("apps-0003", "")] {
            let refused = try await rig.send(.post, "/v1/orders", token: miniOnly,
                                             body: #"{"product_id":"swift-101","out_trade_no":"\#(number)"\#(extra)}"#)
            #expect(refused.status == 403 && refused.error?["code"] as? String == "app_not_allowed", "\(refused.json)")
            #expect(try await rig.store.order(number) == nil)
            #expect(rig.simulator.order(number) == nil)
        }
        // A token without the claim buys through any app, the web page's QR code included.
        let anyApp = TestTokens.minted("bob")
        let web = try await rig.send(.post, "/v1/orders", token: anyApp, body: #"{"product_id":"swift-101","out_trade_no":"apps-0004","app":"web"}"#)
        #expect(web.status == 201 && web.json.string("code_url")?.hasPrefix("weixin://wxpay/bizpayurl?pr=") == true)
        // The restriction is on creating: the user still reads its own order.
        #expect(try await rig.send(.get, "/v1/orders/apps-0001", token: miniOnly).status == 200)
    }

    @Test("a create refused because the token's apps do not name the app does not count against the user's create rate",
          arguments: GatewayRig.Mode.allCases)
    func aRefusedAppDoesNotCountAgainstTheCreateRate(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode, environment: ["GATEWAY_APP_CREATE_RATE": "2"])
        defer { Task { await rig.stop() } }
        let miniOnly = TestTokens.minted("carol", apps: ["mini"])
        for index in 0..<5 {
            let refused = try await rig.send(.post, "/v1/orders", token: miniOnly,
                                             body: #"{"product_id":"swift-101","out_trade_no":"rate-web\#(index)","app":"web"}"#)
            #expect(refused.status == 403 && refused.error?["code"] as? String == "app_not_allowed")
        }
        let miniUser = SimulatorConfiguration.openID(of: "carol", under: WeChatApps.demo[1].appID)
        for index in 0..<2 {
            let created = try await rig.send(.post, "/v1/orders", token: miniOnly,
                                             body: #"{"product_id":"swift-101","out_trade_no":"rate-mini\#(index)","app":"mini","openid":"\#(miniUser)"}"#)
            #expect(created.status == 201, "\(created.json)")
        }
        let third = try await rig.send(.post, "/v1/orders", token: miniOnly,
                                       body: #"{"product_id":"swift-101","out_trade_no":"rate-mini9","app":"mini","openid":"\#(miniUser)"}"#)
        #expect(third.status == 429)
    }
}
