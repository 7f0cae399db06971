// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import Observability
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator
import WeChatPayV3

/// A merchant moving new orders from v2 to v3 with orders in flight: every order keeps the version
/// it was created with, so those made under v2 are paid, waited for, closed and refunded in v2
/// after the switch, while new ones are v3.
struct V3SwitchTests {
    static func order(_ number: String) -> String {
        #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"\#(number)","user_id":"u-42"}"#
    }

    @Test("a v2 notify or refund notify, made with the v2 key, is refused for an order created with v3 and writes nothing",
          arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func theV2KeyCannotPayOrRefundAV3Order(mode: GatewayRig.Mode, store: StoreKind) async throws {
        // A merchant on v3 that keeps the v2 key for orders still in flight from before the switch.
        let rig = try await GatewayRig.start(mode, store: store, v3: V3Setup(mode: .publicKey, newOrders: .v3))
        defer { Task { await rig.stop() } }
        #expect(try await rig.createOrder("v3-forged", amount: 2500).status == 201)
        #expect(try await rig.store.order("v3-forged")?.apiVersion == "v3")
        func post(_ path: String, _ body: String) async throws -> String {
            String(decoding: try await rig.send(.post, path, token: nil, body: body).body, as: UTF8.self)
        }
        func written(_ order: String) async throws -> [String] {
            try await rig.store.events(order).map { "\($0.kind) \($0.detail)" }
                + rig.store.outboxEvents(order).map(\.id)
                + rig.store.refunds(outTradeNo: order).map { "\($0.outRefundNo) \($0.state)" }
        }
        let before = try await written("v3-forged")
        let payment = rig.forgedNotify("v3-forged", amount: 2500)
        #expect(try await post("/wechat/notify", payment).contains("FAIL"))
        // Without the key it is a forgery like any other (`bad_sign`); with it, `not_a_v2_order`.
        let unsigned = rig.forgedNotify("v3-forged", amount: 2500, key: APIKey("00000000000000000000000000000000"))
        #expect(try await post("/wechat/notify", unsigned).contains("FAIL"))
        #expect(rig.metrics.counter("wxpay_notifies_total", ["outcome": "rejected", "reason": "not_a_v2_order"]) == 1)
        #expect(rig.metrics.counter("wxpay_notifies_total", ["outcome": "rejected", "reason": "bad_sign"]) == 1)
        #expect(try await rig.store.order("v3-forged")?.state == .notPay)
        #expect(try await written("v3-forged") == before)

        // Paid for real (v3's signed notify), then refunded through v3.
        try rig.simulator.pay(outTradeNo: "v3-forged")
        #expect(await eventually { (try? await rig.store.order("v3-forged"))??.state == .success })
        let refund = try await rig.services.refunds.request(RefundInput(amount: 400, reason: "test", outRefundNo: "v3-forged-r1"),
                                                            outTradeNo: "v3-forged")
        #expect(refund.created)
        let stored = try #require(try await rig.store.refund("v3-forged-r1"))
        #expect(stored.state == .processing)
        let paid = try #require(try await rig.store.order("v3-forged"))
        var builder = RefundNotifyBuilder(
            merchant: MerchantIdentity(appID: GatewayConfiguration.demoAppID, mchID: GatewayConfiguration.demoMchID),
            transactionID: paid.transactionID ?? "", outTradeNo: "v3-forged", refundID: "50300000000000000000000000077",
            outRefundNo: "v3-forged-r1", totalFee: stored.totalFee, refundFee: stored.amount, nonce: "forgedNonce")
        builder.refundStatus = .success
        builder.successTime = Date()
        let refundNotify = String(decoding: try FlatXML.encode(try builder.fields(encryptedWith: APIKey(GatewayConfiguration.demoKey))),
                                  as: UTF8.self)
        let beforeRefundNotify = try await written("v3-forged")
        #expect(try await post("/wechat/refund-notify", refundNotify).contains("FAIL"))
        #expect(try await rig.store.refund("v3-forged-r1")?.state == .processing)
        #expect(try await written("v3-forged") == beforeRefundNotify)
    }

    @Test("going back to v2 without the v3 keys, closing, refunding or rechecking a v3 order is refused before anything is written or sent, and the reconciler passes over what it cannot ask without counting WeChat as failing",
          arguments: StoreKind.all)
    func aV3OrderCannotBeClosedOrRefundedWithoutTheV3Keys(store: StoreKind) async throws {
        let rig = try await GatewayRig.start(.sockets, store: store, wechat: .http, v3: V3Setup(mode: .publicKey, newOrders: .v3))
        defer { Task { await rig.stop() } }
        for number in ["back-open", "back-paid"] { #expect(try await rig.createOrder(number).status == 201) }
        try rig.simulator.pay(outTradeNo: "back-paid")
        #expect(await eventually { (try? await rig.store.order("back-paid"))??.state == .success })
        // A v3 refund WeChat has not finished yet when the merchant goes back.
        #expect(try await rig.services.refunds.request(RefundInput(amount: 100, reason: "before", outRefundNo: "back-r0"),
                                                       outTradeNo: "back-paid").created)
        #expect(try await rig.store.refund("back-r0")?.state == .processing)
        // The merchant goes back (a restart with WXPAY_API_VERSION=v2 and the v3 variables removed).
        var configuration = rig.services.configuration
        configuration.v3 = GatewayConfiguration.V3()
        let back = GatewayServices(GatewayContext(configuration: configuration, store: rig.store,
                                                  transport: SimulatorTransport(simulator: rig.simulator), now: { rig.clock.now() }))
        rig.clock.advance(by: 301)
        func written(_ order: String) async throws -> [String] {
            try await rig.store.events(order).map { "\($0.kind) \($0.detail)" }
                + rig.store.outboxEvents(order).map(\.id)
                + rig.store.refunds(outTradeNo: order).map { "\($0.outRefundNo) \($0.state)" }
        }
        let before = (try await written("back-open"), try await written("back-paid"))
        let requests = rig.simulator.counters.requests
        do {
            _ = try await back.closing.close("back-open")
            Issue.record("the close of a v3 order went through without the v3 keys")
        } catch {
            #expect(error.status == 503)
            #expect(error.code == "api_version_not_configured")
            #expect(error.message.contains("WXPAY_API_V3_KEY"))
            #expect(!error.message.contains("refused"))
        }
        do {
            _ = try await back.refunds.request(RefundInput(amount: 100, reason: "back", outRefundNo: "back-r1"), outTradeNo: "back-paid")
            Issue.record("the refund of a v3 order went through without the v3 keys")
        } catch {
            #expect(error.status == 503)
            #expect(error.code == "api_version_not_configured")
        }
        // A repeat of the refund recorded before going back, identical: answered as it stands, as any
        // repeat is (nothing is sent); another amount under its number is still a conflict.
        let repeated = try await back.refunds.request(RefundInput(amount: 100, reason: "before", outRefundNo: "back-r0"),
                                                      outTradeNo: "back-paid")
        #expect(!repeated.created && repeated.state == "PROCESSING")
        do {
            _ = try await back.refunds.request(RefundInput(amount: 200, reason: "before", outRefundNo: "back-r0"), outTradeNo: "back-paid")
            Issue.record("a conflicting repeat was accepted")
        } catch {
            #expect(error.code == "out_refund_no_conflict")
        }
        #expect(try await rig.store.order("back-open")?.state == .notPay)
        #expect(try await rig.store.refund("back-r1") == nil)
        #expect(try await written("back-open") == before.0)
        #expect(try await written("back-paid") == before.1)
        #expect(rig.simulator.counters.requests == requests)
        // The app repeating the create (same parameters): its parameters cannot be signed without v3's key.
        do {
            _ = try await back.creation.create(try CreateOrderInput(json: Array(Self.order("back-open").utf8)))
            Issue.record("a repeated create of a v3 order was answered without the v3 keys")
        } catch {
            #expect(error.status == 503)
            #expect(error.code == "api_version_not_configured")
        }
        #expect(try await written("back-open") == before.0)
        // Support's recheck is refused the same way, before its timeline line.
        do {
            _ = try await back.support.recheck("back-open")
            Issue.record("the recheck of a v3 order went through without the v3 keys")
        } catch {
            #expect(error.code == "api_version_not_configured")
        }
        #expect(try await written("back-open") == before.0)

        // The reconciler: the v3 order and refund in flight are not asked about, which is not
        // WeChat failing (no error, no backoff), and a v2 order whose notify was lost is found.
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        #expect(try await back.creation.create(try CreateOrderInput(json: Array(Self.order("back-v2").utf8))).created)
        #expect(try await rig.store.order("back-v2")?.apiVersion == "v2")
        try rig.simulator.pay(outTradeNo: "back-v2")
        // A minute's period, so its 54 s lease outlasts a slow sweep on a loaded machine.
        let reconciler = Reconciler(services: back, configuration: .init(interval: 60, after: 0, concurrency: 4, rate: 1000))
        rig.clock.advance(by: 120)
        let first = await reconciler.sweep()
        #expect(first.errors == 0 && first.refundErrors == 0, "\(first)")
        #expect(try await rig.store.order("back-v2")?.state == .success)
        #expect(try await rig.store.order("back-open")?.state == .notPay)
        #expect(try await rig.store.refund("back-r0")?.state == .processing)
        #expect(rig.simulator.counters.requests["/v3/pay/transactions/out-trade-no/{id}"] == requests["/v3/pay/transactions/out-trade-no/{id}"])
        #expect(rig.simulator.counters.requests["/v3/refund/domestic/refunds/{id}"]
            == requests["/v3/refund/domestic/refunds/{id}"])
        // Said on their timelines once, not at every sweep.
        rig.clock.advance(by: 120)
        let second = await reconciler.sweep()
        #expect(second.errors == 0 && second.refundErrors == 0, "\(second)")
        let lines = try await rig.store.events("back-open").filter { $0.detail.contains("not sent: v3_not_configured") }
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.kind == "reconcile_failed")
        let refundLines = try await rig.store.events("back-paid").filter { $0.detail.contains("back-r0: refundquery not sent") }
        #expect(refundLines.count == 1, "\(refundLines)")
    }

    @Test("orders created under v2 finish in v2 after the switch to v3, and new orders are v3", arguments: StoreKind.all)
    func v2OrdersFinishAfterTheSwitch(store: StoreKind) async throws {
        // Before: v3's keys configured, new orders still v2. WeChat's notifies reach this gateway
        // over HTTP, both versions' routes.
        let rig = try await GatewayRig.start(.sockets, store: store, wechat: .http, v3: V3Setup(mode: .publicKey, newOrders: .v2))
        defer { Task { await rig.stop() } }
        for number in ["sw-paid", "sw-waited", "sw-closed"] {
            #expect(try await rig.createOrder(number).status == 201)
            #expect(try await rig.store.order(number)?.apiVersion == "v2")
            #expect(rig.simulator.order(number)?.apiVersion == "v2")
        }
        // The switch (a restart with WXPAY_API_VERSION=v3): the same database and WeChat.
        var configuration = rig.services.configuration
        configuration.v3.apiVersion = .v3
        let switched = GatewayServices(GatewayContext(configuration: configuration, store: rig.store,
                                                      transport: SimulatorTransport(simulator: rig.simulator), now: { rig.clock.now() }))
        switched.context.callbacks.use(base: rig.base)

        let fresh = try await switched.creation.create(try CreateOrderInput(json: Array(Self.order("sw-new").utf8)))
        #expect(fresh.created)
        #expect(try await rig.store.order("sw-new")?.apiVersion == "v3")
        #expect(rig.simulator.order("sw-new")?.apiVersion == "v3")

        // A v2 order paid after the switch: WeChat's v2 notify settles it.
        try rig.simulator.pay(outTradeNo: "sw-paid")
        #expect(await eventually { (try? await rig.store.order("sw-paid"))??.state == .success })
        // A v2 order whose notify is lost: the switched gateway's wait asks v2's orderquery.
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        try rig.simulator.pay(outTradeNo: "sw-waited")
        let queries = rig.simulator.counters.requests["/pay/orderquery"] ?? 0
        let waited = GatewayRig.object(try await switched.queries.order("sw-waited", wait: 20))
        #expect(waited.string("state") == "SUCCESS")
        #expect((rig.simulator.counters.requests["/pay/orderquery"] ?? 0) > queries)
        #expect(rig.simulator.counters.requests["/v3/pay/transactions/out-trade-no/{id}"] == nil)
        // A v2 order closed after the switch: v2's closeorder.
        rig.clock.advance(by: 301)
        let closed = GatewayRig.object(try await switched.closing.close("sw-closed"))
        #expect(closed.string("state") == "CLOSED")
        #expect(rig.simulator.counters.requests["/pay/closeorder"] == 1)
        #expect(rig.simulator.counters.requests["/v3/pay/transactions/out-trade-no/{id}/close"] == nil)
        // A v2 order refunded after the switch: v2's refund, its notify to v2's route.
        rig.simulator.apply(FaultPlan())
        let refund = try await switched.refunds.request(RefundInput(amount: 300, reason: "switch", outRefundNo: "sw-r1"),
                                                        outTradeNo: "sw-paid")
        #expect(refund.created)
        #expect(rig.simulator.counters.requests["/secapi/pay/refund"] == 1)
        #expect(try await rig.store.refund("sw-r1")?.notifyURL?.hasSuffix("/wechat/refund-notify") == true)
        _ = try rig.simulator.completeRefund(outRefundNo: "sw-r1")
        #expect(await eventually { (try? await rig.store.refund("sw-r1"))??.state == .success })

        // The new order is v3 throughout: its notify is v3's.
        try rig.simulator.pay(outTradeNo: "sw-new")
        #expect(await eventually { (try? await rig.store.order("sw-new"))??.state == .success })
        #expect(rig.simulator.counters.requests["/v3/pay/transactions/app"] == 1)
    }
}
