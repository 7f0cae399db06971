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

    @Test("the console shows a subscription's payments on its orders, and a refunder extends its renewal date once per form, audited; a viewer cannot",
          arguments: StoreKind.all)
    func theConsoleShowsTheSubscriptionAndExtendsItsRenewalDate(store: StoreKind) async throws {
        try await UnclaimedPurchaseTests.withRig(.sockets, store: store) { rig in
            rig.appStore.configureSubscriptionProducts([
                AppStoreSubscriptionProduct(productID: "com.example.vip.monthly", groupIdentifier: "21000001", period: "P1M", level: 2)])
            let created = try await rig.createOrder("learner", product: "vip-month-ios")
            let token = try #require(created["app_account_token"] as? String)
            let bought = try rig.buy("apple-learner", token: token, product: "com.example.vip.monthly", type: "Auto-Renewable Subscription")
            #expect(try await rig.report("learner", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
            let first = try #require(created["out_trade_no"] as? String)
            let simulatorClock = try #require(rig.appStore.clock as? ScaledClock)
            simulatorClock.advance(by: 32 * 86400)
            rig.appStore.catchUpSubscriptions()
            #expect(await eventually(timeout: .seconds(30)) {
                ((try? await rig.store.orders(originalTransactionID: bought.transactionID)) ?? []).count == 2
            })
            let path = "/console/orders/\(first)"

            let vera = ConsoleBrowser(rig: rig.gateway, language: "en")
            #expect(try await vera.signIn("vera").status == 303)
            #expect(try await vera.get(path).status == 200)
            #expect(vera.page.contains("id=\"subscription-payments\"") && vera.page.contains("Auto-renewable subscription \(bought.transactionID)"))
            let renewal = try #require(try await rig.store.orders(originalTransactionID: bought.transactionID).first { $0.outTradeNo != first })
            #expect(vera.page.contains("href=\"/console/orders/\(renewal.outTradeNo)\""))
            #expect(!vera.page.contains("id=\"extend\""), "a viewer is not offered the extension")
            let before = try #require(rig.appStore.subscription(originalTransactionID: bought.transactionID)).expiresDate
            #expect(try await vera.post(path + "/extend", [("days", "7"), ("reason", "3"), ("request_id", UUID().uuidString)]).status == 403)

            let rita = ConsoleBrowser(rig: rig.gateway, language: "en")
            #expect(try await rita.signIn("rita").status == 303)
            #expect(try await rita.get("/console/orders/\(renewal.outTradeNo)").status == 200)
            #expect(rita.page.contains("id=\"extend\""))
            let requestID = try #require(rita.field("request_id"))
            #expect(try await rita.post(path + "/extend", [("days", "0"), ("reason", "3"), ("request_id", requestID)]).status == 400)
            #expect(try #require(rig.appStore.subscription(originalTransactionID: bought.transactionID)).expiresDate == before)
            let done = try await rita.post(path + "/extend", [("days", "7"), ("reason", "3"), ("request_id", requestID)])
            #expect(done.status == 200 && rita.page.contains("Apple extended this subscription"), "\(rita.page)")
            let after = try #require(rig.appStore.subscription(originalTransactionID: bought.transactionID)).expiresDate
            #expect(after - before == 7 * 86_400_000)
            // Apple's RENEWAL_EXTENDED moves the subscription's state, which the page shows, and the entitlement.
            #expect(await eventually(timeout: .seconds(60)) {
                (try? await rig.store.subscriptions(originalTransactionIDs: [bought.transactionID]))?.first?.expiresAt
                    == Date(timeIntervalSince1970: Double(after) / 1000)
            })
            #expect(try await rita.get(path).status == 200)
            #expect(rita.page.contains("id=\"subscription-state\"") && rita.page.contains("data-status=\"active\""), "\(rita.page)")
            let entitlements = try await rig.gateway.send(.get, "/v1/users/learner/entitlements", token: rig.token("learner"))
            let vip = (entitlements.json["entitlements"] as? [[String: Any]])?.first { $0["entitlement"] as? String == "vip" }
            #expect(vip?["expires_at"] as? String == Timestamp.rfc3339(Date(timeIntervalSince1970: Double(after) / 1000)), "\(entitlements.json)")
            // The same form posted again (a reload): Apple extends once per request id.
            #expect(try await rita.post(path + "/extend", [("days", "7"), ("reason", "3"), ("request_id", requestID)]).status == 200)
            #expect(try #require(rig.appStore.subscription(originalTransactionID: bought.transactionID)).expiresDate == after)

            let entries = try await rig.store.auditEntries(AuditQuery(action: "extend_subscription"), limit: 20, before: nil).entries.map(\.entry)
            #expect(entries.contains { $0.actor == "vera" && $0.outcome == "forbidden" })
            #expect(entries.contains { $0.actor == "rita" && $0.outcome == "invalid_request" })
            let ok = try #require(entries.first { $0.actor == "rita" && $0.outcome == "ok" })
            #expect(ok.channel == "console" && ok.target == "original_transaction_id=\(bought.transactionID)" && ok.detail.contains("7"), "\(ok)")
            // A course's order has no subscription section and cannot be extended.
            let course = try await rig.createOrder("learner")
            let courseNumber = try #require(course["out_trade_no"] as? String)
            #expect(try await rita.get("/console/orders/\(courseNumber)").status == 200)
            #expect(!rita.page.contains("id=\"subscription\""))
            #expect(try await rita.post("/console/orders/\(courseNumber)/extend", [("days", "7"), ("reason", "3"),
                                                                                  ("request_id", UUID().uuidString)]).status == 404)
        }
    }
}
