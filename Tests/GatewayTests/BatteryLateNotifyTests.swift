// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import Storage
import Testing
import WeChatPay
import WeChatPaySimulator

/// reliability.md T9's first case, which the script cannot reach without waiting WeChat's 5-minute
/// close window in real time: here the gateway's clock is the simulator's and is moved by hand.
struct BatteryLateNotifyTests {
    @Test func aNotifyAfterALocalCloseSettlesPaidFlaggedAndOnceHoweverOftenItArrives() async throws {
        let harness = try await GatewayHarness.make()
        _ = try await harness.create(
            #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"late-0001"}"#)
        harness.clock.advance(by: 301)
        let closed = GatewayHarness.object(try await harness.service.close("late-0001"))
        #expect(closed.string("state") == "CLOSED")

        // The payment raced the close at WeChat; its notify comes afterwards, and again on retry.
        let notify = Battery.genuineNotify(outTradeNo: "late-0001", transactionID: "4200000000202611309999999999",
                                           totalFee: 990, nonce: "afterclose")
        for _ in 0..<3 {
            #expect(String(decoding: await harness.service.handleNotify(notify), as: UTF8.self).contains(Battery.acknowledged))
        }
        let order = try #require(try await harness.store.order("late-0001"))
        #expect(order.state == .success)
        #expect(order.flags.contains(.paidAfterClose))
        #expect(try await Battery.transitionsIntoSuccess(harness.store, "late-0001") == 1)
        #expect(try await harness.store.outboxEvents("late-0001").count == 1)
        await harness.shutdown()
    }
}
