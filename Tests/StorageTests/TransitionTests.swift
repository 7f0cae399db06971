// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

struct TransitionTests {
    @Test(arguments: StoreKind.all) func aTransitionFromAnAllowedStateChangesTheOrderAndWritesEventAndOutbox(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("T1"), in: store)
            let outbox = Fixture.paid("T1", id: "evt-T1")
            let result = try await store.transition(
                "T1", to: .success, from: [.notPay, .userPaying], transactionID: "wx-T1", paidAt: TestTime.at(50),
                expectedAmount: 100, detail: "notify", outbox: outbox, at: TestTime.at(60))
            guard case .changed(let record) = result else {
                Issue.record("expected .changed, got \(result)")
                return
            }
            #expect(record.state == .success)
            #expect(record.transactionID == "wx-T1")
            #expect(record.paidAt == TestTime.at(50))
            #expect(record.updatedAt == TestTime.at(60))
            let events = try await store.events("T1")
            #expect(events.map(\.kind) == ["created", OrderEvent.stateChangedKind])
            #expect(events.last?.detail == "NOTPAY -> SUCCESS: notify")
            #expect(events.last?.at == TestTime.at(60))
            #expect(try await store.outboxEvents("T1") == [outbox])
            #expect(try await store.orders(transactionID: "wx-T1") == [record])
        }
    }

    @Test(arguments: StoreKind.all) func aTransitionFromAStateNotAllowedChangesNothing(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("T2"), in: store)
            let result = try await store.transition(
                "T2", to: .closed, from: [.userPaying], outbox: Fixture.paid("T2"), at: TestTime.at(10))
            #expect(result == .unchanged(Fixture.order("T2")))
            #expect(try await store.events("T2").count == 1)
            #expect(try await store.outboxEvents("T2").isEmpty)
        }
    }

    /// The SQLite store matches the allowed states as one delimited list: no state may pass for
    /// another (NOTPAY is not found inside a list of the others, however they are combined).
    @Test(arguments: StoreKind.all) func aTransitionAppliesOnlyWhenTheOrdersStateIsNamedInTheAllowedSet(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("T2s"), in: store)
            let others = OrderState.allCases.filter { $0 != .notPay }
            for allowed in [Set(others)] + others.map({ [$0] }) {
                let result = try await store.transition("T2s", to: .closed, from: allowed, at: TestTime.at(10))
                #expect(result == .unchanged(Fixture.order("T2s")), "allowed \(allowed.sorted { $0.rawValue < $1.rawValue })")
            }
            #expect(try await store.events("T2s").count == 1)
            let allowed = try await store.transition("T2s", to: .closed, from: [.notPay], at: TestTime.at(20))
            #expect(allowed.didChange)
            #expect(allowed.record?.state == .closed)
            #expect(try await store.order("T2s")?.state == .closed)
        }
    }

    @Test(arguments: StoreKind.all) func aTransitionExpectingAnotherAmountChangesNothing(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("T3", amount: 100), in: store)
            let result = try await store.transition(
                "T3", to: .success, from: OrderState.open, transactionID: "wx-T3", expectedAmount: 1,
                outbox: Fixture.paid("T3"), at: TestTime.at(10))
            #expect(result.didChange == false)
            #expect(result.record?.state == .notPay)
            #expect(result.record?.transactionID == nil)
            #expect(try await store.outboxEvents("T3").isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func aRepeatedTransitionIsUnchangedEvenWhenItsTargetIsListedAsAllowed(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("T4"), in: store)
            #expect(try await Fixture.pay("T4", in: store).didChange)
            let again = try await store.transition(
                "T4", to: .success, from: [.notPay, .success], outbox: Fixture.paid("T4"), at: TestTime.at(90))
            #expect(again.didChange == false)
            #expect(again.record?.state == .success)
            #expect(try await store.outboxEvents("T4").count == 1)
            #expect(try await store.events("T4").filter { $0.kind == OrderEvent.stateChangedKind }.count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func aTransitionOfAnUnknownOrderIsNotFound(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            #expect(try await Fixture.pay("missing", in: store) == .notFound)
            #expect(try await store.outboxEvents("missing").isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func fiftyConcurrentTransitionsToSuccessHaveExactlyOneWinner(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("T5"), in: store)
            let results = try await withThrowingTaskGroup(of: TransitionResult.self) { group in
                for attempt in 0..<50 {
                    group.addTask {
                        try await store.transition(
                            "T5", to: .success, from: OrderState.open, transactionID: "wx-T5",
                            expectedAmount: 100, detail: "duplicate \(attempt)",
                            outbox: Fixture.paid("T5", id: "evt-T5-\(attempt)"), at: TestTime.at(60))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter(\.didChange).count == 1)
            #expect(results.filter { if case .unchanged = $0 { true } else { false } }.count == 49)
            #expect(results.allSatisfy { $0.record?.state == .success })
            #expect(try await store.events("T5").filter { $0.kind == OrderEvent.stateChangedKind }.count == 1)
            #expect(try await store.outboxEvents("T5").count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func concurrentPaymentsOfManyOrdersEachHaveOneWinner(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let orders = (0..<20).map { "M\($0)" }
            for order in orders { try await Fixture.create(Fixture.order(order), in: store) }
            let changed = try await withThrowingTaskGroup(of: Int.self) { group in
                for order in orders {
                    for _ in 0..<10 {
                        group.addTask { try await Fixture.pay(order, in: store).didChange ? 1 : 0 }
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(changed == orders.count)
            #expect(try await store.counts().ordersByState[.success] == orders.count)
            #expect(try await store.counts().outboxPending == orders.count)
        }
    }

    @Test(arguments: StoreKind.all) func aFailingOutboxInsertRollsTheWholeTransitionBack(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("T6b"), in: store)
            await #expect(throws: StorageError.constraint) {
                try await store.transition(
                    "T6b", to: .success, from: OrderState.open, outbox: Fixture.refusedByTheDatabase("T6b"), at: TestTime.at(10))
            }
            #expect(try await store.order("T6b")?.state == .notPay)
            #expect(try await store.events("T6b").count == 1)
            #expect(try await store.outboxEvents("T6b").isEmpty)
        }
    }

    /// An event's id names what it announces (an `order.paid`'s is its payment's): one written
    /// again under an id on record — a payment settled again after a restore, where the event
    /// survived in the outbox — is the same event, and the payment settles all the same.
    @Test(arguments: StoreKind.all) func anOutboxEventWhoseIdIsOnRecordIsKeptAsItIsAndTheTransitionGoesOn(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("T6c"), in: store)
            try await Fixture.create(Fixture.order("T6d"), in: store)
            let first = Fixture.paid("T6c", id: "evt-the-payment")
            _ = try await store.transition("T6c", to: .success, from: OrderState.open, outbox: first, at: TestTime.at(10))
            let again = try await store.transition(
                "T6d", to: .success, from: OrderState.open, outbox: Fixture.paid("T6d", id: "evt-the-payment"),
                at: TestTime.at(20))
            #expect(again.didChange)
            #expect(try await store.order("T6d")?.state == .success)
            #expect(try await store.outboxEvents("T6c") == [first])
            #expect(try await store.outboxEvents("T6d").isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func anOutboxEventForAnotherOrderIsRefused(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("T7"), in: store)
            await #expect(throws: StorageError.invalidArgument) {
                try await store.transition(
                    "T7", to: .success, from: OrderState.open, outbox: Fixture.paid("other"), at: TestTime.at(10))
            }
            #expect(try await store.order("T7")?.state == .notPay)
        }
    }

    @Test(arguments: StoreKind.all) func flagsAreAddedOnlyByTheTransitionThatChangesTheState(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("T8"), in: store)
            _ = try await store.transition("T8", to: .closed, from: OrderState.open, at: TestTime.at(10))
            // The settle pattern for a notify after a local close: first the ordinary door, then
            // the door from CLOSED with the flag.
            let ordinary = try await store.transition(
                "T8", to: .success, from: OrderState.open, addingFlags: ["never_added"], at: TestTime.at(20))
            #expect(ordinary.didChange == false)
            let late = try await store.transition(
                "T8", to: .success, from: [.closed], transactionID: "wx-T8", addingFlags: [.paidAfterClose],
                at: TestTime.at(20))
            #expect(late.didChange)
            #expect(try await store.order("T8")?.flags == [.paidAfterClose])
            #expect(try await store.events("T8").last?.detail == "CLOSED -> SUCCESS")
        }
    }

    @Test(arguments: StoreKind.all) func aPaidOrderCannotBecomeUnpaidWhateverTheCallerAllows(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("T9"), in: store)
            _ = try await Fixture.pay("T9", in: store)
            await #expect(throws: StorageError.constraint) {
                try await store.transition("T9", to: .closed, from: [.success], at: TestTime.at(100))
            }
            #expect(try await store.order("T9")?.state == .success)
            let refund = try await store.transition("T9", to: .refund, from: [.success], at: TestTime.at(200))
            #expect(refund.record?.state == .refund)
        }
    }

    @Test(arguments: StoreKind.all) func flagsCanBeAddedOutsideATransition(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("T10"), in: store)
            #expect(try await store.addFlags("T10", ["amount_mismatch"], at: TestTime.at(5))?.flags == ["amount_mismatch"])
            #expect(try await store.addFlags("T10", [.paidAfterClose], at: TestTime.at(6))?.flags
                == ["amount_mismatch", .paidAfterClose])
            #expect(try await store.addFlags("nope", [.paidAfterClose], at: TestTime.at(6)) == nil)
        }
    }

    @Test func flagNamesAreRestrictedToPlainIdentifiers() {
        #expect(OrderFlag(rawValue: "paid_after_close") == .paidAfterClose)
        #expect(OrderFlag(rawValue: "") == nil)
        #expect(OrderFlag(rawValue: "a,b") == nil)
        #expect(OrderFlag(rawValue: "Upper") == nil)
        #expect(OrderFlag(rawValue: String(repeating: "a", count: 65)) == nil)
    }

    @Test func finalStatesAreExactlyTheOnesThatCannotBePaidAnymore() {
        #expect(Set(OrderState.allCases.filter(\.isFinal)) == [.success, .refund, .closed, .revoked, .payError])
        #expect(OrderState.open == [.notPay, .userPaying])
        #expect(OrderState(rawValue: "USERPAYING") == .userPaying)
    }
}
