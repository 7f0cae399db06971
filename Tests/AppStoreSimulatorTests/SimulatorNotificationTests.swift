// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
import SimulatorHarnessSupport
import SimulatorKit
import TestSupport
import Testing

/// Server Notifications V2: what is sent for each event, Apple's retry schedule (on a clock the
/// tests advance), and duplicates, drops, delays and rogue signatures.
struct SimulatorNotificationTests {
    @Test func aPurchaseSendsAOneTimeChargeTheVerifierAccepts() async throws {
        let harness = try AppStoreHarness()
        try await harness.withNotifyLoop {
            let token = UUID()
            let purchase = try harness.buy(token: token)
            #expect(await eventually { harness.inbox.count == 1 })
            let notification = try harness.verifier.verifyNotification(try #require(harness.inbox.signedPayloads.first))
            #expect(notification.notificationType == .oneTimeCharge)
            #expect(notification.environment == .production)
            #expect(notification.appAppleID == AppStoreHarness.appAppleID)
            #expect(notification.transaction?.transactionID == purchase.transactionID)
            #expect(notification.transaction?.appAccountToken == token)
            #expect(harness.inbox.urls == ["https://merchant.example/appstore/notifications"])
            #expect(await eventually { harness.simulator.pendingNotifications == 0 })
        }
    }

    @Test func sandboxSubscriptionsRefundsRevocationsAndTestsEachSendTheirType() async throws {
        let harness = try AppStoreHarness()
        try await harness.withNotifyLoop {
            let subscription = try harness.buy(product: "vip.monthly", type: "Auto-Renewable Subscription", environment: .sandbox)
            let course = try harness.buy()
            let shared = try harness.buy(product: "course.family")
            try harness.simulator.refund(transactionID: course.transactionID, reason: 1)
            try harness.simulator.revoke(transactionID: shared.transactionID)
            harness.simulator.sendTestNotification()
            #expect(await eventually { harness.inbox.count == 6 })
            let notifications = try harness.inbox.signedPayloads.map { try harness.verifier.verifyNotification($0) }
            let byType = Dictionary(grouping: notifications, by: \.notificationType)
            let subscribed = try #require(byType[.subscribed]?.first)
            #expect(subscribed.subtype == .initialBuy && subscribed.environment == .sandbox)
            #expect(subscribed.renewalInfo?.originalTransactionID == subscription.originalTransactionID)
            #expect(subscribed.renewalInfo?.autoRenewStatus == 1)
            #expect(byType[.refund]?.first?.transaction?.revocationDate != nil)
            #expect(byType[.refund]?.first?.transaction?.revocationReason == 1)
            #expect(byType[.revoke]?.first?.transaction?.transactionID == shared.transactionID)
            #expect(byType[.test]?.first?.transaction == nil)
            #expect(harness.inbox.urls.filter { $0.hasSuffix("?sandbox") }.count == 1)
            #expect(Set(notifications.map(\.notificationUUID)).count == 6)
        }
    }

    @Test func aFailedDeliveryIsRetriedOnApplesScheduleThenAbandoned() async throws {
        // The merchant answers 500 to everything; Apple tries at 0, 1, 12, 24, 48 and 72 hours after.
        let harness = try AppStoreHarness(retryScale: 1) { _ in 500 }
        try await harness.withNotifyLoop {
            try harness.buy()
            #expect(await eventually { harness.inbox.count == 1 })
            for (hours, expected) in [(1.0, 2), (12, 3), (24, 4), (48, 5), (72, 6)] {
                harness.clock.advance(by: hours * 3600 - 1)
                try await Task.sleep(for: .milliseconds(50))
                #expect(harness.inbox.count == expected - 1, "not before \(hours) h")
                harness.clock.advance(by: 1)
                #expect(await eventually { harness.inbox.count == expected }, "after \(hours) h")
            }
            #expect(await eventually { harness.simulator.counters["notifications abandoned"] == 1 })
            #expect(Set(harness.inbox.signedPayloads).count == 1)  // the same notification every time
        }
    }

    @Test func aDeliveryAcknowledgedOnTheSecondAttemptStops() async throws {
        let harness = try AppStoreHarness(retryScale: 1) { number in number == 1 ? 503 : 204 }
        try await harness.withNotifyLoop {
            try harness.buy()
            #expect(await eventually { harness.inbox.count == 1 })
            harness.clock.advance(by: 3600)
            #expect(await eventually { harness.simulator.pendingNotifications == 0 })
            harness.clock.advance(by: 200 * 3600)
            try await Task.sleep(for: .milliseconds(50))
            #expect(harness.inbox.count == 2)
        }
    }

    @Test func duplicatesDropsAndDelaysComeFromTheFaultPlan() async throws {
        let harness = try AppStoreHarness(retryScale: 1)
        try await harness.withNotifyLoop {
            harness.simulator.apply(AppStoreFaultPlan(notify: NotifyFaults(duplicateRate: 1, duplicateCopies: 3)))
            try harness.buy()
            #expect(await eventually { harness.inbox.count == 3 })
            #expect(Set(harness.inbox.signedPayloads).count == 1)

            harness.simulator.apply(AppStoreFaultPlan(notify: NotifyFaults(dropRate: 1)))
            try harness.buy(product: "course.2")
            #expect(await eventually { harness.simulator.notificationHistory.contains { $0.dropped } })
            #expect(harness.inbox.count == 3)

            harness.simulator.apply(AppStoreFaultPlan(notify: NotifyFaults(delay: 600)))
            try harness.buy(product: "course.3")
            try await Task.sleep(for: .milliseconds(50))
            #expect(harness.inbox.count == 3)
            harness.clock.advance(by: 600)
            #expect(await eventually { harness.inbox.count == 4 })
        }
    }

    @Test func aNotificationSignedByTheRogueChainIsRefused() async throws {
        let harness = try AppStoreHarness()
        try await harness.withNotifyLoop {
            harness.simulator.apply(AppStoreFaultPlan(notificationRogueChainRate: 1))
            try harness.buy()
            #expect(await eventually { harness.inbox.count == 1 })
            let payload = try #require(harness.inbox.signedPayloads.first)
            #expect(throws: SignedDataError.self) { try harness.verifier.verifyNotification(payload) }
        }
    }

    @Test func anInterruptedPurchaseNotifiesOnlyTheSecondTransactionWithoutItsToken() async throws {
        let harness = try AppStoreHarness()
        try await harness.withNotifyLoop {
            let (_, completed) = try harness.simulator.interruptedPurchase(
                SimulatedPurchase(user: "alice", productID: "course.swift.basics", appAccountToken: UUID()))
            #expect(await eventually { harness.inbox.count == 1 })
            let notification = try harness.verifier.verifyNotification(try #require(harness.inbox.signedPayloads.first))
            #expect(notification.transaction?.transactionID == completed.transactionID)
            #expect(notification.transaction?.appAccountToken == nil)
        }
    }
}
