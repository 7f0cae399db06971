// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

struct EventTests {
    @Test(arguments: StoreKind.all) func appendedEventsComeBackInTheOrderTheyWereWritten(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("E1"), in: store)
            // Times deliberately out of order: the timeline follows write order, not the clock.
            let first = try await store.appendEvent("E1", kind: "query", detail: "one", at: TestTime.at(30))
            let second = try await store.appendEvent("E1", kind: "query", detail: "two", at: TestTime.at(10))
            let events = try await store.events("E1")
            #expect(events.map(\.detail) == ["by test", "one", "two"])
            #expect(events.map(\.id) == events.map(\.id).sorted())
            #expect(events.dropFirst().map(\.id) == [first?.id, second?.id].compactMap { $0 })
            #expect(second?.at == TestTime.at(10))
        }
    }

    @Test(arguments: StoreKind.all) func anEventForAnUnknownOrderIsNotAppended(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            #expect(try await store.appendEvent("ghost", kind: "x", detail: "y", at: TestTime.t0) == nil)
            #expect(try await store.events("ghost").isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func theDatabaseRefusesToChangeOrDeleteEvents(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, database async throws in
            try await Fixture.create(Fixture.order("E2"), in: store)
            #expect(await database.execute("UPDATE order_events SET detail = 'rewritten'") == false)
            #expect(await database.execute("DELETE FROM order_events") == false)
            #expect(try await store.events("E2").map(\.detail) == ["by test"])
        }
    }

    @Test(arguments: StoreKind.all) func errorDescriptionsNeverContainTheValuesThatCausedThem(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("E3a"), in: store)
            try await Fixture.create(Fixture.order("E3b"), in: store)
            let secretish = "evt-4f1d-secret-looking-value"
            _ = try await store.transition(
                "E3a", to: .success, from: OrderState.open, outbox: Fixture.paid("E3a", id: secretish),
                at: TestTime.at(1))
            do throws(StorageError) {
                _ = try await store.transition(
                    "E3b", to: .success, from: OrderState.open, outbox: Fixture.refusedByTheDatabase("E3b", id: secretish),
                    at: TestTime.at(1))
                Issue.record("an outbox row the database refuses must fail")
            } catch {
                #expect(error == .constraint)
                #expect(error.shortDescription == "constraint")
                #expect(!error.description.contains(secretish))
                #expect(!error.debugDescription.contains(secretish))
                #expect(!error.description.contains("E3b"))
            }
        }
    }
}
