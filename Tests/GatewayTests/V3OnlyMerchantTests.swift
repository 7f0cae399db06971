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

/// A merchant on API v3 that keeps neither the v2 key nor v2's merchant certificate: the orders
/// created under v2 that are still open, or paid and refunded later, are finished through v3 (which
/// finds an order by its out_trade_no whichever version created it); v2's notifies, which cannot
/// be verified without the key, are refused and write nothing.
struct V3OnlyMerchantTests {
    static func order(_ number: String) -> String {
        #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"\#(number)","user_id":"u-42"}"#
    }

    static func state(_ rig: GatewayRig, _ number: String) async -> OrderState? {
        (try? await rig.store.order(number))??.state
    }

    /// The order's timeline (each line's time in seconds from `since`) and the upstream calls
    /// made, for a failure's message: a wait answered NOTPAY with the payment settled seconds
    /// later is a starved machine, not a lost wake-up.
    static func timeline(_ rig: GatewayRig, _ number: String, since: Date) async throws -> String {
        let events = try await rig.store.events(number).map {
            "\(String(format: "%.1f", $0.at.timeIntervalSince(since))) s \($0.kind): \($0.detail)"
        }
        return "timeline \(events), simulator requests \(rig.simulator.counters.requests), "
            + "now \(String(format: "%.1f", Date().timeIntervalSince(since))) s"
    }

    /// The same WeChat and database before the switch: a gateway that had the v2 key and made v2
    /// orders, their notifies addressed to `rig`'s routes.
    static func gatewayBeforeTheSwitch(_ rig: GatewayRig) -> GatewayServices {
        var configuration = rig.services.configuration
        configuration.apiKey = APIKey(GatewayConfiguration.demoKey)
        configuration.v3.apiVersion = .v2
        let before = GatewayServices(GatewayContext(configuration: configuration, store: rig.store,
                                                    transport: SimulatorTransport(simulator: rig.simulator), now: { rig.clock.now() }))
        before.context.callbacks.use(base: rig.base)
        return before
    }

    @Test("without the v2 key, a v2 order's notify is refused and writes nothing, and the order settles once by v3's query (wait or reconciler); close and refund go through v3",
          arguments: StoreKind.all)
    func v2OrdersFinishThroughV3(store: StoreKind) async throws {
        let rig = try await GatewayRig.start(.sockets, store: store, environment: ["GATEWAY_RECONCILE_AFTER": "0"], wechat: .http,
                                             v3: V3Setup(mode: .publicKey, v2Key: false))
        defer { Task { await rig.stop() } }
        #expect(rig.services.configuration.apiKey == nil)
        let before = Self.gatewayBeforeTheSwitch(rig)
        for number in ["vo-waited", "vo-swept", "vo-closed"] {
            #expect(try await before.creation.create(try CreateOrderInput(json: Array(Self.order(number).utf8))).created)
            #expect(try await rig.store.order(number)?.apiVersion == "v2")
        }
        #expect(rig.simulator.counters.requests["/pay/unifiedorder"] == 3)

        // Paid: WeChat's v2 notify reaches this gateway, which cannot verify it: FAIL, nothing written.
        let eventsBefore = try await rig.store.events("vo-waited")
        try rig.simulator.pay(outTradeNo: "vo-waited")
        #expect(await eventually {
            rig.services.metrics.counter("wxpay_notifies_total", ["outcome": "rejected", "reason": "v2_not_configured"]) >= 1
        })
        #expect(rig.simulator.counters.notifiesAcknowledged == 0)
        #expect(await Self.state(rig, "vo-waited") == .notPay)
        #expect(try await rig.store.events("vo-waited") == eventsBefore)
        #expect(try await rig.store.order("vo-waited")?.lastNotifyAt == nil)

        // The wait finds the payment with one query, through v3; v2's orderquery is never asked.
        let waited = try await rig.send(.get, "/v1/orders/vo-waited?wait=20")
        #expect(waited.json.string("state") == "SUCCESS", "\(String(decoding: waited.body, as: UTF8.self))")
        #expect(rig.simulator.counters.requests["/v3/pay/transactions/out-trade-no/{id}"] == 1)
        #expect(rig.simulator.counters.requests["/pay/orderquery"] == nil)
        #expect(try await rig.store.outboxEvents("vo-waited").count == 1)
        #expect(try await rig.store.order("vo-waited")?.transactionID == rig.simulator.order("vo-waited")?.transactionID)

        // Paid and nobody waiting: the reconciler's sweep finds it through v3.
        try rig.simulator.pay(outTradeNo: "vo-swept")
        let reconciler = Reconciler(services: rig.services)
        #expect(await eventually {
            _ = await reconciler.sweep()
            return await Self.state(rig, "vo-swept") == .success
        })
        #expect(try await rig.store.events("vo-swept").contains { $0.kind == "reconcile" && $0.detail.contains("trade_state=SUCCESS") })
        #expect(try await rig.store.outboxEvents("vo-swept").count == 1)
        #expect(rig.simulator.counters.requests["/pay/orderquery"] == nil)

        // Closed through v3's close.
        rig.clock.advance(by: 301)
        let closed = try await rig.send(.post, "/v1/orders/vo-closed/close")
        #expect(closed.status == 200 && closed.json.string("state") == "CLOSED", "\(String(decoding: closed.body, as: UTF8.self))")
        #expect(rig.simulator.order("vo-closed")?.state == "CLOSED")
        #expect(rig.simulator.counters.requests["/v3/pay/transactions/out-trade-no/{id}/close"] == 1)
        #expect(rig.simulator.counters.requests["/pay/closeorder"] == nil)

        // Refunded through v3, its result on v3's refund route.
        let refund = try await rig.send(.post, "/v1/orders/vo-waited/refunds",
                                        body: #"{"amount":300,"reason":"bought by mistake","out_refund_no":"vo-r1"}"#)
        #expect(refund.status == 201, "\(String(decoding: refund.body, as: UTF8.self))")
        #expect(rig.simulator.counters.requests["/v3/refund/domestic/refunds"] == 1)
        #expect(rig.simulator.counters.requests["/secapi/pay/refund"] == nil)
        #expect(try await rig.store.refund("vo-r1")?.notifyURL?.hasSuffix("/wechat/v3/refund-notify") == true)
        _ = try rig.simulator.completeRefund(outRefundNo: "vo-r1")
        #expect(await eventually { (try? await rig.store.refund("vo-r1"))??.state == .success })
        #expect(await eventually { await Self.state(rig, "vo-waited") == .refund })

        // Each call counted under v3's name.
        let metrics = rig.services.metrics
        #expect(metrics.counter("wxpay_upstream_calls_total", ["api": "v3_query_order", "outcome": "success"]) >= 2)
        #expect(metrics.counter("wxpay_upstream_calls_total", ["api": "v3_close_order", "outcome": "success"]) == 1)
        #expect(metrics.counter("wxpay_upstream_calls_total", ["api": "v3_refund", "outcome": "success"]) == 1)
        #expect(metrics.counter("wxpay_upstream_calls_total", ["api": "orderquery", "outcome": "success"]) == 0)
    }

    @Test("without the v2 key a v2 refund notify is refused and writes nothing, and refundquery through v3 finishes the refund",
          arguments: StoreKind.all)
    func v2RefundNotifyRefused(store: StoreKind) async throws {
        let rig = try await GatewayRig.start(.sockets, store: store, environment: ["GATEWAY_REFUND_QUERY_AFTER": "0"], wechat: .http,
                                             v3: V3Setup(mode: .publicKey, v2Key: false))
        defer { Task { await rig.stop() } }
        let before = Self.gatewayBeforeTheSwitch(rig)
        #expect(try await before.creation.create(try CreateOrderInput(json: Array(Self.order("vo-rq-1").utf8))).created)
        try rig.simulator.pay(outTradeNo: "vo-rq-1")
        // The payment is found through v3 (the v2 notify is refused), then refunded through v3.
        let started = Date()
        let waited = GatewayRig.object(try await rig.services.queries.order("vo-rq-1", wait: 20))
        let timeline = try await Self.timeline(rig, "vo-rq-1", since: started)
        #expect(waited.string("state") == "SUCCESS", "\(timeline)")
        let refund = try await rig.send(.post, "/v1/orders/vo-rq-1/refunds",
                                        body: #"{"amount":990,"reason":"refunded","out_refund_no":"vo-rq-1-r1"}"#)
        #expect(refund.status == 201, "\(String(decoding: refund.body, as: UTF8.self))")
        #expect(rig.simulator.counters.requests["/v3/refund/domestic/refunds"] == 1)

        // A v2 refund notify for it (as WeChat would send one for a refund made in v2) is refused.
        let events = try await rig.store.events("vo-rq-1")
        let forged = try await rig.send(.post, "/wechat/refund-notify", token: nil,
                                        body: "<xml><return_code>SUCCESS</return_code><req_info>AAAA</req_info></xml>")
        #expect(String(decoding: forged.body, as: UTF8.self).contains("FAIL"))
        #expect(rig.services.metrics.counter("wxpay_refund_notifies_total", ["outcome": "rejected", "reason": "v2_not_configured"]) == 1)
        #expect(try await rig.store.events("vo-rq-1") == events)

        // Its v3 notify lost: the reconciler's refundquery (through v3) finishes it.
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        _ = try rig.simulator.completeRefund(outRefundNo: "vo-rq-1-r1")
        let reconciler = Reconciler(services: rig.services)
        #expect(await eventually {
            _ = await reconciler.sweep()
            return (try? await rig.store.refund("vo-rq-1-r1"))??.state == .success
        })
        #expect((rig.simulator.counters.requests["/v3/refund/domestic/refunds/{id}"] ?? 0) >= 1)
        #expect(rig.simulator.counters.requests["/pay/refundquery"] == nil)
        #expect(try await rig.store.outboxEvents("vo-rq-1").filter { $0.type == "refund.succeeded" }.count == 1)
    }

    @Test("with v3 configured and no merchant certificate, a paid v2 order is refunded through v3's refund API, recorded once, finished by its v3 notify or by refundquery",
          arguments: StoreKind.all)
    func v2RefundWithoutCertificate(store: StoreKind) async throws {
        // The v2 key kept (new orders still v2 here), no merchant certificate: v2 cannot refund.
        let rig = try await GatewayRig.start(.sockets, store: store, environment: ["GATEWAY_REFUND_QUERY_AFTER": "0"], wechat: .http,
                                             composition: .init(refundMode: .off), v3: V3Setup(mode: .publicKey, newOrders: .v2))
        defer { Task { await rig.stop() } }
        #expect(try await rig.createOrder("vc-paid").status == 201)
        #expect(try await rig.store.order("vc-paid")?.apiVersion == "v2")
        try rig.simulator.pay(outTradeNo: "vc-paid")
        #expect(await eventually { await Self.state(rig, "vc-paid") == .success })

        // The first refund hears back by v3's refund notify.
        let first = try await rig.send(.post, "/v1/orders/vc-paid/refunds",
                                       body: #"{"amount":300,"reason":"bought by mistake","out_refund_no":"vc-r1"}"#)
        #expect(first.status == 201, "\(String(decoding: first.body, as: UTF8.self))")
        let replay = try await rig.send(.post, "/v1/orders/vc-paid/refunds",
                                        body: #"{"amount":300,"reason":"bought by mistake","out_refund_no":"vc-r1"}"#)
        #expect(replay.status == 200)
        #expect(rig.simulator.counters.requests["/v3/refund/domestic/refunds"] == 1)
        #expect(rig.simulator.counters.requests["/secapi/pay/refund"] == nil)
        #expect(try await rig.store.refund("vc-r1")?.notifyURL?.hasSuffix("/wechat/v3/refund-notify") == true)
        _ = try rig.simulator.completeRefund(outRefundNo: "vc-r1")
        #expect(await eventually { (try? await rig.store.refund("vc-r1"))??.state == .success })

        // The second one's notify is lost: refundquery finishes it (v2 can still query: the key is kept).
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        let second = try await rig.send(.post, "/v1/orders/vc-paid/refunds",
                                        body: #"{"amount":690,"reason":"the rest","out_refund_no":"vc-r2"}"#)
        #expect(second.status == 201, "\(String(decoding: second.body, as: UTF8.self))")
        #expect(rig.simulator.counters.requests["/v3/refund/domestic/refunds"] == 2)
        _ = try rig.simulator.completeRefund(outRefundNo: "vc-r2")
        let reconciler = Reconciler(services: rig.services)
        #expect(await eventually {
            _ = await reconciler.sweep()
            return (try? await rig.store.refund("vc-r2"))??.state == .success
        })
        #expect(await eventually { await Self.state(rig, "vc-paid") == .refund })
        let refunds = try await rig.store.refunds(outTradeNo: "vc-paid")
        #expect(refunds.map(\.outRefundNo).sorted() == ["vc-r1", "vc-r2"])
        #expect(try await rig.store.outboxEvents("vc-paid").filter { $0.type == "refund.succeeded" }.count == 2)
        #expect(rig.simulator.counters.requests["/secapi/pay/refund"] == nil)
        #expect(rig.services.metrics.counter("wxpay_upstream_calls_total", ["api": "v3_refund", "outcome": "success"]) == 2)
        #expect(rig.services.metrics.counter("wxpay_upstream_calls_total", ["api": "refund", "outcome": "success"]) == 0)
    }

    @Test("the version that speaks each call: the order's own, v3 where v2 cannot sign (no key; a refund without the certificate), never v3 for a v2 prepay")
    func theRule() {
        func order(_ version: String) -> OrderRecord {
            OrderRecord(outTradeNo: "rule-\(version)", amount: 1, description: "d", clientIP: "203.0.113.7", attach: nil, userID: nil,
                        productID: nil, signType: version == "v3" ? "RSA" : "HMAC-SHA256", timeExpire: "20260101000000",
                        expiresAt: Date(), createdAt: Date(), parametersDigest: "", apiVersion: version)
        }
        let calls: [UpstreamCall] = [.prepay, .queryOrder, .closeOrder, .refund, .queryRefund]
        func versions(_ upstream: VersionedUpstream, _ apiVersion: String) -> [WeChatPayAPIVersion] {
            calls.map { upstream.apiVersion(of: $0, for: order(apiVersion)) }
        }
        let full = VersionedUpstream(v2: ScriptedUpstream(), v2Refunds: true, v3: ScriptedUpstream(), newOrders: .v3)
        #expect(versions(full, "v2") == [.v2, .v2, .v2, .v2, .v2])
        #expect(versions(full, "v3") == [.v3, .v3, .v3, .v3, .v3])
        #expect(full.apiVersion(of: .bill, for: nil) == .v3)
        let noCertificate = VersionedUpstream(v2: ScriptedUpstream(), v2Refunds: false, v3: ScriptedUpstream(), newOrders: .v2)
        #expect(versions(noCertificate, "v2") == [.v2, .v2, .v2, .v3, .v2])
        #expect(noCertificate.apiVersion(of: .bill, for: nil) == .v2)
        let noKey = VersionedUpstream(v2: nil, v2Refunds: true, v3: ScriptedUpstream(), newOrders: .v3)
        #expect(versions(noKey, "v2") == [.v2, .v3, .v3, .v3, .v3])
        // Without v3 nothing moves to it.
        let v2Only = VersionedUpstream(v2: ScriptedUpstream(), v2Refunds: false, v3: nil, newOrders: .v2)
        #expect(versions(v2Only, "v2") == [.v2, .v2, .v2, .v2, .v2])
        #expect(UpstreamCall.allCases.map { $0.metricLabel(.v2) }
            == ["unifiedorder", "orderquery", "closeorder", "refund", "refundquery", "downloadbill"])
    }

    @Test("a v2 order's prepay is refused without the v2 key (v3 cannot continue it), naming the missing key")
    func v2PrepayWithoutKey() async throws {
        let upstream = VersionedUpstream(v2: nil, v2Refunds: false, v3: nil, newOrders: .v3)
        let order = OrderRecord(outTradeNo: "rule-v2", amount: 1, description: "d", clientIP: "203.0.113.7", attach: nil, userID: nil,
                                productID: nil, signType: "HMAC-SHA256", timeExpire: "20260101000000", expiresAt: Date(),
                                createdAt: Date(), parametersDigest: "", apiVersion: "v2")
        await #expect(throws: UpstreamError.v2NotConfigured) { try await upstream.prepay(order, notifyURL: "https://example.com/n") }
        #expect(UpstreamError.v2NotConfigured.description.contains("WXPAY_API_KEY"))
    }
}
