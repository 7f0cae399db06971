// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
@testable import Gateway
import HTTP
import SimulatorKit
import StorageCore
import StoreTestSupport
import TestSupport
import Testing

/// An iOS membership as an auto-renewable subscription (issue 29, first part): each transaction
/// Apple makes for it — the first purchase and every renewal — is a payment of its own, credited
/// once to an order of its own through the one door, linked to the subscription by its
/// original_transaction_id; a renewal whose notification was lost is found by the reconciler's
/// read of Get Notification History.
@Suite(.serialized)
struct SubscriptionRenewalTests {
    static let catalog = #"""
        {"products":[
          {"id":"swift-101","amount":990,"description":"Swift 入门课","apple_product_id":"com.example.courses.swift101"},
          {"id":"vip-ios","amount":3000,"description":"VIP 月卡（iOS）","type":"membership","period":"P1M","entitlement":"vip",
           "apple_product_id":"vip.monthly"}]}
        """#

    @Test("a monthly subscription renewed 12 times, 3 renewal notifications lost: every payment credited once to an order of its own, the entitlement unbroken",
          arguments: StoreKind.all)
    func twelveRenewalsWithThreeNotificationsLostAreEachCreditedOnce(store: StoreKind) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString).json")
        try Data(Self.catalog.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let rig = try await IAPRig.start(.inProcess, store: store, environment: ["GATEWAY_CATALOG": file.path])
        defer { Task { await rig.stop() } }
        let simulatorClock = try #require(rig.appStore.clock as? ScaledClock)
        rig.appStore.configureSubscriptionProducts([
            AppStoreSubscriptionProduct(productID: "vip.monthly", groupIdentifier: "21000001", period: "P1M", level: 1)])

        let created = try await rig.createOrder("learner", product: "vip-ios")
        let token = try #require(created["app_account_token"] as? String)
        let bought = try rig.buy("apple-learner", token: token, product: "vip.monthly", type: "Auto-Renewable Subscription")
        #expect(try await rig.report("learner", ["signed_transaction": bought.signedTransactionInfo]).status == 200)

        // Month by month, both clocks together; the renewals of months 3, 7 and 11 reach nobody.
        let lost: Set<Int> = [3, 7, 11]
        for month in 1...12 {
            rig.appStore.apply(AppStoreFaultPlan(notify: NotifyFaults(dropRate: lost.contains(month) ? 1 : 0)))
            simulatorClock.advance(by: 31 * 86400)
            rig.gateway.clock.advance(by: 31 * 86400)
            rig.appStore.catchUpSubscriptions()
            let delivered = await eventually(timeout: .seconds(30)) {
                rig.appStore.notificationHistory.count >= month + 1
            }
            #expect(delivered, "month \(month)")
            rig.appStore.apply(AppStoreFaultPlan())
            if lost.contains(month) {
                // The lost renewal is nobody's until the reconciler reads Apple's notification history.
                #expect(try await rig.store.orders(originalTransactionID: bought.transactionID).count == month)
            }
            _ = await rig.sweep()
        }
        let orders = try await rig.store.orders(originalTransactionID: bought.transactionID)
        #expect(orders.count == 13, "\(orders.map { $0.appleTransactionID ?? "-" })")
        #expect(orders.allSatisfy { $0.state == .success && $0.userID == "learner" && $0.productID == "vip-ios" })
        #expect(Set(orders.compactMap(\.appleTransactionID)).count == 13, "one order per transaction")
        let subscription = try #require(rig.appStore.subscription(originalTransactionID: bought.transactionID))
        #expect(Set(orders.compactMap(\.appleTransactionID)) == Set(subscription.transactionIds))
        // The lost ones came from Apple's notification history (a delivered one may too, when the
        // sweep read the history before the delivery was handled: the same notification, once).
        for (index, transactionID) in subscription.transactionIds.enumerated() where lost.contains(index) {
            let source = try #require(try await rig.store.appleTransaction(transactionID)).source
            #expect(source.hasPrefix("notification history DID_RENEW"), "renewal \(index): \(source)")
        }

        // A second sweep and a redelivered renewal change nothing.
        _ = await rig.sweep()
        #expect(try await rig.store.orders(originalTransactionID: bought.transactionID).count == 13)

        let answer = try await rig.gateway.send(.get, "/v1/users/learner/entitlements", token: rig.token("learner"))
        let vip = try #require((answer.json["entitlements"] as? [[String: Any]])?.first { $0["entitlement"] as? String == "vip" })
        #expect(vip["active"] as? Bool == true, "\(answer.json)")
    }
}
