// SPDX-License-Identifier: Apache-2.0
import Crypto
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

/// WeChat Pay API v3 end to end: the gateway over real sockets (its API and WeChat's notifies over
/// HTTP), WeChat's side the simulator's v3 over HTTP through the libcurl transport, in each key
/// mode and on both stores.
struct V3EndToEndTests {
    /// Over sockets, WeChat over HTTP; in process, WeChat in process too (the simulator's transport).
    static func start(_ store: StoreKind, _ mode: V3Setup.KeyMode, environment: [String: String] = [:],
                      clockScale: Double = 1, rig: GatewayRig.Mode = .sockets) async throws -> GatewayRig {
        try await GatewayRig.start(rig, store: store, environment: environment, clockScale: clockScale,
                                   wechat: rig == .sockets ? .http : .inProcess, v3: V3Setup(mode: mode))
    }

    static func state(_ rig: GatewayRig, _ outTradeNo: String) async -> OrderState? {
        (try? await rig.store.order(outTradeNo))??.state
    }

    @Test("a v3 order: created with app parameters signed by the merchant key, paid by WeChat's signed notify, refunded with its notify",
          arguments: GatewayRig.Mode.allCases, StoreKind.all.flatMap { store in V3Setup.KeyMode.allCases.map { (store, $0) } })
    func createPayAndRefund(rigMode: GatewayRig.Mode, setup: (store: StoreKind, mode: V3Setup.KeyMode)) async throws {
        let rig = try await Self.start(setup.store, setup.mode, rig: rigMode)
        defer { Task { await rig.stop() } }
        let created = try await rig.createOrder("v3-pay-0001", amount: 990)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let params = try #require(created.json.object("app_params"))
        #expect(params.string("signType") == "RSA")
        #expect(params.string("packageValue") == "Sign=WXPay")
        #expect(params.string("partnerId") == GatewayConfiguration.demoMchID)
        let signature = try #require(Base64.decode(params.string("sign") ?? "", .standardPadded))
        let message = V3AppPayParameters.message(appID: params.string("appId") ?? "", timeStamp: params.string("timeStamp") ?? "",
                                                 nonceStr: params.string("nonceStr") ?? "", prepayID: params.string("prepayId") ?? "")
        #expect(V3Setup.keys.merchantKey.publicKey.isValidSignature(signature, for: message), "the app's sign must verify under the merchant key")
        // An identical create answers identical bytes (a replay of the prepay).
        let replay = try await rig.createOrder("v3-pay-0001", amount: 990)
        #expect(replay.status == 200 && replay.json.object("app_params")?.string("sign") == params.string("sign"))
        #expect(rig.simulator.order("v3-pay-0001")?.apiVersion == "v3")
        #expect(try await rig.store.order("v3-pay-0001")?.apiVersion == "v3")
        #expect(try await rig.store.events("v3-pay-0001").contains { $0.kind == "created" && $0.detail.hasSuffix("api=v3") })

        try rig.simulator.pay(outTradeNo: "v3-pay-0001")
        #expect(await eventually { await Self.state(rig, "v3-pay-0001") == .success })
        #expect(await eventually { rig.simulator.counters.notifiesAcknowledged >= 1 })
        let order = try #require(try await rig.store.order("v3-pay-0001"))
        #expect(order.transactionID == rig.simulator.order("v3-pay-0001")?.transactionID)
        #expect(try await rig.store.events("v3-pay-0001").contains { $0.kind == "notify_received" && $0.detail == "settled" })
        #expect(try await rig.store.outboxEvents("v3-pay-0001").count == 1)

        // A refund, sent as v3 (no certificate) and finished by WeChat's v3 refund notify.
        let refund = try await rig.send(.post, "/v1/orders/v3-pay-0001/refunds",
                                        body: #"{"amount":300,"reason":"bought by mistake","out_refund_no":"v3-r1"}"#)
        #expect(refund.status == 201, "\(String(decoding: refund.body, as: UTF8.self))")
        #expect(rig.simulator.counters.requests["/v3/refund/domestic/refunds"] == 1)
        let recorded = try await rig.store.refund("v3-r1")
        #expect(recorded?.notifyURL?.hasSuffix("/wechat/v3/refund-notify") == true)
        _ = try rig.simulator.completeRefund(outRefundNo: "v3-r1")
        #expect(await eventually { (try? await rig.store.refund("v3-r1"))??.state == .success })
        #expect(await eventually { await Self.state(rig, "v3-pay-0001") == .refund })
    }

    @Test("a v3 refund whose notify is lost is finished by refundquery, and a paid order whose notify is lost by wait or the reconciler",
          arguments: StoreKind.all, [V3Setup.KeyMode.publicKey, .certificates])
    func lostNotifies(store: StoreKind, mode: V3Setup.KeyMode) async throws {
        let rig = try await Self.start(store, mode, environment: ["GATEWAY_RECONCILE_AFTER": "0", "GATEWAY_REFUND_QUERY_AFTER": "0"])
        defer { Task { await rig.stop() } }
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        _ = try await rig.createOrder("v3-wait-0001")
        try rig.simulator.pay(outTradeNo: "v3-wait-0001")
        let waited = try await rig.send(.get, "/v1/orders/v3-wait-0001?wait=20")
        #expect(waited.json.string("state") == "SUCCESS", "\(String(decoding: waited.body, as: UTF8.self))")
        #expect((rig.simulator.counters.requests["/v3/pay/transactions/out-trade-no/{id}"] ?? 0) >= 1)

        _ = try await rig.createOrder("v3-sweep-0001")
        try rig.simulator.pay(outTradeNo: "v3-sweep-0001")
        let reconciler = Reconciler(services: rig.services)
        #expect(await eventually {
            _ = await reconciler.sweep()
            return await Self.state(rig, "v3-sweep-0001") == .success
        })
        #expect(try await rig.store.events("v3-sweep-0001").contains { $0.kind == "reconcile" && $0.detail.contains("trade_state=SUCCESS") })

        let refund = try await rig.send(.post, "/v1/orders/v3-sweep-0001/refunds", body: #"{"amount":990,"reason":"refunded","out_refund_no":"v3-lost-r1"}"#)
        #expect(refund.status == 201, "\(String(decoding: refund.body, as: UTF8.self))")
        _ = try rig.simulator.completeRefund(outRefundNo: "v3-lost-r1")
        #expect(try await rig.store.refund("v3-lost-r1")?.state == .processing)
        #expect(await eventually {
            _ = await reconciler.sweep()
            return (try? await rig.store.refund("v3-lost-r1"))??.state == .success
        })
        #expect((rig.simulator.counters.requests["/v3/refund/domestic/refunds/{id}"] ?? 0) >= 1)
        #expect(rig.simulator.counters.notifiesAcknowledged == 0)
    }

    @Test("closing a v3 order closes it at WeChat", arguments: StoreKind.all, [V3Setup.KeyMode.publicKey, .certificates])
    func close(store: StoreKind, mode: V3Setup.KeyMode) async throws {
        let rig = try await Self.start(store, mode)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("v3-close-0001")
        // WeChat closes no order within 5 minutes of its creation.
        rig.clock.advance(by: 301)
        let closed = try await rig.send(.post, "/v1/orders/v3-close-0001/close")
        #expect(closed.status == 200, "\(String(decoding: closed.body, as: UTF8.self))")
        #expect(closed.json.string("state") == "CLOSED")
        #expect(rig.simulator.order("v3-close-0001")?.state == "CLOSED")
        #expect(rig.simulator.counters.requests["/v3/pay/transactions/out-trade-no/{id}/close"] == 1)
    }

    @Test("notifies that are not WeChat's are refused and write nothing: forged, stale, of an unknown serial, without headers, and WeChat's SIGNTEST probe quietly",
          arguments: StoreKind.all)
    func refusedNotifies(store: StoreKind) async throws {
        let logs = InMemoryLogHandler()
        let rig = try await GatewayRig.start(.sockets, store: store, logger: Logger(label: "test", handler: logs), wechat: .http,
                                             v3: V3Setup(mode: .publicKey))
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("v3-forge-0001", amount: 990)
        let paid = GatewayRig.paidTransaction("v3-forge-0001", amount: 990)
        let genuine = GatewayRig.publicKeySigner
        let stranger = WeChatPaySigner(key: RSAPrivateKey.generate(), serial: V3Setup.publicKeyID)
        let now = Int64(Date().timeIntervalSince1970)
        let rowsBefore = await TableRowCounts.of(rig.database)
        let forged = try await rig.v3Notify(.payment(paid), signer: stranger)
        let stale = try await rig.v3Notify(.payment(paid), signer: genuine, timestamp: now - 600)
        let future = try await rig.v3Notify(.payment(paid), signer: genuine, timestamp: now + 600)
        let unknownSerial = try await rig.v3Notify(.payment(paid), signer: WeChatPaySigner(key: V3Setup.keys.wechatpayKey, serial: "7FFFFFFFFFFFFFFF"))
        let headless = try await rig.v3Notify(.payment(paid), signer: genuine) { $0["Wechatpay-Signature"] = nil }
        let tampered = try await rig.v3Notify(.payment(paid), signer: genuine) { $0["Wechatpay-Nonce"] = "another-nonce" }
        for (name, reply) in [("forged", forged), ("stale", stale), ("future", future), ("unknown serial", unknownSerial),
                              ("no signature", headless), ("tampered", tampered)] {
            #expect(reply.status == 401, "\(name): \(reply.status)")
            #expect(reply.json.string("code") == "FAIL", "\(name)")
        }
        let logged = logs.all.count
        let probe = try await rig.v3Notify(.payment(paid), signer: genuine) { $0["Wechatpay-Signature"] = "WECHATPAY/SIGNTEST/abc" }
        #expect(probe.status == 400 && probe.json.string("code") == "FAIL")
        #expect(logs.all.count == logged, "a probe is refused quietly")
        // A body over the notify limit is refused before it is read. The server may close before
        // the client has sent it all, and the reset can reach the client before the 413 does
        // (receiveFailed, seen once at load): a refusal too, as BatteryHostileInputTests reads it.
        let huge = try? await rig.send(.post, "/wechat/v3/notify", token: nil, bytes: Array(repeating: 0x20, count: 100_000),
                                       headers: ["Content-Type": "application/json"])
        #expect(huge == nil || huge?.status == 413)
        #expect(await TableRowCounts.of(rig.database) == rowsBefore, "an unauthenticated notify wrote a row")
        #expect(await Self.state(rig, "v3-forge-0001") == .notPay)
        for reason in ["bad_signature", "stale_timestamp", "unknown_serial", "missing_header", "signature_probe"] {
            #expect(rig.metrics.counter("wxpay_notifies_total", ["outcome": "rejected", "reason": reason]) >= 1, "\(reason)")
        }

        // WeChat's own signature on another amount settles nothing and is put on the timeline.
        let wrongAmount = try await rig.v3Notify(.payment(GatewayRig.paidTransaction("v3-forge-0001", amount: 1)), signer: genuine)
        #expect(wrongAmount.status == 500)
        #expect(try await rig.store.events("v3-forge-0001").contains { $0.kind == "amount_mismatch" })
        // The genuine notify settles, answered 204 after the commit; its copy too, changing nothing.
        let valid = try await rig.v3Notify(.payment(paid), signer: genuine)
        #expect(valid.status == 204 && valid.body.isEmpty)
        #expect(await Self.state(rig, "v3-forge-0001") == .success)
        let copy = try await rig.v3Notify(.payment(paid), signer: genuine)
        #expect(copy.status == 204)
        #expect(try await rig.store.outboxEvents("v3-forge-0001").count == 1)
        // A refund notify at the payment route, and the payment at the refund route, are refused.
        let misrouted = try await rig.v3Notify(.payment(paid), signer: genuine, path: "/wechat/v3/refund-notify")
        #expect(misrouted.status == 400)
    }

    @Test("every notify attempt WeChat signs wrongly is refused, and the first one signed right settles the order",
          arguments: [V3Setup.KeyMode.publicKey, .certificates])
    func simulatorSignatureFaults(mode: V3Setup.KeyMode) async throws {
        let rig = try await GatewayRig.start(.sockets, store: .sqlite, wechat: .http, v3: V3Setup(mode: mode)) {
            $0.notifyRetryIntervals = [1, 1, 1, 1, 1, 1, 1, 1]
        }
        defer { Task { await rig.stop() } }
        for (index, faults) in [V3NotifyFaults(probeRate: 1), V3NotifyFaults(staleTimestampRate: 1), V3NotifyFaults(badSignatureRate: 1),
                                V3NotifyFaults(unknownSerialRate: 1)].enumerated() {
            let number = "v3-fault-000\(index)"
            _ = try await rig.createOrder(number)
            rig.simulator.apply(FaultPlan(v3Notify: faults))
            let before = rig.simulator.counters.notifyAttempts
            try rig.simulator.pay(outTradeNo: number)
            #expect(await eventually { rig.simulator.counters.notifyAttempts >= before + 2 }, "\(faults)")
            #expect(await Self.state(rig, number) == .notPay, "\(faults)")
            rig.simulator.apply(FaultPlan())
            #expect(await eventually { await Self.state(rig, number) == .success }, "\(faults)")
        }
    }

    @Test("a migration from platform certificates to the public key: notifies signed either way settle, a rotated certificate is fetched and trusted",
          arguments: StoreKind.all)
    func migration(store: StoreKind) async throws {
        let rig = try await Self.start(store, .both)
        defer { Task { await rig.stop() } }
        let first = try #require(rig.simulator.v3PlatformCertificates.first?.serialNumber)
        for number in ["v3-mig-cert", "v3-mig-key", "v3-mig-rotated"] { _ = try await rig.createOrder(number) }
        // In flight together: one notify signed with the platform certificate, one with the public key.
        #expect(rig.simulator.setV3NotifySerial(first))
        try rig.simulator.pay(outTradeNo: "v3-mig-cert")
        #expect(rig.simulator.setV3NotifySerial(V3Setup.publicKeyID))
        try rig.simulator.pay(outTradeNo: "v3-mig-key")
        #expect(await eventually { await Self.state(rig, "v3-mig-cert") == .success })
        #expect(await eventually { await Self.state(rig, "v3-mig-key") == .success })
        // WeChat rotates its certificate: a notify signed with the new one makes the gateway fetch
        // the certificates, vouched for by a key it already trusts.
        let rotated = try #require(rig.simulator.rotateV3Certificate())
        #expect(rig.simulator.setV3NotifySerial(rotated))
        try rig.simulator.pay(outTradeNo: "v3-mig-rotated")
        #expect(await eventually { await Self.state(rig, "v3-mig-rotated") == .success })
        #expect(rig.services.context.v3?.verifier.platformCertificates?.certificates.map(\.serialNumber).contains(rotated) == true)
        #expect((rig.simulator.counters.requests["/v3/certificates"] ?? 0) >= 1)
    }

    @Test("a Wechatpay-* field given twice reaches the notify routes as one joined value no signature check accepts, whichever line is genuine")
    func repeatedSignatureFields() throws {
        let key = RSAPrivateKey.generate()
        let publicKey = try WeChatPayPublicKey(id: V3Setup.publicKeyID, key: key.publicKey)
        let verifier = V3Verifier(publicKey: publicKey)
        let body = Array(#"{"id":"EV-2018022511223320873"}"#.utf8), now = Date()
        let genuine = WeChatPaySigner(key: key, serial: publicKey.id)
            .sign(body, timestamp: Int64(now.timeIntervalSince1970), nonce: "593BEC0C930BF1AF").headers.sorted { $0.key < $1.key }
        func fields(_ lines: [(String, String)]) -> [String: String] {
            GatewayAPI.headerFields(HTTPServerRequest(method: .post, path: "/wechat/v3/notify", headers: HTTPHeaders(lines), body: body))
        }
        #expect(throws: Never.self) { try verifier.verify(headers: fields(genuine), body: body, now: now) }
        for repeated in ["Wechatpay-Signature", "Wechatpay-Timestamp", "Wechatpay-Nonce", "Wechatpay-Serial"] {
            let value = try #require(genuine.first { $0.key == repeated }?.value)
            for second in ["bogus", value] {
                for order in [[second, value], [value, second]] {
                    var lines = genuine.filter { $0.key != repeated }.map { ($0.key, $0.value) }
                    lines += order.map { (repeated, $0) }
                    #expect(fields(lines)[repeated] == order.joined(separator: ", "))
                    #expect(throws: WeChatPayV3Error.self, "\(repeated): \(order)") {
                        try verifier.verify(headers: fields(lines), body: body, now: now)
                    }
                }
            }
        }
    }

    @Test("the notifies a certificate rotation sends while the new certificate is being fetched wait for it: none is refused for its serial",
          arguments: StoreKind.all)
    func notifiesDuringACertificateDownload(store: StoreKind) async throws {
        let rig = try await Self.start(store, .certificates)
        defer { Task { await rig.stop() } }
        let numbers = (1...6).map { "v3-rot-\($0)" }
        for number in numbers { _ = try await rig.createOrder(number) }
        let rotated = try #require(rig.simulator.rotateV3Certificate())
        #expect(rig.simulator.setV3NotifySerial(rotated))
        // The download takes long enough for every notify (sent side by side) to come while it runs.
        rig.simulator.apply(FaultPlan(endpoints: [PlatformCertificateDownload.path: EndpointFaults(latency: 0.5)]))
        let downloads = rig.simulator.counters.requests[PlatformCertificateDownload.path] ?? 0
        for number in numbers { try rig.simulator.pay(outTradeNo: number) }
        for number in numbers { #expect(await eventually { await Self.state(rig, number) == .success }, "\(number)") }
        // Counted by the gateway, whatever the simulator's own timeouts did under load.
        #expect(rig.metrics.counter("wxpay_notifies_total", ["outcome": "rejected", "reason": "unknown_serial"]) == 0)
        #expect((rig.simulator.counters.requests[PlatformCertificateDownload.path] ?? 0) > downloads)
    }

    @Test("a day's v3 bill is downloaded, checked against its SHA-1 and reconciled: a payment whose notify was lost is settled",
          arguments: StoreKind.all, [V3Setup.KeyMode.publicKey, .certificates])
    func bill(store: StoreKind, mode: V3Setup.KeyMode) async throws {
        let rig = try await Self.start(store, mode)
        defer { Task { await rig.stop() } }
        let secondOfDay = (Int(rig.clock.now().timeIntervalSince1970) + BeijingTime.offsetSeconds) % 86400
        if secondOfDay > 86400 - 900 { rig.clock.advance(by: 1200) }
        let paymentDay = rig.clock.now()
        let dayStart = try #require(BeijingTime.parseDay(BeijingTime.formatDay(paymentDay)))
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        _ = try await rig.createOrder("v3-bill-0001")
        try rig.simulator.pay(outTradeNo: "v3-bill-0001")
        #expect(await Self.state(rig, "v3-bill-0001") == .notPay)
        rig.clock.advance(by: (dayStart + 86400 + 10 * 3600 + 60).timeIntervalSince(rig.clock.now()))
        let report = try await BillReconciler(services: rig.services).reconcile(day: BillReconcilerTests.day(paymentDay))
        #expect(await Self.state(rig, "v3-bill-0001") == .success, "\(report.render())")
        #expect(rig.simulator.counters.requests["/v3/bill/tradebill"] == 1)
        #expect(rig.simulator.counters.requests["/v3/billdownload/file"] == 1)
    }
}
