// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

struct OrderFlowTests {
    static let body = #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"course-0001","user_id":"u-42"}"#

    @Test(arguments: StoreKind.all) func creatingAnOrderAnswersSignedAppParametersForTheAndroidSDK(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        let (created, order) = try await harness.create(Self.body)
        #expect(created)
        #expect(order.string("state") == "NOTPAY")
        let params = try #require(order.object("app_params"))
        #expect(params.string("packageValue") == "Sign=WXPay")
        #expect(params.string("prepayId") == order.string("prepay_id"))
        #expect(params.string("signType") == "HMAC-SHA256")
        #expect(params.string("timeStamp")?.count == 10)
        var signed: Fields = [
            "appid": params.string("appId")!, "partnerid": params.string("partnerId")!,
            "prepayid": params.string("prepayId")!, "package": "Sign=WXPay",
            "noncestr": params.string("nonceStr")!, "timestamp": params.string("timeStamp")!,
        ]
        signed["sign"] = params.string("sign")
        try Signer(key: APIKey(GatewayConfiguration.demoKey)).verify(signed, expected: .hmacSHA256)
        #expect(harness.simulator.order("course-0001")?.state == "NOTPAY")
    }

    @Test(arguments: StoreKind.all) func anIdenticalReplayAnswersTheSameOrderAndAChangedOneConflicts(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        let first = try await harness.create(Self.body)
        let second = try await harness.create(Self.body)
        #expect(!second.created)
        #expect(NSDictionary(dictionary: first.body) == NSDictionary(dictionary: second.body))
        await #expect(throws: APIError.self) {
            _ = try await harness.create(Self.body.replacingOccurrences(of: "990", with: "1"))
        }
        #expect(harness.simulator.counters.requests["/pay/unifiedorder"] == 1)
    }

    @Test(arguments: StoreKind.all) func concurrentIdenticalCreatesMakeOneOrderAndOneUpstreamCall(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        let results = await withTaskGroup(of: Bool?.self) { group in
            for _ in 0..<50 { group.addTask { try? await harness.create(Self.body).created } }
            var results: [Bool?] = []
            for await result in group { results.append(result) }
            return results
        }
        #expect(results.filter { $0 == true }.count == 1)
        #expect(results.filter { $0 == false }.count == 49)
        #expect(harness.simulator.counters.requests["/pay/unifiedorder"] == 1)
    }

    @Test(arguments: StoreKind.all) func aPaymentNotifySettlesTheOrderExactlyOnce(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body)
        harness.simulator.apply(FaultPlan(notify: NotifyFaults(duplicateRate: 1, duplicateCopies: 8)))
        try harness.simulator.pay(outTradeNo: "course-0001")
        #expect(await eventually { (try? await harness.order("course-0001"))?.string("state") == "SUCCESS" })
        #expect(await eventually { harness.simulator.pendingNotifies == 0 })
        let events = try await harness.store.events("course-0001")
        #expect(events.filter { $0.kind == "state_changed" && $0.detail.contains("SUCCESS") }.count == 1)
        #expect(try await harness.store.outboxEvents("course-0001").count == 1)
    }

    @Test(arguments: StoreKind.all) func aWaitingQueryFindsAPaymentWhoseNotifyWasDropped(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body)
        harness.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        try harness.simulator.pay(outTradeNo: "course-0001")
        // The wait is long so that a loaded machine still fits its first orderquery in it.
        let order = try await harness.order("course-0001", wait: 120)
        #expect(order.string("state") == "SUCCESS")
        #expect(order["final"] as? Bool == true)
        #expect(order.string("transaction_id") != nil)
    }

    @Test(arguments: StoreKind.all) func aNotifyWakesAWaitingQueryBeforeItsNextPoll(store: StoreKind) async throws {
        // The next poll is a minute away and the wait's deadline ten minutes: only the notify's wake-up can
        // answer SUCCESS with WeChat asked once (the wait's first orderquery). No clock is compared,
        // so a loaded machine cannot fail it; a lost wake-up shows as the poll's second orderquery.
        let harness = try await GatewayRig.start(.inProcess, store: store, pollInterval: 60)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body)
        async let waited = harness.order("course-0001", wait: 600)
        let asked = await eventually(timeout: .seconds(120)) { harness.simulator.counters.requests["/pay/orderquery"] == 1 }
        #expect(asked)
        try harness.simulator.pay(outTradeNo: "course-0001")
        let order = try await waited
        #expect(order.string("state") == "SUCCESS")
        #expect(harness.simulator.counters.requests["/pay/orderquery"] == 1)
    }

    @Test(arguments: StoreKind.all) func aWaitEndsAtItsDeadlineWithTheLatestKnownState(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body)
        let started = ContinuousClock.now
        let order = try await harness.order("course-0001", wait: 1)
        #expect(order.string("state") == "NOTPAY")
        #expect(order["final"] as? Bool == false)
        #expect(ContinuousClock.now - started >= .seconds(1))
    }

    @Test(arguments: StoreKind.all) func aSystemErrorIsRetriedWithIdenticalParameters(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        harness.simulator.apply(FaultPlan(endpoints: ["/pay/unifiedorder": EndpointFaults(systemErrorRate: 0.5)]))
        var unavailable: [String] = []
        for n in 0..<10 {
            let body = Self.body.replacingOccurrences(of: "course-0001", with: "course-00\(10 + n)")
            do {
                _ = try await harness.create(body)
            } catch {
                // Three SYSTEMERRORs in a row: a typed 503 the client may retry safely.
                #expect(error.code == "upstream_unavailable")
                #expect(error.status == 503)
                unavailable.append(body)
            }
        }
        #expect(unavailable.count < 10)
        harness.simulator.apply(FaultPlan())
        for body in unavailable { _ = try await harness.create(body) }
        let requests = harness.simulator.requests.filter { $0.path == "/pay/unifiedorder" }
        let byOrder = Dictionary(grouping: requests, by: { $0.fields["out_trade_no"]! })
        for (_, attempts) in byOrder {
            let parameters = Set(attempts.map { request -> [String] in
                request.fields.elements.filter { !["nonce_str", "sign"].contains($0.name) }.map { "\($0.name)=\($0.value)" }
            })
            #expect(parameters.count == 1)
        }
        #expect(harness.simulator.counters.reusedNonces == 0)
        #expect(byOrder.count == 10)
        #expect(harness.simulator.counters.requests["/pay/unifiedorder"]! > 10)
    }

    @Test(arguments: StoreKind.all) func closingInsideFiveMinutesIsRefusedWithRetryAfter(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body)
        do {
            _ = try await harness.services.closing.close("course-0001")
            Issue.record("closed inside the window")
        } catch {
            #expect(error.code == "close_too_early")
            #expect((error.retryAfter ?? 0) > 0 && (error.retryAfter ?? 0) <= 300)
        }
        harness.clock.advance(by: 301)
        let closed = GatewayRig.object(try await harness.services.closing.close("course-0001"))
        #expect(closed.string("state") == "CLOSED")
    }

    @Test(arguments: StoreKind.all) func closingAnOrderWeChatSaysIsPaidSettlesItAsPaid(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        _ = try await harness.create(Self.body)
        harness.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        try harness.simulator.pay(outTradeNo: "course-0001")
        harness.clock.advance(by: 301)
        let closed = GatewayRig.object(try await harness.services.closing.close("course-0001"))
        #expect(closed.string("state") == "SUCCESS")
    }
}
