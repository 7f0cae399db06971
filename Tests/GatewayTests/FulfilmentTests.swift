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

struct FulfilmentTests {
    static func configuration(_ receiver: WebhookReceiver) -> FulfilmentDispatcher.Configuration {
        .init(url: receiver.url, secret: WebhookReceiver.secret, initialBackoff: 0.05, maxBackoff: 0.2,
              pollInterval: 0.05, timeout: 5)
    }

    static func paidOrder(_ harness: GatewayRig, _ outTradeNo: String) async throws -> OutboxEvent {
        _ = try await harness.create(
            #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)"}"#)
        try harness.simulator.pay(outTradeNo: outTradeNo)
        let paid = await eventually { (try? await harness.store.outboxEvents(outTradeNo).count) == 1 }
        #expect(paid)
        return try #require(try await harness.store.outboxEvents(outTradeNo).first)
    }

    // MARK: - Signature

    @Test func aSignedPayloadVerifiesAndATamperedOneOrAStaleOneDoesNot() throws {
        let body = Array(#"{"id":"evt_1","type":"order.paid"}"#.utf8)
        let now = Date(timeIntervalSince1970: 1_764_480_000)
        let header = WebhookSignature.header(payload: body, secret: "s3cret-s3cret-s3cret", timestamp: 1_764_480_000)
        #expect(header.hasPrefix("t=1764480000,v1="))
        #expect(header.count == "t=1764480000,v1=".count + 64)
        try WebhookSignature.verify(header: header, payload: body, secrets: ["s3cret-s3cret-s3cret"], now: now)
        // Key rotation: any configured secret may match.
        try WebhookSignature.verify(header: header, payload: body, secrets: ["old-one", "s3cret-s3cret-s3cret"], now: now)
        #expect(throws: WebhookSignatureError.noMatchingSignature) {
            try WebhookSignature.verify(header: header, payload: body + [0x20], secrets: ["s3cret-s3cret-s3cret"], now: now)
        }
        #expect(throws: WebhookSignatureError.noMatchingSignature) {
            try WebhookSignature.verify(header: header, payload: body, secrets: ["another-secret"], now: now)
        }
        #expect(throws: WebhookSignatureError.timestampOutsideTolerance) {
            try WebhookSignature.verify(header: header, payload: body, secrets: ["s3cret-s3cret-s3cret"],
                                        now: now.addingTimeInterval(301))
        }
        for malformed in [nil, "", "v1=00", "t=1764480000", "t=abc,v1=00", "t=1764480000,v1=zz"] as [String?] {
            #expect(throws: WebhookSignatureError.malformedHeader) {
                try WebhookSignature.verify(header: malformed, payload: body, secrets: ["s3cret-s3cret-s3cret"], now: now)
            }
        }
    }

    @Test func theSignatureIsHMACSHA256OfTheTimestampDotBody() {
        let signature = WebhookSignature.signature(payload: Array("ya want for nothing?".utf8), secret: "Jefe",
                                                   timestamp: 0)
        // HMAC-SHA256("Jefe", "0.ya want for nothing?") computed with Python's hmac module.
        #expect(signature == "385572a2fb20471e3100a73138e1457c1c4c0f45f74f7f84d916b1664669f949")
        #expect(ConstantTime.equal([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2]))
    }

    // MARK: - Delivery

    @Test(arguments: StoreKind.all) func theOutboxRedeliversAfterTheReceiverWasDown(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        let receiver = try await WebhookReceiver.start(answering: 500)
        let client = try HTTPClient()
        defer { Task { await receiver.stop(); await client.shutdown() } }
        let event = try await Self.paidOrder(harness, "hook-0001")

        let dispatcher = FulfilmentDispatcher(store: harness.store, configuration: Self.configuration(receiver),
                                              transport: HTTPFulfilmentTransport(client: client), metrics: harness.metrics)
        let delivering = Task { await dispatcher.run() }
        defer { delivering.cancel() }
        #expect(await eventually { receiver.deliveries.count >= 2 })
        #expect(try await harness.store.outboxEvent(id: event.id)?.deliveredAt == nil)
        receiver.answer(200)
        #expect(await eventually { (try? await harness.store.outboxEvent(id: event.id))??.deliveredAt != nil })
        // The delivery's bookkeeping (timeline, metric) follows the store's acknowledgement.
        #expect(await eventually {
            harness.metrics.counter("wxpay_outbox_deliveries_total", ["outcome": "delivered"]) == 1
        })

        #expect(receiver.acknowledged == [event.id: 1])
        #expect(receiver.deliveries.allSatisfy { $0.signatureValid })
        #expect(receiver.deliveries.allSatisfy { $0.eventID == event.id })
        #expect(receiver.deliveries.last?.json["type"] as? String == "order.paid")
        #expect(receiver.deliveries.last?.json["out_trade_no"] as? String == "hook-0001")
        let stored = try #require(try await harness.store.outboxEvent(id: event.id))
        #expect(stored.attempts >= 2)
        #expect(harness.metrics.counter("wxpay_outbox_deliveries_total", ["outcome": "delivered"]) == 1)
        #expect(harness.metrics.counter("wxpay_outbox_deliveries_total", ["outcome": "failed"]) >= 2)
        let events = try await harness.store.events("hook-0001")
        #expect(events.filter { $0.kind == "fulfilment_delivered" }.count == 1)
    }

    @Test(arguments: StoreKind.all) func deliveryContinuesAfterARestartAndEachEventIsAcknowledgedOnce(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        let receiver = try await WebhookReceiver.start(answering: 200)
        let client = try HTTPClient()
        defer { Task { await receiver.stop(); await client.shutdown() } }
        let transport = HTTPFulfilmentTransport(client: client)
        let first = try await Self.paidOrder(harness, "restart-1")
        let second = try await Self.paidOrder(harness, "restart-2")

        let before = FulfilmentDispatcher(store: harness.store, configuration: Self.configuration(receiver), transport: transport)
        #expect(await before.deliverDue().delivered == 2)
        receiver.answer(500)
        let third = try await Self.paidOrder(harness, "restart-3")
        #expect(await before.deliverDue().failed == 1)

        // The process goes away; a new one opens the same database file.
        await harness.store.close()
        let reopened = try await harness.database.open()
        receiver.answer(200)
        let after = FulfilmentDispatcher(store: reopened, configuration: Self.configuration(receiver), transport: transport)
        let delivering = Task { await after.run() }
        let done = await eventually {
            (try? await reopened.outboxEvent(id: third.id))??.deliveredAt != nil
        }
        // Run a little longer: nothing already acknowledged may be sent again.
        try await Task.sleep(for: .milliseconds(300))
        delivering.cancel()
        _ = await delivering.value
        #expect(done)
        #expect(receiver.acknowledged == [first.id: 1, second.id: 1, third.id: 1])
        for id in [first.id, second.id, third.id] {
            #expect(try await reopened.outboxEvent(id: id)?.deliveredAt != nil)
        }
        await reopened.close()
    }

    @Test(arguments: StoreKind.all) func anEventFailingForADayIsDeadLetteredShownToSupportAndCanBeRedriven(store: StoreKind) async throws {
        let rig = try await GatewayRig.start(.inProcess, store: store)
        let client = try HTTPClient()
        _ = try await rig.createOrder("dead-0001")
        try rig.simulator.pay(outTradeNo: "dead-0001")
        #expect(await eventually { (try? await rig.store.outboxEvents("dead-0001").count) == 1 })
        let event = try #require(try await rig.store.outboxEvents("dead-0001").first)
        // The dispatcher's clock starts after the event was written, and the receiver shares it.
        let clock = ManualClock(Date().addingTimeInterval(1))
        let receiver = try await WebhookReceiver.start(answering: 500, now: { clock.now() })
        defer { Task { await rig.stop(); await receiver.stop(); await client.shutdown() } }

        let metrics = MetricsRegistry()
        var configuration = Self.configuration(receiver)
        configuration.minimumAttempts = 2
        let dispatcher = FulfilmentDispatcher(store: rig.store, configuration: configuration,
                                              transport: HTTPFulfilmentTransport(client: client), metrics: metrics,
                                              now: { clock.now() }, jitter: { 1 })
        #expect(await dispatcher.deliverDue().failed == 1)
        // Still failing a day later: given up on.
        clock.advance(by: 25 * 3600)
        let pass = await dispatcher.deliverDue()
        #expect(pass.deadLettered == 1)
        #expect(try await rig.store.outboxEvent(id: event.id)?.deadAt != nil)
        await dispatcher.refreshGauges()
        #expect(metrics.gauge("wxpay_outbox_dead") == 1)
        #expect(metrics.counter("wxpay_outbox_deliveries_total", ["outcome": "dead"]) == 1)
        // A dead event is not retried on its own.
        clock.advance(by: 3600)
        #expect(await dispatcher.deliverDue() == FulfilmentDispatcher.Pass())

        let lookup = try await rig.send(.get, "/v1/support/orders?out_trade_no=dead-0001", token: GatewayRig.support)
        let order = try #require((lookup.json["orders"] as? [[String: Any]])?.first)
        let outbox = try #require(order["outbox"] as? [[String: Any]])
        #expect(outbox.count == 1)
        #expect(outbox.first?["id"] as? String == event.id)
        #expect(outbox.first?["status"] as? String == "dead")
        #expect(outbox.first?["last_error"] as? String == "http_500")

        let forbidden = try await rig.send(.post, "/v1/support/outbox/\(event.id)/redrive", token: GatewayRig.client)
        #expect(forbidden.status == 403)
        let unknown = try await rig.send(.post, "/v1/support/outbox/evt_nope/redrive", token: GatewayRig.support)
        #expect(unknown.status == 404)
        #expect(unknown.error?["code"] as? String == "outbox_event_not_found")
        // Support clicking five times at once: one redrive; each refusal says what the event is
        // now (pending), not what it was when read (dead).
        let answers = try await withThrowingTaskGroup(of: GatewayRig.Response.self) { group in
            for _ in 0..<5 {
                group.addTask { try await rig.send(.post, "/v1/support/outbox/\(event.id)/redrive", token: GatewayRig.support) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let redrives = answers.filter { $0.status == 200 }
        #expect(redrives.count == 1)
        let redriven = try #require(redrives.first)
        #expect(redriven.json["status"] as? String == "pending")
        for refused in answers where refused.status != 200 {
            #expect(refused.status == 409 && refused.error?["code"] as? String == "outbox_event_not_dead", "\(refused.json)")
            let message = refused.error?["message"] as? String ?? ""
            #expect(!message.contains("this one is dead") && message.contains("this one is pending"), "\(message)")
        }
        let twice = try await rig.send(.post, "/v1/support/outbox/\(event.id)/redrive", token: GatewayRig.support)
        #expect(twice.status == 409)
        #expect(twice.error?["code"] as? String == "outbox_event_not_dead")

        receiver.answer(200)
        clock.advance(by: 1)
        #expect(await dispatcher.deliverDue().delivered == 1)
        #expect(receiver.acknowledged == [event.id: 1])
        let events = try await rig.store.events("dead-0001")
        #expect(events.map(\.kind).contains("fulfilment_dead"))
        #expect(events.map(\.kind).contains("fulfilment_redriven"))
    }

    @Test(arguments: StoreKind.all) func retriesBackOffExponentiallyWithJitterUpToTheCap(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        func dispatcher(jitter: Double) -> FulfilmentDispatcher {
            FulfilmentDispatcher(store: harness.store, configuration: .init(url: "http://127.0.0.1:9/", secret: "x",
                                                                            initialBackoff: 5, maxBackoff: 3600),
                                 transport: RefusingTransport(), jitter: { jitter })
        }
        // No jitter: the schedule itself, from the minimum doubling to the cap.
        let bottom = dispatcher(jitter: 0)
        #expect(bottom.backoff(attempts: 1) == 5)
        #expect(bottom.backoff(attempts: 2) == 10)
        #expect(bottom.backoff(attempts: 5) == 80)
        #expect(bottom.backoff(attempts: 30) == 3600)
        // Full jitter lengthens a delay by half, never past the cap, so no retry comes before the minimum.
        let top = dispatcher(jitter: 1)
        #expect(top.backoff(attempts: 1) == 7.5)
        #expect(top.backoff(attempts: 5) == 120)
        #expect(top.backoff(attempts: 12) == 3600)
        #expect(top.backoff(attempts: 30) == 3600)
    }
}

/// A receiver that is never reachable.
struct RefusingTransport: FulfilmentTransport {
    struct Refused: Error {}
    func post(url: String, headers: [String: String], body: [UInt8], timeout: Duration) async throws -> Int {
        throw Refused()
    }
}
