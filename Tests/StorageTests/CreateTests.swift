// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

struct CreateTests {
    @Test(arguments: StoreKind.all) func aNewOrderIsStoredWithItsCreationEvent(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let result = try await store.create(Fixture.order("A1"), event: Fixture.created)
            guard case .created(let record) = result else {
                Issue.record("expected .created, got \(result)")
                return
            }
            #expect(record == Fixture.order("A1"))
            #expect(try await store.order("A1") == record)
            let events = try await store.events("A1")
            #expect(events.map(\.kind) == ["created"])
            #expect(events.first?.detail == "by test")
        }
    }

    @Test(arguments: StoreKind.all) func aReplayWithTheSameParametersReturnsTheStoredOrder(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let first = try await Fixture.create(Fixture.order("A2"), in: store)
            let replay = try await store.create(Fixture.order("A2"), event: Fixture.created)
            #expect(replay == .existing(first))
            #expect(try await store.events("A2").count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func aReplayWithOtherParametersIsAConflictAndChangesNothing(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let first = try await Fixture.create(Fixture.order("A3"), in: store)
            let changed = Fixture.order("A3", amount: 999, digest: "digest-2")
            #expect(try await store.create(changed, event: Fixture.created) == .conflict(first))
            #expect(try await store.order("A3")?.amount == 100)
            #expect(try await store.events("A3").count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func twoHundredConcurrentIdenticalCreatesStoreExactlyOneOrder(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let results = try await withThrowingTaskGroup(of: CreateResult.self) { group in
                for _ in 0..<200 {
                    group.addTask { try await store.create(Fixture.order("A4"), event: Fixture.created) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let created = results.filter { if case .created = $0 { true } else { false } }
            let existing = results.filter { if case .existing = $0 { true } else { false } }
            #expect(created.count == 1)
            #expect(existing.count == 199)
            #expect(Set(results.map(\.record)).count == 1)
            #expect(try await store.events("A4").count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func anOrderCannotBeCreatedAlreadyPaid(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            var paid = Fixture.order("A5")
            paid.state = .success
            await #expect(throws: StorageError.invalidArgument) {
                try await store.create(paid, event: Fixture.created)
            }
            var withTransaction = Fixture.order("A5")
            withTransaction.transactionID = "wx-forged"
            await #expect(throws: StorageError.invalidArgument) {
                try await store.create(withTransaction, event: Fixture.created)
            }
            #expect(try await store.order("A5") == nil)
        }
    }

    @Test(arguments: StoreKind.all) func aNonPositiveAmountIsRefusedByTheSchema(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            await #expect(throws: StorageError.constraint) {
                try await store.create(Fixture.order("A6", amount: 0), event: Fixture.created)
            }
            #expect(try await store.order("A6") == nil)
            #expect(try await store.events("A6").isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func everyFieldSurvivesTheRoundTrip(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let order = OrderRecord(
                outTradeNo: "A7", amount: 1, description: "", clientIP: "::1", attach: "a=b&c=\u{4E2D}\u{6587}",
                userID: "user-7", productID: "sku\tç\u{1F4DA}", signType: "MD5", timeExpire: "20240101120000",
                expiresAt: TestTime.at(3600), createdAt: TestTime.t0, prepayID: "wx2017", prepayIssuedAt: TestTime.at(1),
                parametersDigest: "digest", lastNotifyAt: TestTime.at(2), lastQueriedAt: TestTime.at(3),
                flags: ["b_flag", "a_flag"], updatedAt: TestTime.at(4))
            #expect(try await store.create(order, event: Fixture.created) == .created(order))
            #expect(try await store.order("A7") == order)
        }
    }

    @Test(arguments: StoreKind.all) func textWithANulCharacterIsRefusedByEveryStore(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            var order = Fixture.order("A11")
            order.productID = "sku\u{0}nul"
            await #expect(throws: StorageError.invalidArgument) {
                try await store.create(order, event: Fixture.created)
            }
            #expect(try await store.order("A11") == nil)
        }
    }

    @Test(arguments: StoreKind.all) func timesAreKeptToTheMillisecond(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let order = Fixture.order("A8", createdAt: TestTime.t0.addingTimeInterval(0.123_456_7))
            let record = try await Fixture.create(order, in: store)
            #expect((record.createdAt.timeIntervalSince1970 * 1000).rounded() == 1_700_000_000_123)
            #expect(try await store.create(order, event: Fixture.created) == .existing(record))
        }
    }

    @Test(arguments: StoreKind.all) func ordersAreFoundByUserNewestFirst(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            for index in 0..<5 {
                try await Fixture.create(
                    Fixture.order("U\(index)", createdAt: TestTime.at(Double(index)), userID: "alice"), in: store)
            }
            try await Fixture.create(Fixture.order("U-bob", userID: "bob"), in: store)
            #expect(try await store.orders(userID: "alice").map(\.outTradeNo) == ["U4", "U3", "U2", "U1", "U0"])
            #expect(try await store.orders(userID: "alice", limit: 2).map(\.outTradeNo) == ["U4", "U3"])
            #expect(try await store.orders(userID: "carol").isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func thePrepayIDIsRecordedAndReplaced(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("A9"), in: store)
            let first = try await store.setPrepay("A9", prepayID: "wx-prepay-1", issuedAt: TestTime.at(1))
            #expect(first?.prepayID == "wx-prepay-1")
            #expect(first?.prepayIssuedAt == TestTime.at(1))
            let second = try await store.setPrepay("A9", prepayID: "wx-prepay-2", issuedAt: TestTime.at(7300))
            #expect(second?.prepayID == "wx-prepay-2")
            #expect(try await store.order("A9")?.prepayID == "wx-prepay-2")
            #expect(try await store.setPrepay("nope", prepayID: "x", issuedAt: TestTime.t0) == nil)
        }
    }

    @Test(arguments: StoreKind.all) func touchingNeverMovesATimeBackwards(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("A10"), in: store)
            #expect(try await store.touch("A10", .lastNotify, at: TestTime.at(20)))
            #expect(try await store.touch("A10", .lastNotify, at: TestTime.at(10)))
            #expect(try await store.touch("A10", .lastQueried, at: TestTime.at(30)))
            let record = try await store.order("A10")
            #expect(record?.lastNotifyAt == TestTime.at(20))
            #expect(record?.lastQueriedAt == TestTime.at(30))
            #expect(record?.updatedAt == TestTime.at(30))
            #expect(try await store.touch("nope", .lastQueried, at: TestTime.t0) == false)
        }
    }

    @Test("An order keeps the app it was created through, its app id and its trade type; a trade type WeChat lacks is refused",
          arguments: StoreKind.all)
    func theAppAndTradeTypeAreKept(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            var order = Fixture.order("A11")
            order.app = "mini"
            order.appID = "wx2421b1c4370ec43b"
            order.tradeType = "JSAPI"
            try await Fixture.create(order, in: store)
            let stored = try await store.order("A11")
            #expect(stored == order)
            #expect(stored?.app == "mini" && stored?.appID == "wx2421b1c4370ec43b" && stored?.tradeType == "JSAPI")
            var unknown = Fixture.order("A12")
            unknown.tradeType = "MICROPAY"
            await #expect(throws: StorageError.invalidArgument) {
                try await store.create(unknown, event: Fixture.created)
            }
            #expect(try await store.order("A12") == nil)
        }
    }
}
