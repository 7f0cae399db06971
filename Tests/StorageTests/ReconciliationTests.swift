// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

struct ReconciliationTests {
    @Test(arguments: StoreKind.all) func concurrentSweepersNeverClaimTheSameOrder(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            for index in 0..<40 {
                try await Fixture.create(Fixture.order("R\(index)", createdAt: TestTime.at(Double(index))), in: store)
            }
            let claims = try await withThrowingTaskGroup(of: [String].self) { group in
                for sweeper in 0..<6 {
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
            #expect(all.count == 40)
            #expect(Set(all).count == 40)
        }
    }

    @Test(arguments: StoreKind.all) func aLeaseKeepsAnOrderFromOtherSweepersUntilItExpires(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("R1"), in: store)
            let first = try await store.claimOpenOrders(
                noNotifySince: TestTime.at(100), now: TestTime.at(100), limit: 10, claimant: "a",
                leaseUntil: TestTime.at(160))
            #expect(first.map(\.outTradeNo) == ["R1"])
            let during = try await store.claimOpenOrders(
                noNotifySince: TestTime.at(130), now: TestTime.at(130), limit: 10, claimant: "b",
                leaseUntil: TestTime.at(190))
            #expect(during.isEmpty)
            let after = try await store.claimOpenOrders(
                noNotifySince: TestTime.at(160), now: TestTime.at(160), limit: 10, claimant: "b",
                leaseUntil: TestTime.at(220))
            #expect(after.map(\.outTradeNo) == ["R1"])
        }
    }

    @Test(arguments: StoreKind.all) func onlyTheHolderCanReleaseAClaim(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("R2"), in: store)
            _ = try await store.claimOpenOrders(
                noNotifySince: TestTime.at(100), now: TestTime.at(100), limit: 1, claimant: "a",
                leaseUntil: TestTime.at(900))
            #expect(try await store.releaseClaim("R2", claimant: "b") == false)
            #expect(try await store.claimOpenOrders(
                noNotifySince: TestTime.at(101), now: TestTime.at(101), limit: 1, claimant: "b",
                leaseUntil: TestTime.at(900)).isEmpty)
            #expect(try await store.releaseClaim("R2", claimant: "a"))
            #expect(try await store.claimOpenOrders(
                noNotifySince: TestTime.at(102), now: TestTime.at(102), limit: 1, claimant: "b",
                leaseUntil: TestTime.at(900)).map(\.outTradeNo) == ["R2"])
        }
    }

    @Test(arguments: StoreKind.all) func onlyOpenOrdersOlderThanTheCutoffWithoutARecentNotifyAreClaimed(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("old-open", createdAt: TestTime.at(0)), in: store)
            try await Fixture.create(Fixture.order("old-paid", createdAt: TestTime.at(0)), in: store)
            try await Fixture.create(Fixture.order("old-notified", createdAt: TestTime.at(0)), in: store)
            try await Fixture.create(Fixture.order("young", createdAt: TestTime.at(90)), in: store)
            _ = try await Fixture.pay("old-paid", in: store)
            _ = try await store.touch("old-notified", .lastNotify, at: TestTime.at(80))
            let claimed = try await store.claimOpenOrders(
                noNotifySince: TestTime.at(60), now: TestTime.at(120), limit: 10, claimant: "a",
                leaseUntil: TestTime.at(180))
            #expect(claimed.map(\.outTradeNo) == ["old-open"])
        }
    }

    @Test(arguments: StoreKind.all) func claimsComeOldestFirstAndRespectTheLimit(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            for (name, at) in [("c", 30.0), ("a", 10.0), ("b", 20.0)] {
                try await Fixture.create(Fixture.order(name, createdAt: TestTime.at(at)), in: store)
            }
            let claimed = try await store.claimOpenOrders(
                noNotifySince: TestTime.at(100), now: TestTime.at(100), limit: 2, claimant: "a",
                leaseUntil: TestTime.at(200))
            #expect(claimed.map(\.outTradeNo) == ["a", "b"])
        }
    }
}
