// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

struct TransitionReceiptTests {
    static let notifyReceipt = TransitionReceipt(
        kind: "notify_received", changedDetail: "settled", unchangedDetail: "duplicate", touching: .lastNotify)

    @Test(arguments: StoreKind.all) func aChangingTransitionWritesItsReceiptAfterTheStateChangeInTheSameWrite(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("R1"), in: store)
            let result = try await store.transition(
                "R1", to: .success, from: OrderState.open, transactionID: "wx-R1", expectedAmount: 100,
                detail: "notify", outbox: Fixture.paid("R1"), at: TestTime.at(60), receipt: Self.notifyReceipt)
            guard case .changed(let record) = result else {
                Issue.record("expected .changed, got \(result)")
                return
            }
            #expect(record.lastNotifyAt == TestTime.at(60))
            let events = try await store.events("R1")
            #expect(events.map(\.kind) == ["created", OrderEvent.stateChangedKind, "notify_received"])
            #expect(events.last?.detail == "settled")
            #expect(try await store.order("R1")?.lastNotifyAt == TestTime.at(60))
        }
    }

    @Test(arguments: StoreKind.all) func anUnchangedTransitionStillWritesItsReceiptButNoStateChangeOrOutbox(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("R2"), in: store)
            #expect(try await Fixture.pay("R2", in: store).didChange)
            let again = try await store.transition(
                "R2", to: .success, from: OrderState.open, outbox: Fixture.paid("R2"), at: TestTime.at(90),
                receipt: Self.notifyReceipt)
            #expect(again.didChange == false)
            #expect(again.record?.lastNotifyAt == TestTime.at(90))
            let events = try await store.events("R2")
            #expect(events.filter { $0.kind == OrderEvent.stateChangedKind }.count == 1)
            #expect(events.last?.kind == "notify_received")
            #expect(events.last?.detail == "duplicate")
            #expect(try await store.outboxEvents("R2").count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func aReceiptIsNotWrittenWhenTheUnchangedOrderIsInADeferredState(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("R3"), in: store)
            #expect(try await store.transition("R3", to: .closed, from: OrderState.open, at: TestTime.at(10)).didChange)
            var receipt = Self.notifyReceipt
            receipt.deferredWhenUnchangedIn = [.closed]
            let result = try await store.transition(
                "R3", to: .success, from: OrderState.open, outbox: Fixture.paid("R3"), at: TestTime.at(20),
                receipt: receipt)
            #expect(result.didChange == false)
            #expect(result.record?.lastNotifyAt == nil)
            #expect(try await store.events("R3").contains { $0.kind == "notify_received" } == false)
        }
    }

    @Test(arguments: StoreKind.all) func aReceiptForAnUnknownOrderWritesNothing(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let result = try await store.transition(
                "R4", to: .success, from: OrderState.open, at: TestTime.at(20), receipt: Self.notifyReceipt)
            #expect(result == .notFound)
            #expect(try await store.events("R4").isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func setPrepayWritesItsEventInTheSameWriteAndNothingForAnUnknownOrder(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("R5"), in: store)
            let event = NewOrderEvent(kind: "prepay", detail: "prepay_id issued", at: TestTime.at(5))
            let updated = try await store.setPrepay("R5", prepayID: "wx-prepay-R5", issuedAt: TestTime.at(5), event: event)
            #expect(updated?.prepayID == "wx-prepay-R5")
            #expect(try await store.events("R5").map(\.kind) == ["created", "prepay"])
            #expect(try await store.setPrepay("R6", prepayID: "x", issuedAt: TestTime.at(5), event: event) == nil)
            #expect(try await store.events("R6").isEmpty)
        }
    }
}
