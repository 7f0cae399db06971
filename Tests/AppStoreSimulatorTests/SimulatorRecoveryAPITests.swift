// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
import JSON
import SimulatorHarnessSupport
import SimulatorKit
import TestSupport
import Testing

/// What the simulated App Store answers for Apple's recovery and refund-defence APIs: real app
/// receipts, Get Notification History with its send attempts and pages, Send Consumption
/// Information with Apple's checks, and the CONSUMPTION_REQUEST and REFUND_REVERSED notifications.
struct SimulatorRecoveryAPITests {
    @Test func eachPurchaseIssuesAReceiptHoldingTheAccountsPurchasesAndVerifyReceiptAnswersItsOwn() async throws {
        let harness = try AppStoreHarness()
        let first = try harness.buy("alice")
        let second = try harness.buy("alice", product: "course.swift.advanced")
        let other = try harness.buy("bob")
        let early = try AppReceipt(base64: first.receipt)
        let late = try AppReceipt(base64: second.receipt)
        #expect(early.bundleID == AppStoreHarness.bundleID)
        #expect(early.purchases.map(\.transactionID) == [first.transactionID])
        #expect(Set(late.purchases.map(\.transactionID)) == [first.transactionID, second.transactionID])
        #expect(try AppReceipt(base64: other.receipt).purchases.map(\.transactionID) == [other.transactionID])
        // verifyReceipt answers the receipt's own in_app: the early receipt does not hold the second purchase.
        let client = harness.receiptClient()
        await #expect(throws: ReceiptError.self) { _ = try await client.transaction(second.transactionID, inReceipt: first.receipt) }
        #expect(try await client.transaction(second.transactionID, inReceipt: second.receipt).0.transactionID == second.transactionID)
        // Base64 the simulator never issued: 21003.
        let forged = ReceiptIssuer(pki: SimulatorPKI(), bundleID: AppStoreHarness.bundleID)
            .receipt(for: [try #require(harness.simulator.transaction(second.transactionID))], now: Date())
        do {
            _ = try await client.transaction(second.transactionID, inReceipt: forged)
            Issue.record("a receipt the simulator never issued was verified")
        } catch {
            #expect(error.status == .notAuthenticated)
        }
    }

    @Test func notificationHistoryPagesEveryNotificationWithItsSendAttempts() async throws {
        // The merchant answers the first 3 arrivals 500, the rest 200 (the clock is frozen: no retry).
        let harness = try AppStoreHarness(retryScale: 3600) { number in number <= 3 ? 500 : 200 }
        let start = harness.clock.now()
        var bought: [PurchaseReceipt] = []
        try await harness.withNotifyLoop {
            for index in 0..<25 { bought.append(try harness.buy("user-\(index % 2)", token: nil)) }
            // Every first attempt recorded (the merchant's inbox fills before the simulator has
            // written down each attempt's outcome).
            #expect(await eventually { harness.simulator.notificationHistory.count >= 25 })
        }
        let api = harness.apiClient()
        let window = NotificationHistoryRequest(startDate: start.addingTimeInterval(-1), endDate: start.addingTimeInterval(3600))
        let first = try await api.notificationHistory(window, environment: .production)
        #expect(first.items.count == 20 && first.hasMore)
        let token = try #require(first.paginationToken)
        let second = try await api.notificationHistory(window, paginationToken: token, environment: .production)
        #expect(second.items.count == 5 && !second.hasMore && second.paginationToken == nil)
        let all = first.items + second.items
        let transactions = try all.map { try harness.verifier.verifyNotification($0.signedPayload).transaction?.transactionID }
        #expect(transactions == bought.map(\.transactionID))
        #expect(all.filter { !$0.wasDelivered }.count == 3)
        #expect(all.allSatisfy { !$0.sendAttempts.isEmpty })
        // Only failures; one customer; one type.
        let failures = try await api.notificationHistory(
            NotificationHistoryRequest(startDate: window.startDate, endDate: window.endDate, onlyFailures: true), environment: .production)
        #expect(failures.items.count == 3)
        let customer = try await api.notificationHistory(
            NotificationHistoryRequest(startDate: window.startDate, endDate: window.endDate, transactionID: bought[0].transactionID),
            environment: .production)
        #expect(customer.items.count == 13)
        let refunds = try await api.notificationHistory(
            NotificationHistoryRequest(startDate: window.startDate, endDate: window.endDate, notificationType: "REFUND"),
            environment: .production)
        #expect(refunds.items.isEmpty)
        #expect(try await api.notificationHistory(window, environment: .sandbox).items.isEmpty)
    }

    @Test func notificationHistoryRefusesWhatAppleRefuses() async throws {
        let harness = try AppStoreHarness()
        let bought = try harness.buy()
        let now = harness.clock.now()
        let api = harness.apiClient(retry: AppStoreRetryPolicy(maximumAttempts: 1))
        func code(_ request: NotificationHistoryRequest, token: String? = nil) async -> Int? {
            do {
                _ = try await api.notificationHistory(request, paginationToken: token, environment: .production)
                return nil
            } catch {
                return error.errorCode
            }
        }
        #expect(await code(.init(startDate: now.addingTimeInterval(-181 * 86400), endDate: now)) == 4_000_012)
        #expect(await code(.init(startDate: now, endDate: now)) == 4_000_013)
        #expect(await code(.init(startDate: now.addingTimeInterval(-60), endDate: now, notificationType: "ONE_TIME_CHARGE",
                                 transactionID: bought.transactionID)) == 4_000_019)
        #expect(await code(.init(startDate: now.addingTimeInterval(-60), endDate: now, notificationType: "NO_SUCH_TYPE")) == 4_000_018)
        #expect(await code(.init(startDate: now.addingTimeInterval(-60), endDate: now), token: "bm90LWEtdG9rZW4") == 4_000_014)
    }

    @Test func sendConsumptionInformationIsAcceptedOnceItPassesApplesChecks() async throws {
        let harness = try AppStoreHarness()
        let course = try harness.buy(type: "Consumable")
        let subscription = try harness.buy(product: "vip.monthly", type: "Auto-Renewable Subscription")
        let sandbox = try harness.buy(environment: .sandbox)
        let api = harness.apiClient(retry: AppStoreRetryPolicy(maximumAttempts: 1))
        let good = ConsumptionInformation(customerConsented: true, sampleContentProvided: false, deliveryStatus: .delivered,
                                          consumptionPercentage: 25_000, refundPreference: .grantProrated)
        #expect(try await api.sendConsumptionInformation(course.transactionID, good) == .production)
        // The sandbox's transaction is found there after production's 4040010.
        #expect(try await api.sendConsumptionInformation(sandbox.transactionID, good) == .sandbox)
        let received = harness.simulator.consumptionReceived
        #expect(received.map(\.transactionId) == [course.transactionID, sandbox.transactionID])
        #expect(try JSONValue.parse(Array(received[0].body.utf8)) == good.json)
        func code(_ id: String, _ information: ConsumptionInformation) async -> Int? {
            do {
                _ = try await api.sendConsumptionInformation(id, information)
                return nil
            } catch {
                return error.errorCode ?? error.status
            }
        }
        var refused = good
        refused.customerConsented = false
        #expect(await code(course.transactionID, refused) == 4_000_035)
        do {
            _ = try await api.sendConsumptionInformation(course.transactionID, refused)
        } catch {
            // Apple's own words for InvalidCustomerConsentedError.
            #expect(error.description.contains("The customer consented field is required and must indicate the customer consented"),
                    "\(error)")
        }
        refused = good
        refused.consumptionPercentage = 100_001
        #expect(await code(course.transactionID, refused) == 4_000_000)
        refused = good
        refused.deliveryStatus = .undeliveredOther
        #expect(await code(course.transactionID, refused) == 4_000_000)
        refused = good
        refused.consumptionPercentage = 0
        #expect(await code(course.transactionID, refused) == 4_000_044)
        // Apple: GRANT_PRORATED takes a percentage "greater than 0 and less than 100000".
        refused.consumptionPercentage = 100_000
        #expect(await code(course.transactionID, refused) == 4_000_044)
        #expect(refused.violation()?.errorCode == 4_000_044)
        refused.refundPreference = .grantFull
        #expect(refused.violation() == nil)
        #expect(await code(subscription.transactionID, good) == 4_000_209)
        #expect(await code("2000000999999999", good) == 4_040_010)
        #expect(harness.simulator.consumptionReceived.count == 2)
    }

    @Test func consumptionRequestsAndRefundReversalsAreNotifiedAsAppleNotifiesThem() async throws {
        let harness = try AppStoreHarness()
        try await harness.withNotifyLoop {
            let bought = try harness.buy(type: "Consumable")
            try harness.simulator.refund(transactionID: bought.transactionID)
            try harness.simulator.reverseRefund(transactionID: bought.transactionID)
            try harness.simulator.requestConsumption(transactionID: bought.transactionID, reason: "FULFILLMENT_ISSUE")
            #expect(await eventually { harness.inbox.count == 4 })
            let notifications = try harness.inbox.signedPayloads.map { try harness.verifier.verifyNotification($0) }
            let byType = Dictionary(grouping: notifications, by: \.notificationType.rawValue).mapValues { $0[0] }
            #expect(Set(byType.keys) == ["ONE_TIME_CHARGE", "REFUND", "REFUND_REVERSED", "CONSUMPTION_REQUEST"])
            #expect(byType["REFUND"]?.transaction?.revocationDate != nil)
            #expect(byType["REFUND_REVERSED"]?.transaction?.revocationDate == nil)
            #expect(byType["CONSUMPTION_REQUEST"]?.consumptionRequestReason == "FULFILLMENT_ISSUE")
            #expect(harness.simulator.transaction(bought.transactionID)?.revocationDate == nil)
            #expect(throws: AppStoreSimulatorControlError.self) { try harness.simulator.reverseRefund(transactionID: bought.transactionID) }
        }
    }

    @Test func aPurchaseWithoutAPriceCostsWhatTheConfiguredPriceListSays() throws {
        let simulator = try AppStoreSimulator(
            configuration: AppStoreSimulatorConfiguration(priceOf: { $0 == "course.1" ? (9900, "CNY") : nil }),
            clock: ScaledClock(start: Date(), scale: 0), notificationSender: ClosureNotifySender { _, _ in [] })
        let listed = try simulator.purchase(SimulatedPurchase(user: "a", productID: "course.1"))
        let unlisted = try simulator.purchase(SimulatedPurchase(user: "a", productID: "course.2"))
        let explicit = try simulator.purchase(SimulatedPurchase(user: "a", productID: "course.1", price: 1990, currency: "USD"))
        #expect(simulator.transaction(listed.transactionID)?.price == 9900)
        #expect(simulator.transaction(unlisted.transactionID)?.price == 68000)
        #expect(simulator.transaction(unlisted.transactionID)?.currency == "CNY")
        #expect(simulator.transaction(explicit.transactionID)?.price == 1990)
        #expect(simulator.transaction(explicit.transactionID)?.currency == "USD")
    }
}
