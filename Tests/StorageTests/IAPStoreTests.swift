// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

/// The App Store ledger and the matching of a transaction to its order (IAPStore), on both stores.
struct IAPStoreTests {
    static let product = "com.example.courses.swift101"

    static func appleOrder(_ outTradeNo: String, user: String? = "u-a", product: String = IAPStoreTests.product,
                           token: String? = nil, createdAt: Date = TestTime.t0) -> OrderRecord {
        OrderRecord(
            outTradeNo: outTradeNo, amount: 990, description: "Swift 入门课", clientIP: "", userID: user,
            productID: "swift-101", signType: "", timeExpire: "20231115061320", expiresAt: createdAt.addingTimeInterval(7200),
            createdAt: createdAt, parametersDigest: "apple|\(outTradeNo)", channel: .apple, appleProductID: product,
            appAccountToken: token ?? UUID().uuidString.lowercased())
    }

    static func facts(_ id: String, token: String? = nil, product: String = IAPStoreTests.product,
                      revoked: Date? = nil, original: String? = nil) -> AppleTransactionFacts {
        AppleTransactionFacts(transactionID: id, originalTransactionID: original ?? id, productID: product,
                              environment: "Production", appAccountToken: token, purchaseDate: TestTime.at(30),
                              revocationDate: revoked)
    }

    static func credit(_ facts: AppleTransactionFacts, user: String?, outTradeNo: String? = nil, newOrder: String? = nil,
                       at: Date = TestTime.at(40)) -> AppleCredit {
        AppleCredit(
            transaction: facts, userID: user, outTradeNo: outTradeNo,
            newOrder: newOrder.map { AppleNewOrder(order: appleOrder($0, user: user, createdAt: at),
                                                   event: NewOrderEvent(kind: "created", detail: "for \(facts.transactionID)", at: at)) },
            source: "test", outbox: { order in Fixture.paid(order.outTradeNo, id: "evt-\(order.outTradeNo)", at: at) },
            events: { decision in [NewOrderEvent(kind: "appstore_match", detail: decision.matchedBy.rawValue, at: at)] },
            at: at)
    }

    @Test(arguments: StoreKind.all) func theOrderWhoseTokenTheTransactionCarriesIsCreditedWithItsAppleFields(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let token = UUID().uuidString.lowercased()
            try await Fixture.create(Self.appleOrder("A1", token: token), in: store)
            try await Fixture.create(Self.appleOrder("A0", createdAt: TestTime.at(-100)), in: store)
            let result = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000001", token: token), user: "u-a"))
            guard case .credited(let order, .appAccountToken) = result else { Issue.record("\(result)"); return }
            #expect(order.outTradeNo == "A1")
            #expect(order.state == .success)
            #expect(order.appleTransactionID == "2000000000000001")
            #expect(order.originalTransactionID == "2000000000000001")
            #expect(order.environment == "Production")
            #expect(order.paidAt == TestTime.at(30))
            #expect(order.channel == .apple)
            let events = try await store.events("A1")
            #expect(events.map(\.kind) == ["created", "state_changed", "appstore_match"])
            #expect(events[1].detail == "NOTPAY -> SUCCESS: test")
            #expect(try await store.outboxEvents("A1").count == 1)
            let ledger = try #require(try await store.appleTransaction("2000000000000001"))
            #expect(ledger.outTradeNo == "A1")
            #expect(ledger.matchedBy == .appAccountToken)
            #expect(try await store.orders(appleTransactionID: "2000000000000001").map(\.outTradeNo) == ["A1"])
            #expect(try await store.order(appAccountToken: token)?.outTradeNo == "A1")
        }
    }

    @Test(arguments: StoreKind.all) func aTransactionCreditedBeforeIsAlreadyCreditedAndWritesNothingMore(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Self.appleOrder("B1"), in: store)
            try await Fixture.create(Self.appleOrder("B2", createdAt: TestTime.at(5)), in: store)
            let facts = Self.facts("2000000000000002")
            guard case .credited(let first, .userProduct) = try await store.creditAppleTransaction(Self.credit(facts, user: "u-a")) else {
                Issue.record("not credited"); return
            }
            #expect(first.outTradeNo == "B1")
            // Again, by another user and with another order named: still the one order.
            let again = try await store.creditAppleTransaction(Self.credit(facts, user: "u-b", outTradeNo: "B2", newOrder: "B9"))
            guard case .alreadyCredited(let order, .userProduct) = again else { Issue.record("\(again)"); return }
            #expect(order.outTradeNo == "B1")
            #expect(try await store.order("B2")?.state == .notPay)
            #expect(try await store.order("B9") == nil)
            #expect(try await store.outboxEvents("B1").count == 1)
            #expect(try await store.events("B1").count == 3)
        }
    }

    @Test(arguments: StoreKind.all) func withoutATokenTheNamedOrderWinsThenTheUsersOldestOpenOrderForTheProduct(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Self.appleOrder("C1", createdAt: TestTime.at(1)), in: store)
            try await Fixture.create(Self.appleOrder("C2", createdAt: TestTime.at(2)), in: store)
            try await Fixture.create(Self.appleOrder("C3", createdAt: TestTime.at(3)), in: store)
            try await Fixture.create(Self.appleOrder("C0", product: "com.example.other", createdAt: TestTime.at(0)), in: store)
            try await Fixture.create(Self.appleOrder("Cx", user: "u-b", createdAt: TestTime.at(-1)), in: store)
            let named = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000010"), user: "u-a", outTradeNo: "C2"))
            #expect(named == .credited(try #require(try await store.order("C2")), .outTradeNo))
            // Another user's order, or another product's, is never the one named or the oldest.
            let oldest = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000011"), user: "u-a", outTradeNo: "Cx"))
            #expect(oldest == .credited(try #require(try await store.order("C1")), .userProduct))
            #expect(try await store.events("C1").map(\.kind) == ["created", "state_changed", "appstore_match"])
            #expect(try await store.order("Cx")?.state == .notPay)
            #expect(try await store.order("C0")?.state == .notPay)
        }
    }

    @Test(arguments: StoreKind.all) func theTokensOrderWinsOverTheUserWhoReportsIt(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let token = UUID().uuidString.lowercased()
            try await Fixture.create(Self.appleOrder("D1", user: "u-a", token: token), in: store)
            try await Fixture.create(Self.appleOrder("D2", user: "u-b"), in: store)
            let result = try await store.creditAppleTransaction(
                Self.credit(Self.facts("2000000000000020", token: token), user: "u-b", outTradeNo: "D2"))
            guard case .credited(let order, .appAccountToken) = result else { Issue.record("\(result)"); return }
            #expect(order.outTradeNo == "D1")
            #expect(order.userID == "u-a")
            #expect(try await store.order("D2")?.state == .notPay)
        }
    }

    @Test(arguments: StoreKind.all) func aTokenOrderClosedAtItsExpiryIsPaidAfterCloseAndFlagged(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let token = UUID().uuidString.lowercased()
            try await Fixture.create(Self.appleOrder("E1", token: token), in: store)
            _ = try await store.transition("E1", to: .closed, from: OrderState.open, detail: "expired", at: TestTime.at(10))
            let result = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000030", token: token), user: "u-a"))
            guard case .credited(let order, .appAccountToken) = result else { Issue.record("\(result)"); return }
            #expect(order.state == .success)
            #expect(order.flags == [.paidAfterClose])
            #expect(try await store.events("E1").map(\.detail).contains("CLOSED -> SUCCESS: test (paid after close)"))
        }
    }

    @Test(arguments: StoreKind.all) func aPaidTransactionWithNoOpenOrderGetsAFlaggedNewOrderOrWaitsWhenNoUserIsKnown(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            // A token naming no order, and nobody known: recorded, credits nothing yet.
            let facts = Self.facts("2000000000000040", token: UUID().uuidString.lowercased())
            let waiting = try await store.creditAppleTransaction(Self.credit(facts, user: nil, newOrder: nil))
            guard case .unmatched(let row) = waiting else { Issue.record("\(waiting)"); return }
            #expect(row.outTradeNo == nil)
            #expect(try await store.unmatchedAppleTransactionCount() == 1)
            #expect(try await store.unmatchedAppleTransactions(before: TestTime.at(100), limit: 10).map(\.transactionID)
                    == ["2000000000000040"])
            // Then its user reports it: a new order, flagged for support.
            let made = try await store.creditAppleTransaction(Self.credit(facts, user: "u-a", newOrder: "F9"))
            guard case .credited(let order, .newOrder) = made else { Issue.record("\(made)"); return }
            #expect(order.outTradeNo == "F9")
            #expect(order.userID == "u-a")
            #expect(order.flags == [.matchedWithoutOrder])
            #expect(try await store.events("F9").map(\.kind) == ["created", "state_changed", "appstore_match"])
            #expect(try await store.unmatchedAppleTransactionCount() == 0)
            #expect(try await store.latestAppleTransaction(userID: "u-a")
                    == AppleAnchor(userID: "u-a", transactionID: "2000000000000040", environment: "Production"))
        }
    }

    @Test(arguments: StoreKind.all)
    func aSubscriptionsTokenCarriedOnToALaterPurchaseDoesNotNameItsUser(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let monthly = "com.example.vip.monthly", yearly = "com.example.vip.yearly"
            let token = UUID().uuidString.lowercased()
            try await Fixture.create(Self.appleOrder("M1", user: "u-a", product: monthly, token: token), in: store)
            let first = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000500", token: token, product: monthly),
                                                                           user: "u-a"))
            guard case .credited(_, .appAccountToken) = first else { Issue.record("\(first)"); return }
            // An upgrade in the App Store's settings carries the subscription's token: whoever the
            // caller found pays for it (u-b's yearly order), not the token's user.
            try await Fixture.create(Self.appleOrder("Y1", user: "u-b", product: yearly), in: store)
            let upgrade = Self.facts("2000000000000501", token: token, product: yearly, original: "2000000000000500")
            let nobody = try await store.creditAppleTransaction(Self.credit(upgrade, user: nil))
            guard case .unmatched = nobody else { Issue.record("credited to the token's user: \(nobody)"); return }
            let result = try await store.creditAppleTransaction(Self.credit(upgrade, user: "u-b"))
            guard case .credited(let order, .userProduct) = result else { Issue.record("\(result)"); return }
            #expect(order.outTradeNo == "Y1" && order.userID == "u-b")
            // The same token on another subscription's purchase is still the app's word (a reused token).
            let other = Self.facts("2000000000000502", token: token)
            let made = try await store.creditAppleTransaction(Self.credit(other, user: "u-b", newOrder: "N1"))
            guard case .credited(let named, .newOrder) = made else { Issue.record("\(made)"); return }
            #expect(named.userID == "u-a")
        }
    }

    @Test(arguments: StoreKind.all) func anOrderPaidAfterItsExpiryIsFlaggedPaidAfterCloseThoughNotClosedYet(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Self.appleOrder("X1"), in: store)
            // Bought at t=30 s, in the order's life; credited three hours on, the sweep behind.
            let result = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000510"), user: "u-a",
                                                                            at: TestTime.at(3 * 3600)))
            guard case .credited(let order, .userProduct) = result else { Issue.record("\(result)"); return }
            #expect(order.outTradeNo == "X1" && order.flags == [.paidAfterClose])
            // In its life: no flag.
            try await Fixture.create(Self.appleOrder("X2"), in: store)
            let timely = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000511"), user: "u-a"))
            guard case .credited(let paid, .userProduct) = timely else { Issue.record("\(timely)"); return }
            #expect(paid.outTradeNo == "X2" && paid.flags.isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func aRevokedTransactionNeverCreditsAnOrder(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Self.appleOrder("G1"), in: store)
            // Apple's refund notification came before anyone reported the purchase.
            let revoked = try await store.recordAppleRevocation(Self.facts("2000000000000050", revoked: TestTime.at(35)),
                                                                source: "notification REFUND", at: TestTime.at(36))
            #expect(revoked.facts.revocationDate == TestTime.at(35))
            let result = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000050"), user: "u-a"))
            guard case .revoked = result else { Issue.record("\(result)"); return }
            // A transaction that says so itself is recorded as revoked too.
            let itself = try await store.creditAppleTransaction(
                Self.credit(Self.facts("2000000000000051", revoked: TestTime.at(31)), user: "u-a"))
            guard case .revoked(let row) = itself else { Issue.record("\(itself)"); return }
            #expect(row.isRevoked)
            #expect(try await store.order("G1")?.state == .notPay)
            #expect(try await store.unmatchedAppleTransactionCount() == 0)
        }
    }

    @Test(arguments: StoreKind.all) func concurrentCreditsOfOneTransactionCreditExactlyOneOrder(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            for index in 0..<10 {
                try await Fixture.create(Self.appleOrder("H\(index)", user: "u-\(index % 3)", createdAt: TestTime.at(Double(index))), in: store)
            }
            let facts = Self.facts("2000000000000060")
            let results = await withTaskGroup(of: AppleCreditResult?.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        try? await store.creditAppleTransaction(Self.credit(
                            facts, user: "u-\(index % 4)", outTradeNo: "H\(index % 10)", newOrder: "H-new-\(index)"))
                    }
                }
                var all: [AppleCreditResult?] = []
                for await result in group { all.append(result) }
                return all
            }
            let credited = results.filter { if case .credited = $0 { true } else { false } }
            #expect(credited.count == 1)
            #expect(results.allSatisfy { $0 != nil })
            let paid = try await store.orders(appleTransactionID: "2000000000000060")
            #expect(paid.count == 1)
            for result in results {
                if case .alreadyCredited(let order, _) = result { #expect(order.outTradeNo == paid.first?.outTradeNo) }
            }
            #expect(try await store.outboxEvents(try #require(paid.first).outTradeNo).count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func theDatabaseItselfRefusesASecondOrderForOneTransaction(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, database async throws in
            try await Fixture.create(Self.appleOrder("J1"), in: store)
            try await Fixture.create(Self.appleOrder("J2", user: "u-b"), in: store)
            _ = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000070"), user: "u-a"))
            // Whatever code runs against the database: the orders' unique index, the ledger's set-once
            // order, the append-only ledger, the door's own column never rewritten.
            #expect(await database.execute("UPDATE orders SET apple_transaction_id = '2000000000000070' WHERE out_trade_no = 'J2'") == false)
            #expect(await database.execute("UPDATE apple_transactions SET out_trade_no = 'J2' WHERE transaction_id = '2000000000000070'") == false)
            #expect(await database.execute("DELETE FROM apple_transactions") == false)
            #expect(await database.execute("UPDATE orders SET apple_transaction_id = '2000000000000099' WHERE out_trade_no = 'J1'") == false)
            #expect(await database.execute("UPDATE orders SET app_account_token = NULL WHERE out_trade_no = 'J2'") == false)
            #expect(await database.execute("UPDATE orders SET state = 'NOTPAY' WHERE out_trade_no = 'J1'") == false)
            // The guards refuse only what they must: an update that keeps those columns passes.
            #expect(await database.execute(
                "UPDATE orders SET state = state, channel = channel, app_account_token = app_account_token WHERE out_trade_no = 'J1'"))
            #expect(try await store.order("J1")?.state == .success)
            #expect(try await store.order("J2")?.state == .notPay)
            #expect(try await store.orders(appleTransactionID: "2000000000000070").map(\.outTradeNo) == ["J1"])
            // Through the door as well: a transition carrying a transaction another order holds.
            do throws(StorageError) {
                _ = try await store.transition(
                    "J2", to: .success, from: OrderState.open, at: TestTime.at(50),
                    apple: AppleTransactionFields(transactionID: "2000000000000070", originalTransactionID: "2000000000000070",
                                                  environment: "Production"))
                Issue.record("the unique index must refuse it")
            } catch {
                #expect(error == .constraint)
            }
            #expect(try await store.order("J2")?.state == .notPay)
        }
    }

    @Test(arguments: StoreKind.all) func byUserAndProductAPurchasePaysOnlyAnOrderOpenWhenItWasMade(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            // Made after the purchase (at t=30 s): for a purchase still to come. Expired before it
            // and not closed yet: none it paid.
            try await Fixture.create(Self.appleOrder("LATE", createdAt: TestTime.at(30 + AppleCredit.clockMargin + 1)), in: store)
            try await Fixture.create(Self.appleOrder("STALE", createdAt: TestTime.at(30 - 7200 - AppleCredit.clockMargin - 1)), in: store)
            let result = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000095"), user: "u-a", newOrder: "MADE"))
            guard case .credited(let order, .newOrder) = result else { Issue.record("\(result)"); return }
            #expect(order.outTradeNo == "MADE")
            #expect(try await store.order("LATE")?.state == .notPay)
            #expect(try await store.order("STALE")?.state == .notPay)
            // One open when it was made is paid, even if the gateway's clock says it was made a
            // little after (Apple's clock is not ours).
            try await Fixture.create(Self.appleOrder("OPEN", createdAt: TestTime.at(30 + AppleCredit.clockMargin - 1)), in: store)
            let second = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000096"), user: "u-a", newOrder: "MADE2"))
            guard case .credited(let paid, .userProduct) = second else { Issue.record("\(second)"); return }
            #expect(paid.outTradeNo == "OPEN")
        }
    }

    @Test(arguments: StoreKind.all) func theLedgerKeepsApplesReasonAndFillsItInFromEvidenceThatGivesIt(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            var renewal = Self.facts("2000000000000091", original: "2000000000000090")
            renewal.quantity = 1
            renewal.renewal = true
            _ = try await store.creditAppleTransaction(Self.credit(renewal, user: nil))
            #expect(try await store.appleTransaction("2000000000000091")?.facts.renewal == true)
            // Evidence without it (a receipt's entry) changes nothing; the first word stands.
            var silent = renewal
            silent.renewal = nil
            _ = try await store.creditAppleTransaction(Self.credit(silent, user: nil))
            var contrary = renewal
            contrary.renewal = false
            _ = try await store.creditAppleTransaction(Self.credit(contrary, user: nil))
            #expect(try await store.appleTransaction("2000000000000091")?.facts.renewal == true)

            // First seen without it, filled in by Apple's signed word.
            var purchase = Self.facts("2000000000000092")
            purchase.quantity = 1
            _ = try await store.creditAppleTransaction(Self.credit(purchase, user: nil))
            #expect(try await store.appleTransaction("2000000000000092")?.facts.renewal == nil)
            purchase.renewal = false
            _ = try await store.creditAppleTransaction(Self.credit(purchase, user: nil))
            #expect(try await store.appleTransaction("2000000000000092")?.facts.renewal == false)
        }
    }

    @Test(arguments: StoreKind.all) func aTokenNamesOneOrder(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let token = UUID().uuidString.lowercased()
            try await Fixture.create(Self.appleOrder("K1", token: token), in: store)
            do throws(StorageError) {
                _ = try await store.create(Self.appleOrder("K2", token: token), event: Fixture.created)
                Issue.record("a second order with the same token must be refused")
            } catch {
                #expect(error == .constraint)
            }
        }
    }

    @Test(arguments: StoreKind.all) func aNotificationIsRecordedOncePerUUID(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let record = AppStoreNotificationRecord(
                notificationUUID: "6f0c3b2e-0000-4000-8000-000000000001", notificationType: "ONE_TIME_CHARGE", subtype: nil,
                environment: "Production", transactionID: "2000000000000080", signedDate: TestTime.at(1),
                receivedAt: TestTime.at(2), outcome: "credited")
            #expect(try await store.appStoreNotification(record.notificationUUID) == nil)
            #expect(try await store.recordAppStoreNotification(record))
            var again = record
            again.outcome = "something else"
            #expect(try await store.recordAppStoreNotification(again) == false)
            #expect(try await store.appStoreNotification(record.notificationUUID) == record)
        }
    }

    @Test(arguments: StoreKind.all) func refundAnchorsNameOneTransactionPerUserAndEnvironment(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            for (index, user) in ["u-a", "u-a", "u-b"].enumerated() {
                try await Fixture.create(Self.appleOrder("L\(index)", user: user, createdAt: TestTime.at(Double(index))), in: store)
                _ = try await store.creditAppleTransaction(Self.credit(Self.facts("200000000000009\(index)"), user: user))
            }
            let anchors = try await store.appleRefundAnchors(paidSince: TestTime.t0, limit: 10)
            #expect(anchors.map(\.userID) == ["u-a", "u-b"])
            #expect(anchors.first?.transactionID == "2000000000000091")
            #expect(try await store.appleRefundAnchors(paidSince: TestTime.at(31), limit: 10).isEmpty)
            // WeChat orders stay WeChat's.
            try await Fixture.create(Fixture.order("W1"), in: store)
            #expect(try await store.order("W1")?.channel == .wechat)
        }
    }

    @Test(arguments: StoreKind.all)
    func howManyATransactionSoldIsKeptInTheLedgerAndOnTheOrderItCreditsWhenItIsCreditedLater(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let token = UUID().uuidString.lowercased()
            try await Fixture.create(Self.appleOrder("Q1", token: token), in: store)
            var three = Self.facts("2000000000000081", token: token)
            three.quantity = 3
            guard case .credited(let order, _) = try await store.creditAppleTransaction(Self.credit(three, user: "u-a")) else {
                Issue.record("not credited"); return
            }
            #expect(order.appleQuantity == 3)
            #expect(try await store.order("Q1")?.appleQuantity == 3)
            #expect(try await store.appleTransaction("2000000000000081")?.facts.quantity == 3)

            // Unclaimed first (nobody known): the ledger keeps the quantity, and a later credit
            // from the ledger's own facts (support's assignment) puts it on the order.
            var two = Self.facts("2000000000000082")
            two.quantity = 2
            guard case .unmatched = try await store.creditAppleTransaction(Self.credit(two, user: nil)) else {
                Issue.record("credited without a user"); return
            }
            let waiting = try #require(try await store.appleTransaction("2000000000000082"))
            #expect(waiting.facts.quantity == 2 && waiting.outTradeNo == nil)
            try await Fixture.create(Self.appleOrder("Q2"), in: store)
            var assignment = Self.credit(waiting.facts, user: "u-a", outTradeNo: "Q2")
            assignment.assignedBy = "support"
            guard case .credited(let assigned, .outTradeNo) = try await store.creditAppleTransaction(assignment) else {
                Issue.record("not assigned"); return
            }
            #expect(assigned.appleQuantity == 2)
            #expect(try await store.order("Q2")?.appleQuantity == 2)

            // The ledger's count stands against later evidence that says otherwise (a receipt
            // answer with another or no quantity); evidence that says fills a ledger that did not.
            var four = Self.facts("2000000000000085")
            four.quantity = 4
            _ = try await store.creditAppleTransaction(Self.credit(four, user: nil))
            try await Fixture.create(Self.appleOrder("Q5", user: "u-e"), in: store)
            var otherCount = four
            otherCount.quantity = 1
            guard case .credited(let counted, _) = try await store.creditAppleTransaction(Self.credit(otherCount, user: "u-e")) else {
                Issue.record("not credited"); return
            }
            #expect(counted.appleQuantity == 4)
            _ = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000086"), user: nil))
            try await Fixture.create(Self.appleOrder("Q6", user: "u-f"), in: store)
            var said = Self.facts("2000000000000086")
            said.quantity = 5
            guard case .credited(let filled, _) = try await store.creditAppleTransaction(Self.credit(said, user: "u-f")) else {
                Issue.record("not credited"); return
            }
            #expect(filled.appleQuantity == 5)

            // Evidence that did not say leaves it unknown; an unpaid order has none.
            try await Fixture.create(Self.appleOrder("Q3", user: "u-c"), in: store)
            guard case .credited(let unknown, _) = try await store.creditAppleTransaction(
                Self.credit(Self.facts("2000000000000083"), user: "u-c")) else { Issue.record("not credited"); return }
            #expect(unknown.appleQuantity == nil)
            try await Fixture.create(Self.appleOrder("Q4", user: "u-d"), in: store)
            #expect(try await store.order("Q4")?.appleQuantity == nil)
            // Later evidence with a count and a charge fills both in, once, with a timeline line;
            // evidence saying another count after that changes nothing.
            var later = Self.facts("2000000000000083")
            later.quantity = 3
            later.price = 18000
            later.currency = "CNY"
            guard case .alreadyCredited(let filledIn, _) = try await store.creditAppleTransaction(Self.credit(later, user: nil)) else {
                Issue.record("not already credited"); return
            }
            #expect(filledIn.appleQuantity == 3 && filledIn.outTradeNo == "Q3")
            let ledgerFilled = try #require(try await store.appleTransaction("2000000000000083"))
            #expect(ledgerFilled.facts.quantity == 3 && ledgerFilled.facts.price == 18000 && ledgerFilled.facts.currency == "CNY")
            var contrary = later
            contrary.quantity = 5
            contrary.price = 1
            _ = try await store.creditAppleTransaction(Self.credit(contrary, user: nil))
            #expect(try await store.order("Q3")?.appleQuantity == 3)
            #expect(try await store.appleTransaction("2000000000000083")?.facts.price == 18000)
            #expect(try await store.events("Q3").filter { $0.kind == "appstore_quantity" }.map(\.detail) == ["quantity 3, from test"])

            // Evidence that names another product, environment or token fills nothing; Apple's word
            // that agrees fills the order whoever relays it (here another user's report).
            try await Fixture.create(Self.appleOrder("Q7", user: "u-g"), in: store)
            _ = try await store.creditAppleTransaction(Self.credit(Self.facts("2000000000000087"), user: "u-g"))
            var otherProduct = Self.facts("2000000000000087", product: "com.example.courses.other")
            otherProduct.quantity = 2
            var otherEnvironment = Self.facts("2000000000000087")
            otherEnvironment.environment = "Sandbox"
            otherEnvironment.quantity = 2
            var otherToken = Self.facts("2000000000000087", token: UUID().uuidString.lowercased())
            otherToken.quantity = 2
            for contrary in [otherProduct, otherEnvironment] {
                _ = try await store.creditAppleTransaction(Self.credit(contrary, user: nil))
            }
            #expect(try await store.appleTransaction("2000000000000087")?.facts.quantity == nil)
            // (The ledger row knew no token, so a token's evidence may fill it; never the order of another token.)
            _ = try await store.creditAppleTransaction(Self.credit(otherToken, user: nil))
            #expect(try await store.order("Q7")?.appleQuantity == nil)
            var relayed = Self.facts("2000000000000087")
            relayed.quantity = 2
            _ = try await store.creditAppleTransaction(Self.credit(relayed, user: "u-other"))
            #expect(try await store.order("Q7")?.appleQuantity == 2)
            var five = Self.facts("2000000000000088")
            five.quantity = 5
            _ = try await store.creditAppleTransaction(Self.credit(five, user: nil))
            var priced = five
            priced.quantity = 3
            priced.price = 18000
            priced.currency = "CNY"
            _ = try await store.creditAppleTransaction(Self.credit(priced, user: nil))
            var uncounted = five
            uncounted.quantity = nil
            uncounted.price = 6000
            uncounted.currency = "CNY"
            _ = try await store.creditAppleTransaction(Self.credit(uncounted, user: nil))
            let kept = try #require(try await store.appleTransaction("2000000000000088"))
            #expect(kept.facts.quantity == 5 && kept.facts.price == nil && kept.facts.currency == nil)

            // A quantity outside Apple's range is refused before anything is written.
            var none = Self.facts("2000000000000084")
            none.quantity = 0
            await #expect(throws: StorageError.self) {
                _ = try await store.creditAppleTransaction(Self.credit(none, user: "u-d"))
            }
            #expect(try await store.appleTransaction("2000000000000084") == nil)
            #expect(try await store.order("Q4")?.state == .notPay)
        }
    }
}
