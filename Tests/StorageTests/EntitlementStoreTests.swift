// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

/// The read entitlements are computed from, on both stores: a user's paid orders only, oldest
/// payment first, each with what its successful refunds gave back.
struct EntitlementStoreTests {
    @Test("A user's paid orders come oldest payment first, with only their successful refunds summed", arguments: StoreKind.all)
    func paidOrdersAreTheUsersPaymentsWithTheirRefundedSums(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            for (number, user) in [("P2", "u1"), ("P1", "u1"), ("P3", "u1"), ("OPEN", "u1"), ("OTHER", "u2"), ("TIE", "u1")] {
                try await Fixture.create(Fixture.order(number, amount: 1000, userID: user), in: store)
            }
            _ = try await Fixture.pay("P1", in: store, at: TestTime.at(10))
            _ = try await Fixture.pay("P2", in: store, at: TestTime.at(20))
            _ = try await Fixture.pay("TIE", in: store, at: TestTime.at(20))
            _ = try await Fixture.pay("P3", in: store, at: TestTime.at(30))
            _ = try await Fixture.pay("OTHER", in: store, at: TestTime.at(5))
            // P1 refunded in two parts, both successful: the order turns REFUND, 1000 back.
            _ = try await RefundStoreTests.create(RefundStoreTests.request("R1", order: "P1", amount: 400), in: store)
            _ = try await RefundStoreTests.create(RefundStoreTests.request("R2", order: "P1", amount: 600), in: store)
            _ = try await RefundStoreTests.succeed("R1", in: store)
            _ = try await RefundStoreTests.succeed("R2", in: store)
            // P2's refund is still processing: nothing was given back yet.
            _ = try await RefundStoreTests.create(RefundStoreTests.request("R3", order: "P2", amount: 500), in: store)

            let paid = try await store.paidOrders(userID: "u1")
            #expect(paid.map(\.outTradeNo) == ["P1", "P2", "TIE", "P3"])
            #expect(paid.map(\.refundedAmount) == [1000, 0, 0, 0])
            #expect(paid.first?.state == .refund)
            #expect(paid.first?.paidAt == TestTime.at(10))
            #expect(try await store.paidOrders(userID: "u2").map(\.outTradeNo) == ["OTHER"])
            #expect(try await store.paidOrders(userID: "nobody").isEmpty)
        }
    }
}
