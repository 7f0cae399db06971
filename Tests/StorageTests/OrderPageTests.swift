// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import Testing

/// A user's orders page by page: newest first, no order twice or missed, whatever is inserted
/// between two pages.
struct OrderPageTests {
    @Test(arguments: StoreKind.all) func pagesWalkAUsersOrdersNewestFirstAndTheLastHasNoNextKey(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            // Seven orders, three of them in one millisecond: out_trade_no breaks the tie.
            for (index, second) in [0.0, 1, 2, 2, 2, 3, 4].enumerated() {
                try await Fixture.create(
                    Fixture.order("P\(index)", createdAt: TestTime.at(second), userID: "alice"), in: store)
            }
            try await Fixture.create(Fixture.order("P-bob", userID: "bob"), in: store)
            var seen: [String] = []
            var key: OrderPageKey?
            var pages = 0
            repeat {
                let page = try await store.orders(userID: "alice", limit: 3, after: key)
                #expect(page.orders.count <= 3)
                seen += page.orders.map(\.outTradeNo)
                key = page.next
                pages += 1
            } while key != nil && pages < 10
            #expect(seen == ["P6", "P5", "P4", "P3", "P2", "P1", "P0"])
            #expect(pages == 3)
            // A page that ends exactly at the last order says there is no more.
            let exact = try await store.orders(userID: "alice", limit: 7, after: nil)
            #expect(exact.orders.count == 7 && exact.next == nil)
            #expect(try await store.orders(userID: "carol", limit: 5, after: nil) == OrderPage(orders: [], next: nil))
        }
    }

    @Test(arguments: StoreKind.all) func ordersInsertedBetweenPagesNeitherRepeatNorHideOlderOnes(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            for index in 0..<6 {
                try await Fixture.create(
                    Fixture.order("Q\(index)", createdAt: TestTime.at(Double(index * 10)), userID: "alice"), in: store)
            }
            let first = try await store.orders(userID: "alice", limit: 2, after: nil)
            #expect(first.orders.map(\.outTradeNo) == ["Q5", "Q4"])
            // Meanwhile: a newer order, and one whose clock put it among the older ones.
            try await Fixture.create(Fixture.order("Q-new", createdAt: TestTime.at(100), userID: "alice"), in: store)
            try await Fixture.create(Fixture.order("Q-late", createdAt: TestTime.at(15), userID: "alice"), in: store)
            var rest: [String] = []
            var key = first.next
            while let current = key {
                let page = try await store.orders(userID: "alice", limit: 2, after: current)
                rest += page.orders.map(\.outTradeNo)
                key = page.next
            }
            // Every order that existed at the first page appears exactly once; the newer one waits
            // for a fresh first page, the one that sorts among the older ones appears in its place.
            #expect(rest == ["Q3", "Q2", "Q-late", "Q1", "Q0"])
        }
    }
}
