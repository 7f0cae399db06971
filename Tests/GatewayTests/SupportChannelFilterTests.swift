// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
@testable import Gateway
import StorageCore
import StoreTestSupport
import Testing
import WeChatPaySimulator

/// Support's look-up by channel (issue 28): `GET /v1/support/orders` takes `app` and `trade_type`
/// beside its identifiers, as the console's search filters do.
struct SupportChannelFilterTests {
    /// One order per demo app for user u-7, one APP order of another user, and what the look-up lists.
    private static func seed(_ rig: GatewayRig) async throws {
        let mini = WeChatApps.demo.first { $0.name == "mini" }!
        let orders: [(String, String, String, String)] = [
            ("CF-ANDROID", "android", "u-7", ""),
            ("CF-MINI", "mini", "u-7", #","openid":"\#(SimulatorConfiguration.openID(of: "u-7", under: mini.appID))""#),
            ("CF-WEB", "web", "u-7", ""),
            ("CF-MWEB", "h5", "u-7", ""),
            ("CF-OTHER", "android", "u-8", ""),
        ]
        for (number, app, user, extra) in orders {
            let body = #"{"amount":990,"description":"Swift","client_ip":"203.0.113.7","out_trade_no":"\#(number)","user_id":"\#(user)","app":"\#(app)"\#(extra)}"#
            let created = try await rig.send(.post, "/v1/orders", body: body)
            #expect(created.status == 201, "\(number): \(created.json)")
        }
    }

    private static func numbers(_ response: GatewayRig.Response) -> [String] {
        (response.json["orders"] as? [[String: Any]] ?? []).compactMap { $0["out_trade_no"] as? String }
    }

    @Test("each order the support look-up answers carries its app and trade_type, and app= and trade_type= narrow any look-up",
          arguments: StoreKind.all)
    func theFiltersNarrowEveryLookUp(_ store: StoreKind) async throws {
        let rig = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await rig.stop() } }
        try await Self.seed(rig)
        func lookUp(_ query: String) async throws -> GatewayRig.Response {
            try await rig.send(.get, "/v1/support/orders?" + query, token: GatewayRig.support)
        }
        let all = try await lookUp("user_id=u-7")
        #expect(Self.numbers(all).sorted() == ["CF-ANDROID", "CF-MINI", "CF-MWEB", "CF-WEB"])
        let mini = try #require((all.json["orders"] as? [[String: Any]])?.first { $0["out_trade_no"] as? String == "CF-MINI" })
        #expect(mini["app"] as? String == "mini" && mini["trade_type"] as? String == "JSAPI")

        #expect(Self.numbers(try await lookUp("user_id=u-7&trade_type=JSAPI")) == ["CF-MINI"])
        #expect(Self.numbers(try await lookUp("user_id=u-7&app=web")) == ["CF-WEB"])
        #expect(Self.numbers(try await lookUp("user_id=u-7&app=web&trade_type=MWEB")).isEmpty)
        #expect(Self.numbers(try await lookUp("out_trade_no=CF-MWEB&trade_type=MWEB")) == ["CF-MWEB"])
        #expect(Self.numbers(try await lookUp("out_trade_no=CF-MWEB&trade_type=NATIVE")).isEmpty)
        #expect(Self.numbers(try await lookUp("out_trade_no=CF-OTHER&app=mini")).isEmpty)
        // Without an identifier, a filter lists that channel's orders of every user, newest first.
        #expect(Self.numbers(try await lookUp("trade_type=APP")) == ["CF-OTHER", "CF-ANDROID"])
        #expect(Self.numbers(try await lookUp("app=h5")) == ["CF-MWEB"])
    }

    @Test("a user's orders of one channel come a page at a time, with the user look-up's cursor")
    func aFilteredUserLookUpIsPaged() async throws {
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        for index in 0..<5 {
            let body = #"{"amount":990,"description":"Swift","client_ip":"203.0.113.7","out_trade_no":"CPAGE-\#(index)","user_id":"u-9","app":"\#(index == 2 ? "web" : "android")"}"#
            #expect(try await rig.send(.post, "/v1/orders", body: body).status == 201)
        }
        let first = try await rig.send(.get, "/v1/support/orders?user_id=u-9&trade_type=APP&limit=2", token: GatewayRig.support)
        #expect(Self.numbers(first) == ["CPAGE-4", "CPAGE-3"])
        let cursor = try #require(first.json["next_cursor"] as? String)
        let rest = try await rig.send(.get, "/v1/support/orders?user_id=u-9&trade_type=APP&limit=2&cursor=\(cursor)",
                                      token: GatewayRig.support)
        #expect(Self.numbers(rest) == ["CPAGE-1", "CPAGE-0"])
        #expect(rest.json["next_cursor"] == nil)
    }

    @Test("an unknown trade type or app, an empty one, or no identifier and no filter is 400 naming the parameter")
    func badFiltersAre400() async throws {
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        for (query, field) in [("user_id=u-7&trade_type=CASH", "trade_type"), ("trade_type=jsapi", "trade_type"),
                               ("trade_type=", "trade_type"), ("app=nope", "app"), ("out_trade_no=x&app=", "app")] {
            let refused = try await rig.send(.get, "/v1/support/orders?" + query, token: GatewayRig.support)
            #expect(refused.status == 400 && refused.error?["code"] as? String == "invalid_request", "\(query): \(refused.json)")
            #expect(refused.error?["field"] as? String == field, "\(query): \(refused.json)")
        }
        let bare = try await rig.send(.get, "/v1/support/orders", token: GatewayRig.support)
        #expect(bare.status == 400 && (bare.error?["message"] as? String)?.contains("trade_type") == true)
        // The filters are the support token's, as the look-up is.
        #expect(try await rig.send(.get, "/v1/support/orders?trade_type=APP", token: GatewayRig.client).status == 403)
    }

    @Test("a look-up by channel is audited with its filters")
    func aChannelLookUpIsAudited() async throws {
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        #expect(try await rig.send(.get, "/v1/support/orders?user_id=u-7&trade_type=JSAPI", token: GatewayRig.support).status == 200)
        #expect(try await rig.send(.get, "/v1/support/orders?app=web", token: GatewayRig.support).status == 200)
        let entries = try await rig.store.auditEntries(AuditQuery(action: "api_lookup"), limit: 10, before: nil).entries.map(\.entry)
        #expect(Set(entries.compactMap(\.target)) == ["user_id=u-7 trade_type=JSAPI", "app=web"])
    }
}
