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

/// A refund is never lost: a dropped notify, WeChat failing, or a crash before WeChat was asked
/// all end in one final state through refundquery, and every resend repeats the same refund.
struct RefundRecoveryTests {
    /// A sweeper with a long lease, so a slow machine never runs out of it mid-sweep.
    static func reconciler(_ rig: RefundRig) -> Reconciler {
        Reconciler(services: rig.gateway.services, configuration: .init(interval: 30, after: 3600))
    }

    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func aRefundWhoseNotifyWasDroppedIsFinishedByRefundquery(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rc-drop")
        #expect(try await rig.refund("rc-drop", amount: 990, number: "rc-drop-r1").status == 201)
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        try rig.simulator.completeRefund(outRefundNo: "rc-drop-r1")
        #expect(await eventually { rig.simulator.notifyHistory.contains { $0.kind == .refund && $0.dropped } })
        #expect(try await rig.store.refund("rc-drop-r1")?.state == .processing)

        let report = await Self.reconciler(rig).sweep()
        #expect(report.refundsClaimed == 1 && report.refundsSettled == 1)
        let refund = try #require(try await rig.store.refund("rc-drop-r1"))
        #expect(refund.state == .success && refund.succeededAt != nil)
        #expect(try await rig.store.order("rc-drop")?.state == .refund)
        #expect(try await rig.events("rc-drop", type: "refund.succeeded").count == 1)
        let changes = try await rig.store.events("rc-drop").filter { $0.kind == "refund_state_changed" }
        #expect(changes.map(\.detail) == ["rc-drop-r1: PROCESSING -> SUCCESS: reconcile: refundquery"])
        #expect(rig.metrics.counter("wxpay_reconcile_refunds_settled_total") == 1)
        // Settled refunds are not asked about again.
        #expect(await Self.reconciler(rig).sweep().refundsClaimed == 0)
    }

    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func systemErrorsAreRetriedWithTheSameNumberAndParametersAndAFreshNonce(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rc-syserr", amount: 700)
        rig.simulator.apply(FaultPlan(endpoints: ["/secapi/pay/refund": EndpointFaults(systemErrorRate: 1)]))
        let answer = try await rig.refund("rc-syserr", amount: 700, number: "rc-syserr-r1")
        // WeChat kept answering SYSTEMERROR: still recorded, PROCESSING, for the reconciler.
        #expect(answer.status == 201)
        #expect(answer.json["state"] as? String == "PROCESSING")
        #expect(answer.json["refund_id"] is NSNull)
        let log = try #require(rig.simulator.refundRequests["rc-syserr-r1"])
        #expect(log.requests == Upstream.attempts)
        #expect(log.parameterSets.count == 1)
        #expect(rig.simulator.counters.reusedNonces == 0)
        // The first attempt took effect at WeChat (the fault answers after it): refundquery finds
        // it, the refund keeps its one number, and it ends SUCCESS.
        rig.simulator.apply(FaultPlan())
        #expect(await Self.reconciler(rig).sweep().refundsChecked == 1)
        #expect(try await rig.store.refund("rc-syserr-r1")?.refundID != nil)
        try rig.simulator.completeRefund(outRefundNo: "rc-syserr-r1")
        #expect(await rig.refund("rc-syserr-r1", becomes: .success))
        #expect(rig.simulator.order("rc-syserr")?.refunds.count == 1)
        #expect(rig.simulator.refundRequests["rc-syserr-r1"]?.parameterSets.count == 1)
    }

    /// A request cancelled while WeChat holds its refund (the gateway stopping answers what it
    /// can at the end of its grace period) answers the refund as recorded: 201 PROCESSING, never a
    /// "shutting down" that a client would read as "nothing happened" and repeat without the number.
    @Test(arguments: StoreKind.all)
    func aRefundRequestCancelledWhileWeChatHoldsItAnswersTheRecordedRefundProcessing(store: StoreKind) async throws {
        let rig = try await RefundRig.start(.inProcess, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rc-cancel", amount: 700)
        rig.simulator.apply(FaultPlan(endpoints: ["/secapi/pay/refund": EndpointFaults(timeoutRate: 1, timeoutSeconds: 60)]))
        let request = Task {
            try await rig.services.refunds.request(RefundInput(amount: 700, reason: "stopping", outRefundNo: "rc-cancel-r1"),
                                                   outTradeNo: "rc-cancel")
        }
        #expect(await eventually { (try? await rig.store.refund("rc-cancel-r1")) != nil })
        request.cancel()
        let answer = try await request.value
        #expect(answer.created)
        #expect(answer.state == "PROCESSING")
        #expect(try await rig.store.refund("rc-cancel-r1")?.state == .processing)
        rig.simulator.apply(FaultPlan())
    }

    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func aRefundRecordedButNeverSentIsSentAgainUnderItsNumberByTheReconciler(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rc-crash", amount: 600)
        // What a crash right after recording leaves: the refund, reserved, that WeChat never saw.
        let created = try await rig.store.createRefund(
            NewRefund(outRefundNo: "rc-crash-r1", outTradeNo: "rc-crash", amount: 250, reason: "crash",
                      notifyURL: rig.refunds.context.callbacks.refund, parametersDigest: RefundInput(amount: 250, reason: "crash").parametersDigest,
                      createdAt: rig.clock.now()),
            maximumPerOrder: 50, event: NewOrderEvent(kind: "refund_requested", detail: "rc-crash-r1: 250 fen", at: rig.clock.now()))
        guard case .created = created else {
            Issue.record("not created: \(created)")
            return
        }
        let report = await Self.reconciler(rig).sweep()
        #expect(report.refundsChecked == 1)
        let sent = try #require(rig.simulator.order("rc-crash")?.refunds.first)
        #expect(sent.outRefundNo == "rc-crash-r1" && sent.refundFee == 250)
        #expect(try await rig.store.refund("rc-crash-r1")?.refundID == sent.refundID)
        let events = try await rig.store.events("rc-crash").map(\.kind)
        #expect(events.contains("reconcile") && events.contains("refund_accepted"))
        // A replay of the client's request meanwhile is the same refund, not a second one.
        #expect(try await rig.refund("rc-crash", amount: 250, reason: "crash", number: "rc-crash-r1").status == 200)
        try rig.simulator.completeRefund(outRefundNo: "rc-crash-r1")
        #expect(await rig.refund("rc-crash-r1", becomes: .success))
        #expect(rig.simulator.order("rc-crash")?.refunds.count == 1)
    }

    @Test func whenWeChatCannotBeReachedTheRefundIsAnsweredProcessingAndFinishedLater() async throws {
        let rig = try await RefundRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("rc-reset")
        rig.simulator.apply(FaultPlan(endpoints: ["/secapi/pay/refund": EndpointFaults(resetRate: 1)]))
        let answer = try await rig.refund("rc-reset", amount: 100, number: "rc-reset-r1")
        #expect(answer.status == 201 && answer.json["state"] as? String == "PROCESSING")
        #expect(try await rig.store.events("rc-reset").contains { $0.kind == "refund_failed" })
        rig.simulator.apply(FaultPlan())
        _ = await Self.reconciler(rig).sweep()
        try rig.simulator.completeRefund(outRefundNo: "rc-reset-r1", status: "REFUNDCLOSE")
        #expect(await rig.refund("rc-reset-r1", becomes: .refundClose))
        // Closed: the reservation is released.
        #expect(try await rig.refund("rc-reset", amount: 990, number: "rc-reset-r2").status == 201)
    }

    @Test func refundEventsReachTheWebhookSignedWithTheRefundAndItsOrder() async throws {
        let rig = try await RefundRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        let receiver = try await WebhookReceiver.start()
        defer { Task { await receiver.stop() } }
        try await rig.paidOrder("rc-hook", amount: 500)
        _ = try await rig.refund("rc-hook", amount: 200, number: "rc-hook-r1")
        try rig.simulator.completeRefund(outRefundNo: "rc-hook-r1")
        #expect(await rig.refund("rc-hook-r1", becomes: .success))
        let event = try #require(try await rig.events("rc-hook", type: "refund.succeeded").first)
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(event.payload.utf8)) as? [String: Any])
        #expect(payload["type"] as? String == "refund.succeeded" && payload["id"] as? String == event.id)
        let data = try #require(payload["data"] as? [String: Any])
        #expect(data["out_refund_no"] as? String == "rc-hook-r1" && data["out_trade_no"] as? String == "rc-hook")
        #expect(data["amount"] as? Int == 200 && data["state"] as? String == "SUCCESS")
        #expect(data["refund_id"] as? String != nil && data["succeeded_at"] as? String != nil)
        let client = try HTTPClient()
        let dispatcher = FulfilmentDispatcher(
            store: rig.store, configuration: .init(url: receiver.url, secret: WebhookReceiver.secret, timeout: 5),
            transport: HTTPFulfilmentTransport(client: client))
        _ = await dispatcher.deliverDue()
        await client.shutdown()
        let types = receiver.deliveries.filter(\.signatureValid).compactMap { $0.json["type"] as? String }
        #expect(types.sorted() == ["order.paid", "refund.succeeded"])
    }
}
