// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// `GET /v1/users/{user_id}/entitlements` over the whole gateway, in process and over sockets, on
/// both stores: WeChat passes stacked and shortened by a refund, courses for ever, and who may ask.
struct EntitlementAPITests {
    /// A client-token order of a demo catalog product for `user`, paid through the simulator.
    static func paid(_ rig: RefundRig, _ outTradeNo: String, product: String, user: String) async throws -> Date {
        let created = try await rig.send(.post, "/v1/orders", body: #"""
            {"product_id":"\#(product)","client_ip":"203.0.113.7","user_id":"\#(user)","out_trade_no":"\#(outTradeNo)"}
            """#)
        #expect(created.status == 201)
        try rig.simulator.pay(outTradeNo: outTradeNo)
        #expect(await eventually(timeout: .seconds(60)) { (try? await rig.store.order(outTradeNo))??.state == .success })
        return try #require(try await rig.store.order(outTradeNo)?.paidAt)
    }

    static func entitlements(_ rig: RefundRig, _ user: String, token: String? = RefundRig.client) async throws -> [[String: Any]] {
        let answer = try await rig.send(.get, "/v1/users/\(user)/entitlements", token: token)
        #expect(answer.status == 200)
        #expect(answer.json["user_id"] as? String == user)
        return try #require(answer.json["entitlements"] as? [[String: Any]])
    }

    @Test("Two paid monthly passes stack, a course grants for ever, and refunding the first pass in full shortens the membership back",
          arguments: RefundRig.Mode.allCases, StoreKind.all)
    func passesStackAndARefundShortensThem(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        #expect(try await Self.entitlements(rig, "ent-u1").isEmpty)
        let first = try await Self.paid(rig, "ent-m1", product: "vip-month", user: "ent-u1")
        let second = try await Self.paid(rig, "ent-m2", product: "vip-month", user: "ent-u1")
        _ = try await Self.paid(rig, "ent-c1", product: "swift-101", user: "ent-u1")
        _ = try await Self.paid(rig, "ent-o1", product: "vip-year", user: "ent-other")

        let stacked = try await Self.entitlements(rig, "ent-u1")
        #expect(stacked.map { $0["entitlement"] as? String } == ["swift-101", "vip"])
        #expect(stacked[0]["expires_at"] is NSNull && stacked[0]["active"] as? Bool == true)
        #expect((stacked[0]["source"] as? [String: Any])?["order"] as? String == "ent-c1")
        // The second pass was bought while the first ran: it starts where the first ends.
        #expect(stacked[1]["expires_at"] as? String == Timestamp.rfc3339(BeijingTime.adding(months: 2, days: 0, to: first)))
        #expect(stacked[1]["active"] as? Bool == true && stacked[1]["will_renew"] as? Bool == false)
        let source = try #require(stacked[1]["source"] as? [String: Any])
        #expect(source["channel"] as? String == "wechat" && source["order"] as? String == "ent-m2")

        #expect(try await rig.refund("ent-m1", amount: 3000, number: "ent-m1-r1").status == 201)
        try rig.simulator.completeRefund(outRefundNo: "ent-m1-r1")
        #expect(await rig.refund("ent-m1-r1", becomes: .success))
        let shortened = try await Self.entitlements(rig, "ent-u1")
        #expect(shortened.first { $0["entitlement"] as? String == "vip" }?["expires_at"] as? String
            == Timestamp.rfc3339(BeijingTime.adding(months: 1, days: 0, to: second)))
        // Another user's payments are theirs alone.
        let other = try await Self.entitlements(rig, "ent-other")
        #expect(other.map { $0["entitlement"] as? String } == ["vip"])
    }

    @Test("An app token reads its own user's entitlements only; a support token, no token or a bad user id are refused",
          arguments: RefundRig.Mode.allCases)
    func whoMayAsk(mode: RefundRig.Mode) async throws {
        let rig = try await RefundRig.start(mode)
        defer { Task { await rig.stop() } }
        _ = try await Self.paid(rig, "ent-a1", product: "swift-201", user: "alice")
        let own = try await Self.entitlements(rig, "alice", token: TestTokens.minted("alice"))
        #expect(own.map { $0["entitlement"] as? String } == ["swift-201"])
        let another = try await rig.send(.get, "/v1/users/alice/entitlements", token: TestTokens.minted("bob"))
        #expect(another.status == 404 && another.error?["code"] as? String == "user_not_found")
        #expect(try await rig.send(.get, "/v1/users/alice/entitlements", token: RefundRig.support).status == 403)
        #expect(try await rig.send(.get, "/v1/users/alice/entitlements", token: nil).status == 401)
        let invisible = try await rig.send(.get, "/v1/users/a%E2%80%8Bb/entitlements")
        #expect(invisible.status == 400 && invisible.error?["field"] as? String == "user_id")
    }

    @Test("A payment and a refund each write entitlement.changed in their own transaction, delivered oldest first with the entitlements recomputed",
          arguments: StoreKind.all)
    func entitlementChangedIsWrittenWithTheChangeAndCarriesTheEntitlements(store: StoreKind) async throws {
        let rig = try await RefundRig.start(.inProcess, store: store)
        let receiver = try await WebhookReceiver.start()
        let client = try HTTPClient()
        defer { Task { await rig.stop(); await receiver.stop(); await client.shutdown() } }
        _ = try await Self.paid(rig, "ent-w1", product: "vip-month", user: "ent-hook")
        // Written with the payment: there the moment the order is paid, beside order.paid.
        #expect(try await rig.events("ent-w1", type: "entitlement.changed").count == 1)
        #expect(try await rig.events("ent-w1", type: "order.paid").count == 1)
        // An order without a product grants nothing: no event.
        try await rig.paidOrder("ent-nobody", amount: 500)
        #expect(try await rig.events("ent-nobody", type: "entitlement.changed").isEmpty)

        let dispatcher = FulfilmentDispatcher(
            store: rig.store, configuration: FulfilmentTests.configuration(receiver), transport: HTTPFulfilmentTransport(client: client),
            entitlements: EntitlementEvents(store: rig.store, catalog: rig.services.context.catalog))
        _ = await dispatcher.deliverDue()
        let first = try #require(receiver.deliveries.last { $0.json["type"] as? String == "entitlement.changed" })
        #expect(first.signatureValid)
        let data = try #require(GatewayRig.object(first.body)["data"] as? [String: Any])
        #expect(data["user_id"] as? String == "ent-hook" && data["out_trade_no"] as? String == "ent-w1")
        let granted = try #require(data["entitlements"] as? [[String: Any]])
        #expect(granted.map { $0["entitlement"] as? String } == ["vip"])
        #expect(granted.first?["active"] as? Bool == true)

        // The refund door's transaction writes the next one; it carries the membership gone.
        #expect(try await rig.refund("ent-w1", amount: 3000, number: "ent-w1-r1").status == 201)
        try rig.simulator.completeRefund(outRefundNo: "ent-w1-r1")
        #expect(await rig.refund("ent-w1-r1", becomes: .success))
        #expect(try await rig.events("ent-w1", type: "entitlement.changed").count == 2)
        _ = await dispatcher.deliverDue()
        let changes = receiver.deliveries.filter { $0.json["type"] as? String == "entitlement.changed" }
        #expect(changes.count == 2)
        let lastDelivery = try #require(changes.last)
        let last = try #require(GatewayRig.object(lastDelivery.body)["data"] as? [String: Any])
        #expect((last["entitlements"] as? [[String: Any]])?.isEmpty == true)
        #expect(last["out_trade_no"] as? String == "ent-w1")
    }
}
