// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
import HTTP
import JSON
import SimulatorHarnessSupport
import SimulatorKit
import TestSupport
import Testing

/// Auto-renewable subscriptions on the simulator's clock: renewals, failed charges through grace
/// period and billing retry, auto-renew off, upgrades and downgrades, refunds, and the two Server
/// API endpoints about subscriptions (Get All Subscription Statuses, Extend a Subscription Renewal
/// Date), each checked through what the merchant receives, verified.
struct SubscriptionLifecycleTests {
    static let products = [
        AppStoreSubscriptionProduct(productID: "vip.monthly", groupIdentifier: "21000001", period: "P1M", level: 2),
        AppStoreSubscriptionProduct(productID: "vip.yearly", groupIdentifier: "21000001", period: "P1Y", level: 1),
        AppStoreSubscriptionProduct(productID: "vip.basic.monthly", groupIdentifier: "21000001", period: "P1M", level: 3),
        AppStoreSubscriptionProduct(productID: "vip.graced", groupIdentifier: "21000002", period: "P1M", level: 1,
                                    gracePeriodDays: 16),
    ]
    static let day: TimeInterval = 86400

    func harness() throws -> AppStoreHarness {
        let harness = try AppStoreHarness()
        harness.simulator.configureSubscriptionProducts(Self.products)
        return harness
    }

    func subscribe(_ harness: AppStoreHarness, _ product: String = "vip.monthly", user: String = "alice") throws -> PurchaseReceipt {
        try harness.buy(user, product: product, type: "Auto-Renewable Subscription")
    }

    /// The notifications the merchant received, verified, in the order they were made (they are
    /// sent concurrently, so they may arrive in another): by signedDate, then by the date of the
    /// transaction they carry.
    func received(_ harness: AppStoreHarness) throws -> [AppStoreNotification] {
        try harness.inbox.signedPayloads.map { try harness.verifier.verifyNotification($0) }.sorted {
            ($0.signedDate, $0.transaction?.purchaseDate ?? .distantPast, $0.transaction?.transactionID ?? "")
                < ($1.signedDate, $1.transaction?.purchaseDate ?? .distantPast, $1.transaction?.transactionID ?? "")
        }
    }

    /// Waits until `count` notifications arrived and answers them.
    func waitFor(_ count: Int, _ harness: AppStoreHarness) async throws -> [AppStoreNotification] {
        harness.simulator.catchUpSubscriptions()
        #expect(await eventually { harness.inbox.count >= count }, "\(harness.inbox.count) of \(count) notifications")
        return try received(harness)
    }

    /// Calls the Server API with a valid token.
    func api(_ harness: AppStoreHarness, _ method: String, _ path: String, query: String = "", body: JSONValue? = nil)
        throws -> (status: Int, json: JSONValue?)
    {
        let response = harness.simulator.handle(AppStoreSimulatorRequest(
            method: method, path: path, query: HTTPServerQuery(parsing: query) ?? HTTPServerQuery(),
            headers: ["Authorization": "Bearer " + harness.credentials.token(issuedAt: Date())],
            body: body?.bytes() ?? []))
        return (response.status, try? JSONValue.parse(response.body))
    }

    /// Get All Subscription Statuses, verified: each subscription's status, latest transaction and renewal info.
    func statuses(_ harness: AppStoreHarness, _ transactionID: String, query: String = "") throws
        -> [(group: String, status: Int, transaction: AppStoreTransaction, renewal: AppStoreRenewalInfo)]
    {
        let (status, json) = try api(harness, "GET", "/inApps/v1/subscriptions/\(transactionID)", query: query)
        #expect(status == 200)
        var answer: [(String, Int, AppStoreTransaction, AppStoreRenewalInfo)] = []
        for group in json?["data"]?.arrayValue ?? [] {
            for item in group["lastTransactions"]?.arrayValue ?? [] {
                answer.append((
                    try #require(group["subscriptionGroupIdentifier"]?.stringValue), try #require(item["status"]?.intValue),
                    try harness.verifier.verifyTransaction(try #require(item["signedTransactionInfo"]?.stringValue)),
                    try harness.verifier.verifyRenewalInfo(try #require(item["signedRenewalInfo"]?.stringValue))))
            }
        }
        return answer
    }

    @Test("A monthly subscription renews at each period's end: twelve DID_RENEW, each a new transaction of the same original")
    func monthlyRenewals() async throws {
        let harness = try harness()
        try await harness.withNotifyLoop {
            let first = try subscribe(harness)
            // A year in one jump: each renewal still happens at its own period's end, in order.
            harness.clock.advance(by: 366 * Self.day)
            let notifications = try await waitFor(13, harness)
            #expect(notifications.count == 13)
            #expect(notifications.first?.notificationType == .subscribed && notifications.first?.subtype == .initialBuy)
            let renewals = notifications.dropFirst()
            #expect(renewals.allSatisfy { $0.notificationType == .didRenew && $0.subtype == nil })
            let transactions = renewals.compactMap(\.transaction)
            #expect(Set(transactions.map(\.transactionID)).count == 12)
            #expect(!transactions.map(\.transactionID).contains(first.transactionID))
            #expect(transactions.allSatisfy { $0.originalTransactionID == first.transactionID })
            #expect(Set(transactions.compactMap(\.webOrderLineItemID)).count == 12)
            #expect(transactions.allSatisfy { $0.transactionReason == .renewal && $0.subscriptionGroupIdentifier == "21000001" })
            // Each period starts where the last ended, a calendar month long (the day of the month kept).
            var previousEnd = try #require(harness.simulator.transaction(first.transactionID)?.expiresDate)
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            for transaction in transactions {
                #expect(transaction.purchaseDate == previousEnd)
                let end = try #require(transaction.expiresDate)
                #expect(calendar.dateComponents([.month], from: transaction.purchaseDate, to: end).month == 1)
                previousEnd = end
            }
            #expect(renewals.allSatisfy { $0.renewalInfo?.autoRenewStatus == 1 && $0.renewalInfo?.originalTransactionID == first.transactionID })
            // Transaction history and the notification history hold the renewals too.
            let history = try await harness.apiClient().transactionHistory(first.transactionID)
            #expect(history.signedTransactions.count == 13)
            let status = try statuses(harness, transactions.last!.transactionID)
            #expect(status.count == 1 && status[0].status == 1 && status[0].transaction.transactionID == transactions.last!.transactionID)
        }
    }

    @Test("A failed renewal enters the grace period, then billing retry, and recovers with DID_RENEW BILLING_RECOVERY")
    func graceRetryRecovery() async throws {
        let harness = try harness()
        try await harness.withNotifyLoop {
            let first = try subscribe(harness, "vip.graced")
            let expires = try #require(harness.simulator.transaction(first.transactionID)?.expiresDate)
            // The renewal and the next 19 daily retries fail; the 20th retry is charged.
            try harness.simulator.failRenewals(originalTransactionID: first.transactionID, count: 20)
            harness.clock.advance(by: expires.timeIntervalSince(harness.clock.now()) + 1)
            var notifications = try await waitFor(2, harness)
            #expect(notifications[1].notificationType == .didFailToRenew && notifications[1].subtype == .gracePeriod)
            #expect(notifications[1].renewalInfo?.isInBillingRetryPeriod == true)
            #expect(notifications[1].renewalInfo?.gracePeriodExpiresDate == expires.addingTimeInterval(16 * Self.day))
            var status = try statuses(harness, first.transactionID)
            #expect(status.map(\.status) == [4])

            harness.clock.advance(by: 16 * Self.day)
            notifications = try await waitFor(3, harness)
            #expect(notifications[2].notificationType == .gracePeriodExpired)
            status = try statuses(harness, first.transactionID)
            #expect(status.map(\.status) == [3])
            #expect(status[0].renewal.isInBillingRetryPeriod == true && status[0].renewal.gracePeriodExpiresDate == nil)

            harness.clock.advance(by: 4 * Self.day)
            notifications = try await waitFor(4, harness)
            #expect(notifications.count == 4)
            #expect(notifications[3].notificationType == .didRenew && notifications[3].subtype == .billingRecovery)
            let recovered = try #require(notifications[3].transaction)
            // Recovered after the grace period: the new period starts at the recovery.
            #expect(recovered.purchaseDate == expires.addingTimeInterval(20 * Self.day))
            #expect(recovered.originalTransactionID == first.transactionID)
            status = try statuses(harness, first.transactionID)
            #expect(status.map(\.status) == [1])
            #expect(status[0].renewal.isInBillingRetryPeriod == false)
        }
    }

    @Test("A renewal failing for good expires after sixty days of billing retry with EXPIRED BILLING_RETRY")
    func billingRetryExpiry() async throws {
        let harness = try harness()
        try await harness.withNotifyLoop {
            let first = try subscribe(harness)
            try harness.simulator.failRenewals(originalTransactionID: first.transactionID, count: nil)
            harness.clock.advance(by: 32 * Self.day)
            var notifications = try await waitFor(2, harness)
            // No grace period for this product: DID_FAIL_TO_RENEW without a subtype, billing retry.
            #expect(notifications[1].notificationType == .didFailToRenew && notifications[1].subtype == nil)
            #expect(try statuses(harness, first.transactionID).map(\.status) == [3])
            harness.clock.advance(by: 60 * Self.day)
            notifications = try await waitFor(3, harness)
            #expect(notifications.count == 3)
            #expect(notifications[2].notificationType == .expired && notifications[2].subtype == .billingRetry)
            #expect(notifications[2].renewalInfo?.expirationIntent == 2)
            let status = try statuses(harness, first.transactionID)
            #expect(status.map(\.status) == [2])
            #expect(status[0].renewal.autoRenewStatus == 0 && status[0].renewal.isInBillingRetryPeriod == false)
            // Bought again, it is the same subscription: SUBSCRIBED RESUBSCRIBE.
            let again = try subscribe(harness)
            notifications = try await waitFor(4, harness)
            #expect(again.originalTransactionID == first.transactionID)
            #expect(notifications[3].notificationType == .subscribed && notifications[3].subtype == .resubscribe)
            #expect(try statuses(harness, first.transactionID).map(\.status) == [1])
        }
    }

    @Test("Turning auto-renew off sends DID_CHANGE_RENEWAL_STATUS, and the period's end EXPIRED VOLUNTARY")
    func autoRenewOff() async throws {
        let harness = try harness()
        try await harness.withNotifyLoop {
            let first = try subscribe(harness)
            #expect(throws: AppStoreSimulatorControlError.self) { try subscribe(harness) }  // already subscribed
            harness.clock.advance(by: 60)  // signed after the purchase's notification, so they sort in order
            let snapshot = try harness.simulator.setAutoRenew(originalTransactionID: first.transactionID, enabled: false)
            #expect(!snapshot.autoRenewStatus && snapshot.status == 1)
            var notifications = try await waitFor(2, harness)
            #expect(notifications[1].notificationType == .didChangeRenewalStatus && notifications[1].subtype == .autoRenewDisabled)
            #expect(notifications[1].renewalInfo?.autoRenewStatus == 0)
            harness.clock.advance(by: 40 * Self.day)
            notifications = try await waitFor(3, harness)
            #expect(notifications.count == 3)
            #expect(notifications[2].notificationType == .expired && notifications[2].subtype == .voluntary)
            #expect(notifications[2].renewalInfo?.expirationIntent == 1)
            #expect(notifications[2].transaction?.transactionID == first.transactionID)
            #expect(try statuses(harness, first.transactionID).map(\.status) == [2])
        }
    }

    @Test("An upgrade takes effect at once with a new transaction; a downgrade waits for the renewal")
    func upgradeAndDowngrade() async throws {
        let harness = try harness()
        try await harness.withNotifyLoop {
            let first = try subscribe(harness)
            harness.clock.advance(by: 10 * Self.day)
            let upgraded = try harness.simulator.changeProduct(originalTransactionID: first.transactionID, to: "vip.yearly")
            var notifications = try await waitFor(2, harness)
            #expect(notifications[1].notificationType == .didChangeRenewalPref && notifications[1].subtype == .upgrade)
            let yearly = try #require(notifications[1].transaction)
            #expect(yearly.productID == "vip.yearly" && yearly.originalTransactionID == first.transactionID)
            #expect(yearly.transactionID != first.transactionID && yearly.transactionID == upgraded.latestTransactionId)
            #expect(yearly.purchaseDate == harness.clock.now())
            #expect(harness.simulator.transaction(first.transactionID)?.isUpgraded == true)
            let status = try statuses(harness, first.transactionID)
            #expect(status.count == 1 && status[0].transaction.productID == "vip.yearly" && status[0].status == 1)

            // Down to the monthly: nothing changes until the year ends, then the renewal is monthly.
            harness.clock.advance(by: Self.day)
            try harness.simulator.changeProduct(originalTransactionID: first.transactionID, to: "vip.basic.monthly")
            notifications = try await waitFor(3, harness)
            #expect(notifications[2].notificationType == .didChangeRenewalPref && notifications[2].subtype == .downgrade)
            #expect(notifications[2].renewalInfo?.autoRenewProductID == "vip.basic.monthly")
            #expect(notifications[2].transaction?.productID == "vip.yearly")
            harness.clock.advance(by: 366 * Self.day)
            notifications = try await waitFor(4, harness)
            #expect(notifications[3].notificationType == .didRenew)
            #expect(notifications[3].transaction?.productID == "vip.basic.monthly")
            #expect(notifications[3].transaction?.purchaseDate == yearly.expiresDate)
            // Another group's product is not a change of this subscription.
            #expect(throws: AppStoreSimulatorControlError.self) {
                try harness.simulator.changeProduct(originalTransactionID: first.transactionID, to: "vip.graced")
            }
        }
    }

    @Test("Refunding the current period revokes the subscription (status 5); refunding an older period does not")
    func refunds() async throws {
        let harness = try harness()
        try await harness.withNotifyLoop {
            let first = try subscribe(harness)
            harness.clock.advance(by: 62 * Self.day)
            var notifications = try await waitFor(3, harness)
            let latestID = try #require(harness.simulator.subscription(originalTransactionID: first.transactionID)?.latestTransactionId)
            let latest = try #require(harness.simulator.transaction(latestID))
            #expect(notifications.filter { $0.notificationType == .didRenew }.last?.transaction?.transactionID == latestID)
            try harness.simulator.refund(transactionID: first.transactionID)
            notifications = try await waitFor(4, harness)
            let older = try #require(notifications.first { $0.notificationType == .refund })
            #expect(older.transaction?.transactionID == first.transactionID && older.transaction?.revocationDate != nil)
            #expect(try statuses(harness, first.transactionID).map(\.status) == [1])
            try harness.simulator.refund(transactionID: latest.transactionID)
            notifications = try await waitFor(5, harness)
            let current = try #require(notifications.first { $0.notificationType == .refund && $0.transaction?.transactionID == latestID })
            #expect(current.renewalInfo?.autoRenewStatus == 0)
            let status = try statuses(harness, first.transactionID)
            #expect(status.map(\.status) == [5])
            #expect(status[0].transaction.revocationDate != nil)
            // Revoked, it never renews again.
            harness.clock.advance(by: 90 * Self.day)
            harness.simulator.catchUpSubscriptions()
            try await Task.sleep(for: .milliseconds(50))
            #expect(harness.inbox.count == 5)
        }
    }

    @Test("Get All Subscription Statuses answers every group of the customer, filtered by status, and refuses a status outside 1-5")
    func statusFilter() async throws {
        let harness = try harness()
        let monthly = try subscribe(harness)
        let graced = try subscribe(harness, "vip.graced")
        try harness.simulator.failRenewals(originalTransactionID: graced.transactionID, count: nil)
        harness.clock.advance(by: 32 * Self.day)
        harness.simulator.catchUpSubscriptions()
        let all = try statuses(harness, monthly.transactionID)
        #expect(all.map(\.group) == ["21000001", "21000002"])
        #expect(all.map(\.status) == [1, 4])
        #expect(try statuses(harness, graced.transactionID, query: "status=4").map(\.group) == ["21000002"])
        #expect(try statuses(harness, graced.transactionID, query: "status=1&status=4").count == 2)
        #expect(try statuses(harness, graced.transactionID, query: "status=2").isEmpty)
        #expect(try api(harness, "GET", "/inApps/v1/subscriptions/\(monthly.transactionID)", query: "status=6").json?["errorCode"] == 4_000_031)
        #expect(try api(harness, "GET", "/inApps/v1/subscriptions/2000000999999999").status == 404)
        #expect(try api(harness, "GET", "/sandbox/inApps/v1/subscriptions/\(monthly.transactionID)").status == 404)
        // A course bought by the same customer answers their subscriptions too.
        let course = try harness.buy()
        #expect(try statuses(harness, course.transactionID).count == 2)
    }

    @Test("Extend Renewal Date moves expiresDate, sends RENEWAL_EXTENDED, and a repeated requestIdentifier extends nothing more")
    func extendRenewalDate() async throws {
        let harness = try harness()
        try await harness.withNotifyLoop {
            let first = try subscribe(harness)
            let before = try #require(harness.simulator.transaction(first.transactionID)?.expiresDate)
            let body: JSONValue = ["extendByDays": 7, "extendReasonCode": 3, "requestIdentifier": "outage-2026-12-01"]
            let path = "/inApps/v1/subscriptions/extend/\(first.transactionID)"
            let answer = try api(harness, "PUT", path, body: body)
            #expect(answer.status == 200 && answer.json?["success"] == true)
            let effective = before.addingTimeInterval(7 * Self.day)
            #expect(answer.json?["effectiveDate"]?.intValue == Int(effective.millisecondsSince1970))
            #expect(answer.json?["originalTransactionId"]?.stringValue == first.transactionID)
            #expect(answer.json?["webOrderLineItemId"] != nil)
            #expect(try api(harness, "PUT", path, body: body).json == answer.json)
            let notifications = try await waitFor(2, harness)
            #expect(notifications.count == 2)
            let extended = try #require(notifications.first { $0.notificationType == .renewalExtended })
            #expect(extended.transaction?.expiresDate == effective && extended.renewalInfo?.renewalDate == effective)
            let status = try statuses(harness, first.transactionID)
            #expect(status[0].transaction.expiresDate == effective && status[0].renewal.renewalDate == effective)
            // Apple's refusals: days out of 1-90, a reason out of 0-3, no request id, a third extension in a year.
            #expect(try api(harness, "PUT", path, body: ["extendByDays": 91, "extendReasonCode": 0, "requestIdentifier": "a"])
                .json?["errorCode"] == 4_000_009)
            #expect(try api(harness, "PUT", path, body: ["extendByDays": 1, "extendReasonCode": 4, "requestIdentifier": "a"])
                .json?["errorCode"] == 4_000_010)
            #expect(try api(harness, "PUT", path, body: ["extendByDays": 1, "extendReasonCode": 0]).json?["errorCode"] == 4_000_011)
            #expect(try api(harness, "PUT", path, body: ["extendByDays": 1, "extendReasonCode": 0, "requestIdentifier": "second"])
                .status == 200)
            #expect(try api(harness, "PUT", path, body: ["extendByDays": 1, "extendReasonCode": 0, "requestIdentifier": "third"])
                .json?["errorCode"] == 4_030_005)
            #expect(try api(harness, "PUT", "/inApps/v1/subscriptions/extend/2000000999999999", body: body).json?["errorCode"]
                == 4_040_005)
            // The renewal comes at the extended date, not before.
            harness.clock.advance(by: effective.addingTimeInterval(Self.day).timeIntervalSince(harness.clock.now()) - 2)
            harness.simulator.catchUpSubscriptions()
            try await Task.sleep(for: .milliseconds(50))
            #expect(try received(harness).filter { $0.notificationType == .didRenew }.isEmpty)
            harness.clock.advance(by: 2)
            #expect(try await waitFor(4, harness).last?.notificationType == .didRenew)
        }
    }

    @Test("An expired subscription cannot be extended (4030004)")
    func extendExpired() throws {
        let harness = try harness()
        let first = try subscribe(harness)
        try harness.simulator.setAutoRenew(originalTransactionID: first.transactionID, enabled: false)
        harness.clock.advance(by: 40 * Self.day)
        let answer = try api(harness, "PUT", "/inApps/v1/subscriptions/extend/\(first.transactionID)",
                             body: ["extendByDays": 3, "extendReasonCode": 1, "requestIdentifier": "late"])
        #expect(answer.status == 403 && answer.json?["errorCode"] == 4_030_004)
    }

    @Test("Chosen notifications are dropped: the merchant never receives them, the notification history keeps them")
    func chosenDrops() async throws {
        let harness = try harness()
        try await harness.withNotifyLoop {
            harness.simulator.apply(AppStoreFaultPlan(dropNotifications: AppStoreNotificationDrops(types: ["DID_RENEW"], limit: 3)))
            let first = try subscribe(harness)
            // Four renewals, in the last 180 days (Get Notification History's reach).
            harness.clock.advance(by: 122 * Self.day)
            let notifications = try await waitFor(2, harness)
            #expect(await eventually { harness.simulator.notificationHistory.filter(\.dropped).count == 3 })
            #expect(notifications.count == 2)  // SUBSCRIBED and the last of the 4 renewals
            #expect(notifications.filter { $0.notificationType == .didRenew }.count == 1)
            #expect(harness.simulator.notificationHistory.filter(\.dropped).count == 3)
            let history = try await harness.apiClient().notificationHistory(NotificationHistoryRequest(
                startDate: harness.clock.now().addingTimeInterval(-179 * Self.day), endDate: harness.clock.now().addingTimeInterval(1),
                transactionID: first.transactionID), environment: .production)
            // The purchase and the four renewals, each signed when it happened, the three dropped included.
            #expect(history.items.count == 5)
            let dates = history.items.map { try? harness.verifier.verifyNotification($0.signedPayload).signedDate }
            #expect(Set(dates.compactMap { $0 }).count == 5, "each signed when it happened")
        }
    }

    @Test("On a running scaled clock the subscription renews by itself")
    func scaledClockRenewals() async throws {
        // A month passes in about a third of a second.
        let clock = ScaledClock(start: Date(timeIntervalSince1970: 1_764_460_800), scale: 8_000_000)
        let inbox = NotificationInbox()
        let simulator = try AppStoreSimulator(
            configuration: AppStoreSimulatorConfiguration(productionNotificationURL: "in-process://production"),
            clock: clock, notificationSender: ClosureNotifySender { body, url in
                _ = inbox.append(body: body, url: url)
                return []
            })
        let first = try simulator.purchase(SimulatedPurchase(user: "alice", productID: "vip.monthly", type: "Auto-Renewable Subscription"))
        let loop = Task { await simulator.run() }
        defer { loop.cancel() }
        #expect(await eventually { (simulator.subscription(originalTransactionID: first.transactionID)?.transactionIds.count ?? 0) >= 4 })
        #expect(await eventually { inbox.count >= 4 })
    }
}

/// The control panel's subscription commands, as JSON.
struct SubscriptionControlPanelTests {
    @Test("The control panel configures products and fails, recovers, turns off and changes a subscription")
    func controlPanel() throws {
        let harness = try AppStoreHarness()
        let control = AppStoreSimulatorControlAPI(simulator: harness.simulator)
        func call(_ method: String, _ path: String, _ body: String = "") -> (status: Int, json: JSONValue?) {
            let answer = control.handle(method: method, path: path, body: Array(body.utf8))
            return (answer.status, try? JSONValue.parse(answer.body))
        }
        let products = """
            [{"productId":"vip.m","subscriptionGroupIdentifier":"g1","period":"P1M","level":2,"gracePeriodDays":16},
             {"productId":"vip.y","subscriptionGroupIdentifier":"g1","period":"P1Y","level":1}]
            """
        #expect(call("PUT", "/appstore-simulator/subscription-products", products).status == 200)
        #expect(call("GET", "/appstore-simulator/subscription-products").json?.arrayValue?.count == 2)
        let bad = call("PUT", "/appstore-simulator/subscription-products", #"[{"productId":"x","subscriptionGroupIdentifier":"g","periodd":"P1M"}]"#)
        #expect(bad.status == 400 && bad.json?["error"]?["message"]?.stringValue?.contains("unknown member") == true)
        #expect(call("PUT", "/appstore-simulator/subscription-products",
                     #"[{"productId":"x","subscriptionGroupIdentifier":"g","gracePeriodDays":5}]"#).status == 400)

        let bought = call("POST", "/appstore-simulator/purchases", #"{"user":"bob","productId":"vip.m","type":"Auto-Renewable Subscription"}"#)
        let id = try #require(bought.json?["originalTransactionId"]?.stringValue)
        #expect(call("POST", "/appstore-simulator/purchases", #"{"user":"bob","productId":"vip.y","type":"Auto-Renewable Subscription"}"#)
            .status == 409)
        let path = "/appstore-simulator/subscriptions/\(id)"
        #expect(call("GET", path).json?["state"] == "active")
        #expect(call("POST", path + "/fail-renewals", #"{"count":3}"#).json?["failuresAhead"] == 3)
        #expect(call("POST", "/appstore-simulator/clock/advance", #"{"seconds":2678400}"#).status == 200)
        #expect(call("GET", path).json?["state"] == "gracePeriod")
        let recovered = call("POST", path + "/recover-billing")
        #expect(recovered.json?["state"] == "active" && recovered.json?["transactionIds"]?.arrayValue?.count == 2)
        #expect(call("POST", path + "/auto-renew", #"{"enabled":false}"#).json?["autoRenewStatus"] == false)
        #expect(call("POST", path + "/auto-renew").status == 400)
        let upgraded = call("POST", path + "/change-product", #"{"productId":"vip.y"}"#)
        #expect(upgraded.json?["productId"] == "vip.y" && upgraded.json?["transactionIds"]?.arrayValue?.count == 3)
        #expect(call("POST", path + "/change-product", #"{"productId":"course.1"}"#).status == 409)
        #expect(call("GET", "/appstore-simulator/subscriptions/2000000999999999").status == 404)
    }
}
