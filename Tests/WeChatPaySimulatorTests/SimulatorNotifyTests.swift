// SPDX-License-Identifier: Apache-2.0
import Foundation
import SimulatorHarnessSupport
import TestSupport
import Testing
import WeChatPay
@testable import WeChatPaySimulator

struct SimulatorNotifyTests {
    @Test func aPaymentNotifyIsSignedWithTheOrdersAlgorithmAndCarriesNoSignTypeForHMAC() async throws {
        let harness = SimulatorHarness()
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("notify-0001", fee: 1234), signType: .hmacSHA256)
        try await harness.withNotifyLoop {
            let paid = try harness.simulator.pay(outTradeNo: "notify-0001")
            #expect(await eventually { harness.received.count == 1 })
            let notify = try #require(harness.received.all.first)
            #expect(notify["sign_type"] == nil)
            #expect(notify["sign"]?.count == 64)
            try harness.signer.verify(notify, expected: .hmacSHA256)
            #expect(notify["out_trade_no"] == "notify-0001")
            #expect(notify["total_fee"] == "1234")
            #expect(notify["transaction_id"] == paid.transactionID)
            #expect(notify["result_code"] == "SUCCESS")
            #expect(notify["appid"] == SimulatorHarness.appID)
        }
    }

    @Test func notifiesAreRetriedOnWeChatsScheduleUntilTheMerchantAnswersSuccess() async throws {
        // The merchant answers FAIL to every notify; simulated time only moves when the test moves it.
        let harness = SimulatorHarness(reply: { _ in Array("<xml><return_code>FAIL</return_code></xml>".utf8) })
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("retry-0001"))
        let start = harness.clock.now()
        try await harness.withNotifyLoop {
            try harness.simulator.pay(outTradeNo: "retry-0001")
            let schedule = SimulatorConfiguration.wechatNotifyRetryIntervals
            for attempt in 1...(schedule.count + 1) {
                #expect(await eventually { harness.simulator.notifyHistory.count == attempt })
                if attempt <= schedule.count { harness.clock.advance(by: schedule[attempt - 1]) }
            }
            harness.clock.advance(by: 86_400)
            try await Task.sleep(for: .milliseconds(100))
            let history = harness.simulator.notifyHistory
            #expect(history.count == 16)
            #expect(history.allSatisfy { !$0.acknowledged })
            let offsets = history.map { Int($0.at.timeIntervalSince(start).rounded()) }
            #expect(offsets == [0, 15, 30, 60, 240, 840, 2040, 3840, 5640, 7440, 11040, 21840, 32640, 43440, 65040, 86640])
            #expect(harness.simulator.notifies.abandoned == 1)
        }
    }

    @Test func retriesStopOnceTheMerchantAnswersSuccess() async throws {
        let harness = SimulatorHarness(reply: { _ in nil })  // unreachable merchant
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("retry-0002"))
        try await harness.withNotifyLoop {
            try harness.simulator.pay(outTradeNo: "retry-0002")
            #expect(await eventually { harness.simulator.notifyHistory.count == 1 })
            harness.clock.advance(by: 15)
            #expect(await eventually { harness.simulator.notifyHistory.count == 2 })
            #expect(harness.simulator.notifies.pending == 1)
        }
        let acknowledging = SimulatorHarness()
        _ = acknowledging.call("/pay/unifiedorder", SimulatorHarness.order("retry-0003"))
        try await acknowledging.withNotifyLoop {
            try acknowledging.simulator.pay(outTradeNo: "retry-0003")
            #expect(await eventually { acknowledging.simulator.notifies.pending == 0 })
            acknowledging.clock.advance(by: 86_400)
            try await Task.sleep(for: .milliseconds(50))
            #expect(acknowledging.simulator.notifyHistory.count == 1)
            #expect(acknowledging.simulator.notifyHistory.first?.acknowledged == true)
        }
    }

    @Test func droppedNotifiesNeverReachTheMerchant() async throws {
        let harness = SimulatorHarness()
        harness.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("drop-0001"))
        try await harness.withNotifyLoop {
            try harness.simulator.pay(outTradeNo: "drop-0001")
            #expect(await eventually { harness.simulator.notifyHistory.count == 1 })
            #expect(harness.received.count == 0)
            #expect(harness.simulator.notifyHistory.first?.dropped == true)
        }
        // The payment itself happened: the merchant finds it by asking.
        #expect(harness.call("/pay/orderquery", ["out_trade_no": "drop-0001"])["trade_state"] == "SUCCESS")
    }

    @Test func duplicatedNotifiesArriveSeveralTimesAtOnce() async throws {
        let harness = SimulatorHarness()
        harness.simulator.apply(FaultPlan(notify: NotifyFaults(duplicateRate: 1, duplicateCopies: 5)))
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("dup-0001"))
        try await harness.withNotifyLoop {
            try harness.simulator.pay(outTradeNo: "dup-0001")
            #expect(await eventually { harness.received.count == 5 })
            #expect(Set(harness.received.all.map { $0["sign"] }).count == 1)
        }
    }

    @Test func delayedNotifiesWaitForSimulatedTime() async throws {
        let harness = SimulatorHarness()
        harness.simulator.apply(FaultPlan(notify: NotifyFaults(delay: 60)))
        _ = harness.call("/pay/unifiedorder", SimulatorHarness.order("late-0001"))
        try await harness.withNotifyLoop {
            try harness.simulator.pay(outTradeNo: "late-0001")
            try await Task.sleep(for: .milliseconds(50))
            #expect(harness.received.count == 0)
            harness.clock.advance(by: 60)
            #expect(await eventually { harness.received.count == 1 })
        }
    }
}
