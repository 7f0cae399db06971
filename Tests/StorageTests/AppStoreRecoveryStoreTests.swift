// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

/// What Apple's recovery and refund-defence APIs keep in the store, on both stores: an unknown
/// product's order and what Apple charged, refund reversals, the attention list, the notification
/// history's progress and lease, and consumption requests.
struct AppStoreRecoveryStoreTests {
    static func facts(_ id: String, product: String = IAPStoreTests.product, revoked: Date? = nil) -> AppleTransactionFacts {
        AppleTransactionFacts(transactionID: id, originalTransactionID: id, productID: product, environment: "Production",
                              purchaseDate: TestTime.at(30), revocationDate: revoked, price: 13990, currency: "USD",
                              storefront: "USA")
    }

    @Test(arguments: StoreKind.all) func anUnknownProductsOrderKeepsApplesCurrencyAndTheLedgerWhatAppleCharged(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            var order = IAPStoreTests.appleOrder("U1", product: "com.example.unknown")
            order.amount = 1399
            order.currency = "USD"
            order.productID = nil
            let credit = AppleCredit(
                transaction: Self.facts("2000000000000101", product: "com.example.unknown"), userID: "u-a",
                newOrder: AppleNewOrder(order: order, event: NewOrderEvent(kind: "created", detail: "made", at: TestTime.at(40)),
                                        flags: [.unknownProduct]),
                source: "test", outbox: { Fixture.paid($0.outTradeNo, at: TestTime.at(40)) }, at: TestTime.at(40))
            guard case .credited(let paid, .newOrder) = try await store.creditAppleTransaction(credit) else {
                Issue.record("not credited"); return
            }
            #expect(paid.flags == [.unknownProduct, .matchedWithoutOrder])
            #expect(paid.currency == "USD" && paid.amount == 1399)
            #expect(try await store.order("U1")?.currency == "USD")
            let ledger = try #require(try await store.appleTransaction("2000000000000101"))
            #expect(ledger.facts.price == 13990 && ledger.facts.currency == "USD" && ledger.facts.storefront == "USA")
            // A currency that is not three capitals is refused before anything is written.
            var bad = IAPStoreTests.appleOrder("U2")
            bad.currency = "usd"
            await #expect(throws: StorageError.self) { _ = try await store.create(bad, event: NewOrderEvent(kind: "created", detail: "", at: TestTime.t0)) }
            #expect(try await store.order("U2") == nil)
        }
    }

    /// 24 copies racing to append `line(i)` to `order`, quiet since 60 s before their time: how many wrote.
    static func racingQuietLines(on order: String, in store: some OrderStore, matching: QuietLineMatch,
                                 _ line: @escaping @Sendable (Int) -> NewOrderEvent) async throws -> Int {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for i in 0..<24 {
                group.addTask { try await store.appendEvent(order, line(i), quietSince: TestTime.at(-50), matching: matching) != nil }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
    }

    /// Reports of a transaction credited before add at most one line a minute to its order,
    /// however many race: the check and the insert are one step under the order's lock.
    @Test(arguments: StoreKind.all) func aQuietLineIsWrittenOncePerQuietPeriodWhateverRaces(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            _ = try await store.create(IAPStoreTests.appleOrder("Q1"), event: NewOrderEvent(kind: "created", detail: "", at: TestTime.t0))
            let written = try await Self.racingQuietLines(on: "Q1", in: store, matching: .kind) {
                NewOrderEvent(kind: "appstore_report", detail: "copy \($0)", at: TestTime.at(10))
            }
            #expect(written == 1)
            // Another kind is its own; after the quiet period the kind is written again; an
            // unknown order gets nothing.
            #expect(try await store.appendEvent("Q1", NewOrderEvent(kind: "appstore_refund", detail: "r", at: TestTime.at(11)),
                                                quietSince: TestTime.at(-49)) != nil)
            #expect(try await store.appendEvent("Q1", NewOrderEvent(kind: "appstore_report", detail: "later", at: TestTime.at(71)),
                                                quietSince: TestTime.at(11)) != nil)
            #expect(try await store.appendEvent("nobody", NewOrderEvent(kind: "appstore_report", detail: "x", at: TestTime.at(72)),
                                                quietSince: TestTime.at(12)) == nil)
            #expect(try await store.events("Q1").filter { $0.kind == "appstore_report" }.count == 2)
        }
    }

    /// Matching the detail too (a refund notify's contradiction, per refund): each thing said once
    /// a period, however many copies race; another detail of the kind is its own line.
    @Test(arguments: StoreKind.all) func aQuietLineMatchingItsDetailIsWrittenOncePerDetail(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            _ = try await store.create(IAPStoreTests.appleOrder("Q2"), event: NewOrderEvent(kind: "created", detail: "", at: TestTime.t0))
            let written = try await Self.racingQuietLines(on: "Q2", in: store, matching: .kindAndDetail) {
                NewOrderEvent(kind: "refund_notify_conflict", detail: "r\($0 % 2)", at: TestTime.at(10))
            }
            #expect(written == 2)
            let lines = try await store.events("Q2").filter { $0.kind == "refund_notify_conflict" }.map(\.detail).sorted()
            #expect(lines == ["r0", "r1"])
            // Matching the kind only, any detail of the kind holds a line back.
            #expect(try await store.appendEvent("Q2", NewOrderEvent(kind: "refund_notify_conflict", detail: "r2", at: TestTime.at(11)),
                                                quietSince: TestTime.at(-49), matching: .kind) == nil)
        }
    }

    @Test(arguments: StoreKind.all) func aReversedRefundClearsTheRevocationAndALateCopyOfThatRefundIsNotAppliedAgain(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let id = "2000000000000102"
            let revoked = try await store.recordAppleRevocation(Self.facts(id, revoked: TestTime.at(100)), source: "REFUND",
                                                                at: TestTime.at(101))
            #expect(revoked.isRevoked)
            let reversed = try await store.recordAppleRefundReversal(Self.facts(id), reversedAt: TestTime.at(200),
                                                                     source: "REFUND_REVERSED", at: TestTime.at(201))
            #expect(!reversed.isRevoked)
            #expect(reversed.refundReversedAt == TestTime.at(200))
            // The same refund arriving again (backfilled late): not applied.
            let stale = try await store.recordAppleRevocation(Self.facts(id, revoked: TestTime.at(100)), source: "REFUND",
                                                              at: TestTime.at(300))
            #expect(!stale.isRevoked)
            // A new refund after the reversal is.
            let again = try await store.recordAppleRevocation(Self.facts(id, revoked: TestTime.at(400)), source: "REFUND",
                                                              at: TestTime.at(401))
            #expect(again.facts.revocationDate == TestTime.at(400))
            // A reversal Apple sent before that newer refund leaves it alone.
            let older = try await store.recordAppleRefundReversal(Self.facts(id), reversedAt: TestTime.at(300),
                                                                  source: "REFUND_REVERSED", at: TestTime.at(402))
            #expect(older.facts.revocationDate == TestTime.at(400))
            #expect(older.refundReversedAt == TestTime.at(300))
            // A reversal of a transaction never seen records it, not revoked.
            let unseen = try await store.recordAppleRefundReversal(Self.facts("2000000000000103"), reversedAt: TestTime.at(50),
                                                                   source: "REFUND_REVERSED", at: TestTime.at(51))
            #expect(!unseen.isRevoked && unseen.outTradeNo == nil)
        }
    }

    @Test(arguments: StoreKind.all) func aSecondRefundAfterAReversalNotYetSeenStandsWhenThatReversalArrivesLate(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let id = "2000000000000104"
            // Apple refunds (100), reverses (200: its notification lost) and refunds again (300).
            _ = try await store.recordAppleRevocation(Self.facts(id, revoked: TestTime.at(100)), source: "REFUND", at: TestTime.at(101))
            let second = try await store.recordAppleRevocation(Self.facts(id, revoked: TestTime.at(300)), source: "REFUND",
                                                               at: TestTime.at(301))
            #expect(second.facts.revocationDate == TestTime.at(300))
            // The lost reversal, read late from the notification history, is older than the refund that stands.
            let late = try await store.recordAppleRefundReversal(Self.facts(id), reversedAt: TestTime.at(200),
                                                                 source: "REFUND_REVERSED", at: TestTime.at(400))
            #expect(late.isRevoked && late.facts.revocationDate == TestTime.at(300))
            // A copy of the first refund changes nothing either.
            let copy = try await store.recordAppleRevocation(Self.facts(id, revoked: TestTime.at(100)), source: "REFUND", at: TestTime.at(401))
            #expect(copy.facts.revocationDate == TestTime.at(300))
        }
    }

    @Test(arguments: StoreKind.all) func theAttentionListHoldsFlaggedOrdersNewestFirstAndTheSearchTakesAppleIds(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            for index in 0..<5 {
                var order = Fixture.order("W\(index)", createdAt: TestTime.at(Double(index)))
                if index != 2 { order.flags = index == 4 ? ["something_else"] : [.paidAfterClose] }
                _ = try await store.create(order, event: NewOrderEvent(kind: "created", detail: "", at: order.createdAt))
            }
            // Flags only change through the door or addFlags; create keeps what the record says.
            _ = try await store.addFlags("W3", [.unknownProduct], at: TestTime.at(10))
            let attention = OrderSearch(flags: OrderFlag.needingAttention)
            let first = try await store.searchOrders(attention, limit: 2, after: nil)
            #expect(first.orders.map(\.outTradeNo) == ["W3", "W1"])
            let second = try await store.searchOrders(attention, limit: 2, after: first.next)
            #expect(second.orders.map(\.outTradeNo) == ["W0"])
            #expect(second.next == nil)
            #expect(try await store.searchOrders(OrderSearch(flags: [.unknownProduct]), limit: 10, after: nil).orders
                .map(\.outTradeNo) == ["W3"])
            // An identifier and flags together.
            #expect(try await store.searchOrders(OrderSearch(identifier: "W2", flags: OrderFlag.needingAttention), limit: 10,
                                                 after: nil).orders.isEmpty)
            // Apple's ids and the token find an iOS order.
            let token = UUID().uuidString.lowercased()
            try await Fixture.create(IAPStoreTests.appleOrder("I1", token: token), in: store)
            _ = try await store.creditAppleTransaction(IAPStoreTests.credit(IAPStoreTests.facts("2000000000000104", token: token,
                                                                                                original: "2000000000000099"),
                                                                            user: "u-a"))
            for identifier in ["2000000000000104", "2000000000000099", token, token.uppercased()] {
                #expect(try await store.searchOrders(OrderSearch(identifier: identifier), limit: 10, after: nil).orders
                    .map(\.outTradeNo) == ["I1"], "\(identifier)")
            }
        }
    }

    @Test(arguments: StoreKind.all) func theBackfillIsLeasedToOneClaimantAndItsProgressOnlyMovesForward(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            #expect(try await store.backfillProgress(environment: "Production") == nil)
            let claimed = try #require(try await store.claimBackfill(
                environment: "Production", claimant: "a", now: TestTime.at(0), leaseUntil: TestTime.at(60), lastRunBefore: nil))
            #expect(claimed.through == nil && claimed.lastRunAt == TestTime.at(0))
            // Held: nobody else gets it.
            #expect(try await store.claimBackfill(environment: "Production", claimant: "b", now: TestTime.at(10),
                                                  leaseUntil: TestTime.at(70), lastRunBefore: nil) == nil)
            #expect(try await store.saveBackfillPage(environment: "Production", claimant: "a", window: TestTime.at(-100)...TestTime.at(0),
                                                     paginationToken: "p2", leaseUntil: TestTime.at(90), at: TestTime.at(20)))
            #expect(try await !store.saveBackfillPage(environment: "Production", claimant: "b", window: TestTime.at(-100)...TestTime.at(0),
                                                      paginationToken: "x", leaseUntil: TestTime.at(90), at: TestTime.at(20)))
            // A failed run keeps its window and token for the next run.
            #expect(try await store.finishBackfill(environment: "Production", claimant: "a", through: nil, error: "timeout",
                                                   at: TestTime.at(30)))
            let failed = try #require(try await store.backfillProgress(environment: "Production"))
            #expect(failed.window == TestTime.at(-100)...TestTime.at(0) && failed.paginationToken == "p2")
            #expect(failed.lastError == "timeout" && failed.through == nil)
            // Not due again until the interval passed since the last run.
            #expect(try await store.claimBackfill(environment: "Production", claimant: "b", now: TestTime.at(31),
                                                  leaseUntil: TestTime.at(91), lastRunBefore: TestTime.at(-29)) == nil)
            let resumed = try #require(try await store.claimBackfill(
                environment: "Production", claimant: "b", now: TestTime.at(61), leaseUntil: TestTime.at(121), lastRunBefore: TestTime.at(1)))
            #expect(resumed.paginationToken == "p2")
            #expect(try await store.finishBackfill(environment: "Production", claimant: "b", through: TestTime.at(0), error: nil,
                                                   at: TestTime.at(62)))
            var done = try #require(try await store.backfillProgress(environment: "Production"))
            #expect(done.through == TestTime.at(0) && done.window == nil && done.paginationToken == nil)
            #expect(done.lastSuccessAt == TestTime.at(62) && done.lastError == nil)
            // A run that read less (a hand-run from an earlier date) never moves it back.
            _ = try await store.claimBackfill(environment: "Production", claimant: "c", now: TestTime.at(70), leaseUntil: TestTime.at(99),
                                              lastRunBefore: nil)
            #expect(try await store.finishBackfill(environment: "Production", claimant: "c", through: TestTime.at(-50), error: nil,
                                                   at: TestTime.at(71)))
            done = try #require(try await store.backfillProgress(environment: "Production"))
            #expect(done.through == TestTime.at(0))
            // Environments are separate.
            #expect(try await store.claimBackfill(environment: "Sandbox", claimant: "a", now: TestTime.at(72), leaseUntil: TestTime.at(99),
                                                  lastRunBefore: nil) != nil)
        }
    }

    static func request(_ id: String, order: String?, at: Date = TestTime.at(0)) -> ConsumptionRequestRecord {
        ConsumptionRequestRecord(id: id, transactionID: "2000000000000200", outTradeNo: order, environment: "Production",
                                 reason: "UNINTENDED_PURCHASE", requestedAt: at, deadline: at.addingTimeInterval(43200))
    }

    @Test(arguments: StoreKind.all) func aConsumptionRequestIsRecordedOnceAnsweredOnceAndFinishedForGood(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(IAPStoreTests.appleOrder("K1"), in: store)
            let requested = NewOrderEvent(kind: "appstore_consumption", detail: "requested", at: TestTime.at(0))
            #expect(try await store.recordConsumptionRequest(Self.request("n1", order: "K1"), events: [requested],
                                                             outbox: Fixture.paid("K1", id: "evt-c1", at: TestTime.at(0))))
            #expect(try await !store.recordConsumptionRequest(Self.request("n1", order: "K1"), events: [requested], outbox: nil))
            #expect(try await store.outboxEvents("K1").map(\.id) == ["evt-c1"])
            #expect(try await store.consumptionRequests(outTradeNo: "K1").map(\.id) == ["n1"])
            // Nothing due yet: not answered, no defaults, deadline far.
            #expect(try await store.claimDueConsumption(now: TestTime.at(10), defaultsDueBefore: nil, limit: 10, claimant: "s",
                                                        leaseUntil: TestTime.at(20), id: nil).isEmpty)
            let answered = try #require(try await store.answerConsumption(
                "n1", answer: #"{"customerConsented":true}"#, consented: true, by: .business, at: TestTime.at(11),
                event: NewOrderEvent(kind: "appstore_consumption", detail: "answered", at: TestTime.at(11))))
            #expect(answered.state == .answered && answered.answeredBy == .business && answered.nextAttemptAt == TestTime.at(11))
            // Once: the defaults (or a second answer) change nothing.
            #expect(try await store.answerConsumption("n1", answer: "{}", consented: true, by: .defaults, at: TestTime.at(12),
                                                      event: nil) == nil)
            let due = try await store.claimDueConsumption(now: TestTime.at(12), defaultsDueBefore: nil, limit: 10, claimant: "s",
                                                          leaseUntil: TestTime.at(30), id: nil)
            #expect(due.map(\.id) == ["n1"])
            // Leased: another sweeper does not get it.
            #expect(try await store.claimDueConsumption(now: TestTime.at(13), defaultsDueBefore: nil, limit: 10, claimant: "t",
                                                        leaseUntil: TestTime.at(30), id: nil).isEmpty)
            let retried = try #require(try await store.finishConsumptionAttempt(
                "n1", claimant: "s", outcome: .retry(next: TestTime.at(60), error: "503"), at: TestTime.at(14), event: nil))
            #expect(retried.state == .answered && retried.attempts == 1 && retried.lastError == "503")
            #expect(try await store.claimDueConsumption(now: TestTime.at(59), defaultsDueBefore: nil, limit: 10, claimant: "s",
                                                        leaseUntil: TestTime.at(90), id: nil).isEmpty)
            #expect(try await store.claimDueConsumption(now: TestTime.at(61), defaultsDueBefore: nil, limit: 10, claimant: "s",
                                                        leaseUntil: TestTime.at(90), id: "n1").map(\.id) == ["n1"])
            let sent = try #require(try await store.finishConsumptionAttempt(
                "n1", claimant: "s", outcome: .sent, at: TestTime.at(62),
                event: NewOrderEvent(kind: "appstore_consumption", detail: "sent", at: TestTime.at(62))))
            // Sent: the error of the attempt before is no longer the request's.
            #expect(sent.state == .sent && sent.sentAt == TestTime.at(62) && sent.attempts == 2 && sent.lastError == nil)
            // Final: no attempt changes it again.
            #expect(try await store.finishConsumptionAttempt("n1", claimant: "s", outcome: .expired, at: TestTime.at(63),
                                                             event: nil) == nil)
            #expect(try await store.events("K1").map(\.detail).suffix(3) == ["requested", "answered", "sent"])
        }
    }

    @Test(arguments: StoreKind.all) func anAnswerAppleRefusedMayBeReplacedOnceByAnotherAndASentOneNever(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(IAPStoreTests.appleOrder("K2"), in: store)
            let requested = NewOrderEvent(kind: "appstore_consumption", detail: "requested", at: TestTime.at(0))
            #expect(try await store.recordConsumptionRequest(Self.request("n2", order: "K2"), events: [requested], outbox: nil))
            _ = try #require(try await store.answerConsumption("n2", answer: #"{"a":1}"#, consented: true, by: .business,
                                                               at: TestTime.at(1), event: nil))
            _ = try #require(try await store.claimDueConsumption(now: TestTime.at(2), defaultsDueBefore: nil, limit: 1, claimant: "s",
                                                                 leaseUntil: TestTime.at(30), id: "n2").first)
            let refused = try #require(try await store.finishConsumptionAttempt(
                "n2", claimant: "s", outcome: .refused(error: "4000209"), at: TestTime.at(3), event: nil))
            #expect(refused.state == .refused && refused.lastError == "4000209")
            // The same answer is no correction; another one takes its place, due at once, the refusal cleared.
            #expect(try await store.answerConsumption("n2", answer: #"{"a":1}"#, consented: true, by: .business,
                                                      at: TestTime.at(4), event: nil) == nil)
            let corrected = try #require(try await store.answerConsumption("n2", answer: #"{"a":2}"#, consented: true, by: .business,
                                                                           at: TestTime.at(5), event: nil))
            #expect(corrected.state == .answered && corrected.answer == #"{"a":2}"# && corrected.lastError == nil)
            #expect(corrected.nextAttemptAt == TestTime.at(5))
            _ = try #require(try await store.claimDueConsumption(now: TestTime.at(6), defaultsDueBefore: nil, limit: 1, claimant: "s",
                                                                 leaseUntil: TestTime.at(30), id: "n2").first)
            let sent = try #require(try await store.finishConsumptionAttempt("n2", claimant: "s", outcome: .sent, at: TestTime.at(7),
                                                                             event: nil))
            #expect(sent.state == .sent)
            // Sent is final: no answer replaces it.
            #expect(try await store.answerConsumption("n2", answer: #"{"a":3}"#, consented: true, by: .business,
                                                      at: TestTime.at(8), event: nil) == nil)
        }
    }

    @Test(arguments: StoreKind.all) func unansweredRequestsAreDueForTheDefaultsAndExpireAtTheirDeadline(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            #expect(try await store.recordConsumptionRequest(Self.request("d1", order: nil, at: TestTime.at(0)), events: [], outbox: nil))
            #expect(try await store.recordConsumptionRequest(Self.request("d2", order: nil, at: TestTime.at(100)), events: [], outbox: nil))
            // Defaults are due for requests made at or before the given instant.
            let due = try await store.claimDueConsumption(now: TestTime.at(200), defaultsDueBefore: TestTime.at(50), limit: 10,
                                                          claimant: "s", leaseUntil: TestTime.at(260), id: nil)
            #expect(due.map(\.id) == ["d1"])
            let notSent = try #require(try await store.answerConsumption("d1", answer: "{}", consented: false, by: .defaults,
                                                                         at: TestTime.at(201), event: nil))
            #expect(notSent.state == .notSent)
            #expect(try await store.finishConsumptionAttempt("d1", claimant: "s", outcome: .release, at: TestTime.at(202), event: nil) == nil)
            // Past its deadline an unanswered request is due only to be expired; an answer is refused.
            #expect(try await store.answerConsumption("d2", answer: "{}", consented: true, by: .business,
                                                      at: TestTime.at(100 + 43200), event: nil) == nil)
            let late = try await store.claimDueConsumption(now: TestTime.at(100 + 43200), defaultsDueBefore: nil, limit: 10,
                                                           claimant: "s", leaseUntil: TestTime.at(100 + 43260), id: nil)
            #expect(late.map(\.id) == ["d2"])
            let expired = try #require(try await store.finishConsumptionAttempt("d2", claimant: "s", outcome: .expired,
                                                                                at: TestTime.at(100 + 43201), event: nil))
            #expect(expired.state == .expired && expired.attempts == 0)
            #expect(try await store.consumptionRequests(transactionID: "2000000000000200").map(\.id) == ["d2", "d1"])
        }
    }
}
