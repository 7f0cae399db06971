// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import Testing

/// Two stores on one database behave as one: what several gateway instances rely on. SQLite keeps
/// these promises for several processes on one file; PostgreSQL for several instances anywhere.
struct SeveralInstancesTests {
    /// Opens a second store on the test's database, runs `body` with both, and closes the second.
    private func withTwoStores(
        _ kind: StoreKind, _ body: (any OrderStore, any OrderStore, TestDatabase) async throws -> Void
    ) async throws {
        try await withStore(kind) { first, database async throws in
            let second = try await database.open()
            do {
                try await body(first, second, database)
            } catch {
                await second.close()
                throw error
            }
            await second.close()
        }
    }

    @Test(arguments: StoreKind.all) func identicalCreatesRacingOnTwoInstancesStoreOneOrder(_ kind: StoreKind) async throws {
        try await withTwoStores(kind) { first, second, _ async throws in
            let results = try await withThrowingTaskGroup(of: CreateResult.self) { group in
                for attempt in 0..<60 {
                    let store = attempt.isMultiple(of: 2) ? first : second
                    group.addTask { try await store.create(Fixture.order("S1"), event: Fixture.created) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { if case .created = $0 { true } else { false } }.count == 1)
            #expect(results.filter { if case .existing = $0 { true } else { false } }.count == 59)
            #expect(try await first.events("S1").count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func theDoorHasOneWinnerAcrossInstances(_ kind: StoreKind) async throws {
        try await withTwoStores(kind) { first, second, _ async throws in
            let orders = (0..<12).map { "S2-\($0)" }
            for order in orders { try await Fixture.create(Fixture.order(order), in: first) }
            // Each instance pays the orders in the opposite order: batches lock rows in key order,
            // so they wait for each other but never deadlock.
            let changed = try await withThrowingTaskGroup(of: Int.self) { group in
                for (store, sequence) in [(first, orders), (second, Array(orders.reversed()))] {
                    for order in sequence {
                        for _ in 0..<4 {
                            group.addTask { try await Fixture.pay(order, in: store).didChange ? 1 : 0 }
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(changed == orders.count)
            for order in orders {
                #expect(try await second.outboxEvents(order).count == 1)
                #expect(try await first.events(order).filter { $0.kind == OrderEvent.stateChangedKind }.count == 1)
            }
        }
    }

    @Test(arguments: StoreKind.all) func sweepersOnTwoInstancesNeverClaimTheSameOrder(_ kind: StoreKind) async throws {
        try await withTwoStores(kind) { first, second, _ async throws in
            for index in 0..<60 {
                try await Fixture.create(Fixture.order("S3-\(index)", createdAt: TestTime.at(Double(index))), in: first)
            }
            let claims = try await withThrowingTaskGroup(of: [String].self) { group in
                for sweeper in 0..<8 {
                    let store = sweeper.isMultiple(of: 2) ? first : second
                    group.addTask {
                        try await store.claimOpenOrders(
                            noNotifySince: TestTime.at(1000), now: TestTime.at(1000), limit: 10,
                            claimant: "sweeper-\(sweeper)", leaseUntil: TestTime.at(1060)
                        ).map(\.outTradeNo)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let all = claims.flatMap { $0 }
            #expect(all.count == 60)
            #expect(Set(all).count == 60)
        }
    }

    @Test(arguments: StoreKind.all) func dispatchersOnTwoInstancesNeverClaimTheSameEvent(_ kind: StoreKind) async throws {
        try await withTwoStores(kind) { first, second, _ async throws in
            for index in 0..<30 {
                try await Fixture.create(Fixture.order("S4-\(index)"), in: first)
                _ = try await Fixture.pay("S4-\(index)", in: second)
            }
            let claims = try await withThrowingTaskGroup(of: [String].self) { group in
                for dispatcher in 0..<6 {
                    let store = dispatcher.isMultiple(of: 2) ? first : second
                    group.addTask {
                        try await store.dueOutboxEvents(
                            now: TestTime.at(100), limit: 8, claimant: "d\(dispatcher)", leaseUntil: TestTime.at(130)
                        ).map(\.id)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let all = claims.flatMap { $0 }
            #expect(all.count == 30)
            #expect(Set(all).count == 30)
        }
    }

    @Test(arguments: StoreKind.all) func dispatchersOnTwoInstancesNeverHoldOneUsersEntitlementEventsAtOnce(
        _ kind: StoreKind
    ) async throws {
        try await withTwoStores(kind) { first, second, _ async throws in
            // Ten users, three events each, claimed in batches of two by six dispatchers racing,
            // none delivered: each user's events claimed go to one dispatcher, whichever wins (and
            // one left out of its batch waits while the others are out).
            for index in 0..<30 {
                try await Fixture.create(Fixture.order("S6-\(index)"), in: first)
                _ = try await second.transition(
                    "S6-\(index)", to: .success, from: OrderState.open,
                    outbox: Fixture.entitlement("S6-\(index)", id: "e\(index)", user: "user-\(index % 10)"),
                    at: TestTime.at(60))
            }
            let claims = try await withThrowingTaskGroup(of: (String, [OutboxEvent]).self) { group in
                for dispatcher in 0..<6 {
                    let store = dispatcher.isMultiple(of: 2) ? first : second
                    group.addTask {
                        var mine: [OutboxEvent] = []
                        for _ in 0..<10 {
                            mine += try await store.dueOutboxEvents(
                                now: TestTime.at(100), limit: 2, claimant: "d\(dispatcher)", leaseUntil: TestTime.at(130))
                        }
                        return ("d\(dispatcher)", mine)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            var holder: [String: String] = [:]
            for (dispatcher, events) in claims {
                for event in events {
                    let user = try #require(event.payload.split(separator: "\"").dropLast().last.map(String.init))
                    #expect(holder[user, default: dispatcher] == dispatcher, "\(user)'s events held by two dispatchers")
                    holder[user] = dispatcher
                }
            }
            let ids = claims.flatMap(\.1).map(\.id)
            #expect(Set(ids).count == ids.count)
            #expect(holder.count == 10)
        }
    }

    @Test(arguments: StoreKind.all) func whatOneInstanceCommittedTheOtherReadsAtOnce(_ kind: StoreKind) async throws {
        try await withTwoStores(kind) { first, second, _ async throws in
            try await Fixture.create(Fixture.order("S5"), in: first)
            #expect(try await second.order("S5")?.state == .notPay)
            _ = try await Fixture.pay("S5", in: second)
            #expect(try await first.order("S5")?.state == .success)
            #expect(try await first.outboxEvents("S5").count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func dataSurvivesCloseAndReopen(_ kind: StoreKind) async throws {
        let database = try await TestDatabase(kind)
        defer { Task { await database.remove() } }
        let first = try await database.open()
        try await Fixture.create(Fixture.order("S6"), in: first)
        _ = try await Fixture.pay("S6", in: first)
        await first.close()
        let second = try await database.open()
        #expect(try await second.order("S6")?.state == .success)
        #expect(try await second.outboxEvents("S6").count == 1)
        #expect(try await second.integrityCheck() == "ok")
        await second.close()
        await database.remove()
    }

    @Test(arguments: StoreKind.all) func aClosedStoreRefusesWorkAndIsNotHealthy(_ kind: StoreKind) async throws {
        let database = try await TestDatabase(kind)
        let store = try await database.open()
        #expect(await store.isHealthy())
        await store.close()
        await store.close()
        #expect(await store.isHealthy() == false)
        await #expect(throws: StorageError.closed) { try await store.order("x") }
        await #expect(throws: StorageError.closed) { try await store.create(Fixture.order("x"), event: Fixture.created) }
        await database.remove()
    }

    @Test(arguments: StoreKind.all) func theIntegrityCheckOfAWorkingStoreIsOk(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            for index in 0..<20 {
                try await Fixture.create(Fixture.order("I\(index)"), in: store)
                _ = try await Fixture.pay("I\(index)", in: store)
            }
            #expect(try await store.integrityCheck() == "ok")
            #expect(await store.isHealthy())
        }
    }

    /// One instance sells a product while another binds a catalog that leaves it out (unsold, its
    /// terms would be forgotten): whichever the database decides first, no sale is left without
    /// the terms it was priced under. The binding is refused because of a sale, or no sale is stored.
    @Test(arguments: StoreKind.all) func aCatalogBoundOnOneInstanceWhileAnotherSellsLeavesNoSaleWithoutItsTerms(_ kind: StoreKind)
        async throws
    {
        try await withTwoStores(kind) { seller, binder, _ async throws in
            // Earlier rounds' sold products stay in every catalog.
            var kept = [ProductTerms(productID: "swift-101", terms: "course swift-101")]
            for round in 0..<12 {
                let zinc = ProductTerms(productID: "zinc-\(round)", terms: "membership P1M zinc")
                #expect(try await (binder as! any BindingStore).bindProductTerms(kept + [zinc], at: TestTime.at(Double(10 * round))).isEmpty)
                let numbers = (0..<6).map { "S9-\(round)-\($0)" }
                let without = kept
                let forgotten = try await withThrowingTaskGroup(of: Bool?.self) { group in
                    for number in numbers {
                        group.addTask {
                            var order = Fixture.order(number)
                            order.productID = zinc.productID
                            do {
                                _ = try await seller.create(order, event: Fixture.created, terms: .catalog(zinc.terms))
                            } catch let error as StorageError where error == .termsChanged {}
                            return nil
                        }
                    }
                    group.addTask {
                        try await (binder as! any BindingStore).bindProductTerms(without, at: TestTime.at(Double(10 * round + 1))).isEmpty
                    }
                    return try await group.reduce(into: [Bool]()) { if let accepted = $1 { $0.append(accepted) } }
                }
                var sold = false
                for number in numbers where try await seller.order(number) != nil { sold = true }
                if sold { kept.append(zinc) }
                #expect(forgotten == [!sold], "round \(round): the binding \(forgotten == [true] ? "forgot" : "kept") the terms, sold: \(sold)")
            }
        }
    }
}
