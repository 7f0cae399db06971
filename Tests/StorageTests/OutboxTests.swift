// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

struct OutboxTests {
    /// An order paid at t=60 s with outbox event `id`.
    private func paidOrder(_ outTradeNo: String, id: String, in store: some OrderStore) async throws {
        try await Fixture.create(Fixture.order(outTradeNo), in: store)
        _ = try await store.transition(
            outTradeNo, to: .success, from: OrderState.open, outbox: Fixture.paid(outTradeNo, id: id),
            at: TestTime.at(60))
    }

    private func due(_ store: some OrderStore, at seconds: Double, claimant: String = "d1") async throws -> [String] {
        try await store.dueOutboxEvents(
            now: TestTime.at(seconds), limit: 10, claimant: claimant, leaseUntil: TestTime.at(seconds + 30)
        ).map(\.id)
    }

    @Test(arguments: StoreKind.all) func aNewEventIsDueAndLeasedToOneDispatcherAtATime(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await paidOrder("O1", id: "e1", in: store)
            #expect(try await due(store, at: 59).isEmpty)
            #expect(try await due(store, at: 60, claimant: "d1") == ["e1"])
            #expect(try await due(store, at: 70, claimant: "d2").isEmpty)
            // The first dispatcher vanished: after its lease, another takes over.
            #expect(try await due(store, at: 90, claimant: "d2") == ["e1"])
        }
    }

    /// An order paid at t=60 s whose outbox event is `user`'s `entitlement.changed`.
    private func entitlementChanged(_ outTradeNo: String, id: String, user: String, in store: some OrderStore) async throws {
        try await Fixture.create(Fixture.order(outTradeNo), in: store)
        _ = try await store.transition(
            outTradeNo, to: .success, from: OrderState.open, outbox: Fixture.entitlement(outTradeNo, id: id, user: user),
            at: TestTime.at(60))
    }

    @Test(arguments: StoreKind.all) func oneUsersEntitlementEventIsNotLeasedWhileAnotherOfTheirsIsOut(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await entitlementChanged("U1", id: "u1-first", user: "u1", in: store)
            let first = try await store.dueOutboxEvents(now: TestTime.at(60), limit: 1, claimant: "d1", leaseUntil: TestTime.at(90))
            #expect(first.map(\.id) == ["u1-first"])
            try await entitlementChanged("U2", id: "u1-second", user: "u1", in: store)
            try await entitlementChanged("U3", id: "u2-first", user: "u2", in: store)
            try await paidOrder("U4", id: "paid", in: store)
            // Sent now by another dispatcher, u1's second could land before the first and leave
            // the receiver the older state: it waits; other users' and other kinds' events do not.
            #expect(try await due(store, at: 61, claimant: "d2") == ["paid", "u2-first"])
            #expect(try await store.markDelivered("u1-first", at: TestTime.at(62)))
            #expect(try await due(store, at: 63, claimant: "d2") == ["u1-second"])
        }
    }

    @Test(arguments: StoreKind.all) func oneUsersEntitlementEventsFreeAtOnceAreLeasedTogetherAndALapsedLeaseHoldsNothing(
        _ kind: StoreKind
    ) async throws {
        try await withStore(kind) { store, _ async throws in
            try await entitlementChanged("L1", id: "l-1", user: "u1", in: store)
            try await entitlementChanged("L2", id: "l-2", user: "u1", in: store)
            // One dispatcher sends them in turn.
            #expect(try await due(store, at: 60, claimant: "d1") == ["l-1", "l-2"])
            #expect(try await due(store, at: 70, claimant: "d2").isEmpty)
            // d1 vanished: its leases ran out at 90, and hold nothing back.
            #expect(try await due(store, at: 90, claimant: "d2") == ["l-1", "l-2"])
            // A failed attempt gives its lease back: the other, still out, holds the first back.
            #expect(try await store.reschedule("l-1", nextAttemptAt: TestTime.at(95), attempts: 1, lastError: "http_503"))
            #expect(try await due(store, at: 96, claimant: "d3").isEmpty)
            #expect(try await store.markDelivered("l-2", at: TestTime.at(97)))
            #expect(try await due(store, at: 98, claimant: "d3") == ["l-1"])
        }
    }

    @Test(arguments: StoreKind.all) func aRescheduledEventIsNotDueBeforeItsNextAttempt(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await paidOrder("O2", id: "e2", in: store)
            _ = try await due(store, at: 60)
            #expect(try await store.reschedule("e2", nextAttemptAt: TestTime.at(120), attempts: 1, lastError: "HTTP 503"))
            #expect(try await due(store, at: 119).isEmpty)
            #expect(try await due(store, at: 120) == ["e2"])
            let event = try await store.outboxEvent(id: "e2")
            #expect(event?.attempts == 1)
            #expect(event?.lastError == "HTTP 503")
            #expect(event?.nextAttemptAt == TestTime.at(120))
        }
    }

    @Test(arguments: StoreKind.all) func aDeliveredEventIsNeverDueAgainNorRescheduled(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await paidOrder("O3", id: "e3", in: store)
            #expect(try await store.markDelivered("e3", at: TestTime.at(61)))
            #expect(try await store.markDelivered("e3", at: TestTime.at(62)) == false)
            #expect(try await store.reschedule("e3", nextAttemptAt: TestTime.at(70), attempts: 1, lastError: "late")
                == false)
            #expect(try await store.deadLetter("e3", at: TestTime.at(70), lastError: "late") == false)
            #expect(try await due(store, at: 10_000).isEmpty)
            #expect(try await store.outboxEvent(id: "e3")?.deliveredAt == TestTime.at(61))
        }
    }

    @Test(arguments: StoreKind.all) func aDeadEventWaitsForARedriveThatStartsItsAttemptsAfresh(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await paidOrder("O4", id: "e4", in: store)
            #expect(try await store.reschedule("e4", nextAttemptAt: TestTime.at(70), attempts: 8, lastError: "timeout"))
            #expect(try await store.redrive("e4", at: TestTime.at(71)) == false)
            #expect(try await store.deadLetter("e4", at: TestTime.at(80), lastError: "gave up"))
            // The attempt that failed last counts: eight rescheduled, the ninth given up on.
            #expect(try await store.outboxEvent(id: "e4")?.attempts == 9)
            #expect(try await due(store, at: 10_000).isEmpty)
            #expect(try await store.counts().outboxDead == 1)
            #expect(try await store.counts().outboxPending == 0)
            #expect(try await store.redrive("e4", at: TestTime.at(500)))
            let event = try await store.outboxEvent(id: "e4")
            #expect(event?.isPending == true)
            #expect(event?.attempts == 0)
            #expect(event?.lastError == "gave up")
            #expect(try await due(store, at: 499).isEmpty)
            #expect(try await due(store, at: 500) == ["e4"])
        }
    }

    @Test(arguments: StoreKind.all) func countsDescribeOrdersAndOutbox(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await paidOrder("O5", id: "e5", in: store)
            try await paidOrder("O6", id: "e6", in: store)
            try await Fixture.create(Fixture.order("O7"), in: store)
            _ = try await store.markDelivered("e6", at: TestTime.at(70))
            let counts = try await store.counts()
            #expect(counts.ordersByState[.success] == 2)
            #expect(counts.ordersByState[.notPay] == 1)
            #expect(counts.ordersByState[.closed] == 0)
            #expect(counts.ordersByState.count == OrderState.allCases.count)
            #expect(counts.outboxPending == 1)
            #expect(counts.oldestPendingOutboxAt == TestTime.at(60))
        }
    }

    @Test(arguments: StoreKind.all) func aNegativeAttemptCountIsRefused(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await paidOrder("O8", id: "e8", in: store)
            await #expect(throws: StorageError.constraint) {
                try await store.reschedule("e8", nextAttemptAt: TestTime.at(70), attempts: -1, lastError: "")
            }
        }
    }
}
