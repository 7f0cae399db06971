// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
@testable import Gateway
import HTTP
import JSON
import SimulatorKit
import StorageCore
import StoreTestSupport
import Testing

/// A consumable StoreKit sold several at once (Apple's `quantity`) is one order that says how many:
/// its view, its `order.paid` event and the support lookup carry the quantity, however the
/// purchase reached its order — the app's report, or support's assignment of a purchase that
/// waited in the ledger.
struct IAPQuantityTests {
    typealias E2E = IAPEndToEndTests
    static let coins = "com.example.coins.60"

    @Test(arguments: GatewayRig.Mode.allCases)
    func aConsumableBoughtThreeAtOnceIsOneOrderThatSaysThreeInItsViewItsEventAndTheSupportLookup(mode: GatewayRig.Mode)
        async throws
    {
        try await E2E.withRig(mode) { rig in
            E2E.dropNotifications(rig)
            let created = try await rig.createOrder("user-q", product: "coins-60")
            #expect(created["quantity"] is NSNull)
            let bought = try rig.appStore.purchase(SimulatedPurchase(
                user: "apple-q", productID: Self.coins, type: "Consumable",
                appAccountToken: UUID(uuidString: E2E.token(created)), quantity: 3))
            let answer = try await rig.report("user-q", ["signed_transaction": bought.signedTransactionInfo])
            #expect(answer.status == 200)
            let number = E2E.number(created)
            #expect(E2E.order(answer)["quantity"] as? Int == 3)
            #expect(E2E.order(answer)["amount"] as? Int == 600)

            let view = try await rig.gateway.send(.get, "/v1/orders/\(number)")
            #expect(view.json["quantity"] as? Int == 3)
            let paid = try #require(try await rig.store.outboxEvents(number).first { $0.type == "order.paid" })
            let event = try #require(try JSONSerialization.jsonObject(with: Data(paid.payload.utf8)) as? [String: Any])
            #expect((event["data"] as? [String: Any])?["quantity"] as? Int == 3)

            let lookup = try await rig.gateway.send(.get, "/v1/support/orders?apple_transaction_id=\(bought.transactionID)",
                                                    token: GatewayRig.support)
            let ledger = lookup.json["apple_transactions"] as? [[String: Any]] ?? []
            #expect(ledger.map { $0["quantity"] as? Int } == [3])
            #expect(try await rig.store.events(number).contains { $0.detail.contains("quantity 3") })
        }
    }

    @Test func aPurchaseOfSeveralThatWaitedForSupportCreditsItsOrderWithItsQuantity() async throws {
        try await E2E.withRig(.inProcess) { rig in
            E2E.dropNotifications(rig)
            let order = E2E.number(try await rig.createOrder("user-r", product: "coins-60"))
            // Bought without the order's token, reported by a bare id: nothing ties it to user-r.
            let bought = try rig.appStore.purchase(SimulatedPurchase(
                user: "apple-r", productID: Self.coins, type: "Consumable", quantity: 2))
            let weak = try await rig.report("user-r", ["transaction_id": bought.transactionID])
            #expect(weak.status == 409)
            #expect(try await rig.store.appleTransaction(bought.transactionID)?.facts.quantity == 2)

            let assigned = try await UnclaimedPurchaseTests.assign(rig, bought.transactionID, order)
            #expect(assigned.status == 200, "\(assigned.json)")
            #expect((assigned.json["order"] as? [String: Any])?["quantity"] as? Int == 2)
            #expect(try await rig.order(order)?.appleQuantity == 2)
        }
    }

    /// An order credited from evidence that gave no count (here: a ledger row from before the
    /// gateway kept counts, credited as it was) gets it from the next piece of evidence that has
    /// one: the app's signed report, Apple's notification, or support's recheck asking Apple.
    @Test func anOrderCreditedWithoutACountGetsItFromTheNextReportNotificationOrRecheck() async throws {
        try await E2E.withRig(.inProcess) { rig in
            E2E.dropNotifications(rig)
            for (index, road) in ["report", "recheck", "notification"].enumerated() {
                let created = try await rig.createOrder("user-s\(index)", product: "coins-60")
                let number = E2E.number(created)
                let bought = try rig.appStore.purchase(SimulatedPurchase(
                    user: "apple-s\(index)", productID: Self.coins, type: "Consumable",
                    appAccountToken: UUID(uuidString: E2E.token(created)), quantity: 3))
                let legacy = AppleTransactionFacts(
                    transactionID: bought.transactionID, originalTransactionID: bought.originalTransactionID, productID: Self.coins,
                    environment: "Production", appAccountToken: E2E.token(created), purchaseDate: rig.gateway.clock.now())
                let at = rig.gateway.clock.now()
                let result = try await rig.store.creditAppleTransaction(AppleCredit(
                    transaction: legacy, userID: "user-s\(index)", newOrder: nil, source: "before counts", outbox: { _ in nil }, at: at))
                guard case .credited(let paid, _) = result else { Issue.record("\(result)"); continue }
                #expect(paid.appleQuantity == nil)

                if road == "report" {
                    let answer = try await rig.report("user-s\(index)", ["signed_transaction": bought.signedTransactionInfo])
                    #expect(answer.status == 200 && E2E.order(answer)["quantity"] as? Int == 3, "\(answer.json)")
                } else if road == "recheck" {
                    let rechecked = try await rig.gateway.send(.post, "/v1/support/orders/\(number)/recheck", token: GatewayRig.support)
                    #expect(rechecked.status == 200)
                } else {
                    // The notification Apple sent (dropped on its way), as its history has it.
                    let api = try #require(rig.iap.clients.serverAPI)
                    let page = try await api.notificationHistory(
                        NotificationHistoryRequest(startDate: at.addingTimeInterval(-60), endDate: at.addingTimeInterval(60),
                                                   transactionID: bought.transactionID),
                        paginationToken: nil, environment: .production)
                    #expect(!page.items.isEmpty)
                    for item in page.items {
                        let body = JSONValue.object(["signedPayload": .string(item.signedPayload)]).bytes()
                        #expect(await rig.iap.handleNotification(body).status == 200)
                    }
                }
                #expect(try await rig.order(number)?.appleQuantity == 3, "\(road)")
                #expect(try await rig.store.appleTransaction(bought.transactionID)?.facts.quantity == 3)
                #expect(try await rig.store.events(number).contains { $0.kind == "appstore_quantity" })
            }
        }
    }

    /// The ledger may know a count its order lacks — it came with evidence naming another token,
    /// which the ledger (knowing none) took and the order did not — and the order's own evidence
    /// with the same count then fills the order, though the ledger has nothing left to fill.
    @Test func anOrderLackingACountTheLedgerKnowsGetsItFromItsOwnEvidence() async throws {
        try await E2E.withRig(.inProcess) { rig in
            E2E.dropNotifications(rig)
            let created = try await rig.createOrder("user-t", product: "coins-60")
            let number = E2E.number(created)
            let bought = try rig.appStore.purchase(SimulatedPurchase(
                user: "apple-t", productID: Self.coins, type: "Consumable",
                appAccountToken: UUID(uuidString: E2E.token(created)), quantity: 3))
            let at = rig.gateway.clock.now()
            var facts = AppleTransactionFacts(
                transactionID: bought.transactionID, originalTransactionID: bought.originalTransactionID, productID: Self.coins,
                environment: "Production", purchaseDate: at)
            guard case .credited = try await rig.store.creditAppleTransaction(AppleCredit(
                transaction: facts, userID: "user-t", newOrder: nil, source: "a receipt", outbox: { _ in nil }, at: at))
            else { Issue.record("not credited"); return }
            facts.appAccountToken = UUID().uuidString.lowercased()
            facts.quantity = 3
            facts.price = 1_800_000
            facts.currency = "CNY"
            facts.storefront = "CHN"
            _ = try await rig.store.creditAppleTransaction(AppleCredit(
                transaction: facts, userID: nil, newOrder: nil, source: "another token", outbox: { _ in nil }, at: at))
            #expect(try await rig.order(number)?.appleQuantity == nil)
            #expect(try await rig.store.appleTransaction(bought.transactionID)?.facts.quantity == 3)

            let answer = try await rig.report("user-t", ["signed_transaction": bought.signedTransactionInfo])
            #expect(answer.status == 200 && E2E.order(answer)["quantity"] as? Int == 3, "\(answer.json)")
            #expect(try await rig.order(number)?.appleQuantity == 3)
        }
    }
}
