// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// reliability.md T9's first case at reduced scale (the script's full version waits WeChat's
/// 5-minute close window in real time): here the gateway's clock is the simulator's and is moved by hand.
struct BatteryLateNotifyTests {
    @Test(arguments: StoreKind.all) func aNotifyAfterALocalCloseSettlesPaidFlaggedAndOnceHoweverOftenItArrives(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        _ = try await harness.create(
            #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"late-0001"}"#)
        harness.clock.advance(by: 301)
        let closed = GatewayRig.object(try await harness.services.closing.close("late-0001"))
        #expect(closed.string("state") == "CLOSED")

        // The payment raced the close at WeChat; its notify comes afterwards, and again on retry.
        let notify = Battery.genuineNotify(outTradeNo: "late-0001", transactionID: "4200000000202611309999999999",
                                           totalFee: 990, nonce: "afterclose")
        for _ in 0..<3 {
            #expect(String(decoding: await harness.services.notifies.handleNotify(notify), as: UTF8.self).contains(Battery.acknowledged))
        }
        let order = try #require(try await harness.store.order("late-0001"))
        #expect(order.state == .success)
        #expect(order.flags.contains(.paidAfterClose))
        #expect(try await Battery.transitionsIntoSuccess(harness.store, "late-0001") == 1)
        let events = try await harness.store.outboxEvents("late-0001")
        #expect(events.count == 1)
        // The business backend is told too, not only support.
        #expect(events.first?.payload.contains(#""paid_after_close":true"#) == true)
        await harness.stop()
    }

    /// The scripted T9's second path: the reconciler closes an expired order with closeorder, then
    /// WeChat lets the payment that raced the close through and sends its own notify, three times.
    @Test(arguments: StoreKind.all) func anExpiredOrderClosedByTheReconcilerThenPaidAtWeChatSettlesFlaggedAndOnce(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        _ = try await harness.create(
            #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"late-0002","expires_in":300}"#)
        harness.clock.advance(by: 301)
        let report = await Reconciler(services: harness.services,
                                      configuration: Reconciler.Configuration(interval: 30, after: 0.5)).sweep()
        #expect(report.closed == 1)
        #expect(try await harness.store.order("late-0002")?.state == .closed)

        harness.simulator.apply(FaultPlan(notify: NotifyFaults(duplicateRate: 1, duplicateCopies: 3)))
        let paid = try harness.simulator.pay(outTradeNo: "late-0002", afterClose: true)
        #expect(paid.state == "SUCCESS")
        let settled = await eventually {
            (try? await harness.store.order("late-0002"))?.state == .success
                && harness.simulator.notifyHistory.filter(\.acknowledged).count >= 1
        }
        #expect(settled)
        let order = try #require(try await harness.store.order("late-0002"))
        #expect(order.flags.contains(.paidAfterClose))
        #expect(order.transactionID == paid.transactionID)
        #expect(try await Battery.transitionsIntoSuccess(harness.store, "late-0002") == 1)
        #expect(try await harness.store.outboxEvents("late-0002").count == 1)
        let changes = try await harness.store.events("late-0002").filter { $0.kind == OrderEvent.stateChangedKind }
        #expect(changes.map(\.detail).first?.hasPrefix("NOTPAY -> CLOSED: reconcile: closeorder (expired)") == true)
        await harness.stop()
    }
}
