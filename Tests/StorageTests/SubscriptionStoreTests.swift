// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

/// An auto-renewable subscription's state: the merge of every verified word from Apple about it
/// (pure), and the row both stores keep of it.
struct SubscriptionStoreTests {
    static let day: TimeInterval = 86400

    /// Apple's word at `signed` days about transaction `transaction` (bought at `bought` days,
    /// ending at `ends` days).
    static func word(_ signed: Double, _ transaction: String, bought: Double, ends: Double, revoked: Double? = nil,
                     autoRenew: Bool? = true, retry: Bool = false, grace: Double? = nil, stated: SubscriptionStatus? = nil,
                     source: String = "notification") -> SubscriptionObservation {
        SubscriptionObservation(
            originalTransactionID: "1000", environment: "Sandbox", signedAt: TestTime.at(signed * day),
            transaction: .init(transactionID: transaction, productID: "vip.monthly", purchaseDate: TestTime.at(bought * day),
                               expiresDate: TestTime.at(ends * day), revocationDate: revoked.map { TestTime.at($0 * day) }),
            renewal: autoRenew.map {
                .init(autoRenew: $0, autoRenewProductID: "vip.monthly", inBillingRetry: retry,
                      gracePeriodExpiresDate: grace.map { TestTime.at($0 * day) })
            },
            stated: stated, source: "\(source) at \(signed)")
    }

    /// A month's life: bought, renewed, a failed charge into a grace period, recovered, an older
    /// period refunded, auto-renew turned off, the period extended.
    static let lifetime: [SubscriptionObservation] = [
        word(0, "1000", bought: 0, ends: 30),
        word(30, "1001", bought: 30, ends: 60),
        word(60, "1001", bought: 30, ends: 60, retry: true, grace: 76, stated: .gracePeriod),
        word(65, "1002", bought: 65, ends: 90),
        word(66, "1000", bought: 0, ends: 30, revoked: 66),
        word(70, "1002", bought: 65, ends: 90, autoRenew: false),
        word(71, "1002", bought: 65, ends: 97, autoRenew: nil),
    ]

    static func merged(_ words: [SubscriptionObservation]) -> SubscriptionRecord {
        var record = SubscriptionRecord(first: words[0], heardAt: TestTime.at(0))
        for word in words.dropFirst() { record = record.merging(word, heardAt: TestTime.at(0)) }
        return record
    }

    @Test("Whatever order Apple's words about a subscription arrive in, its row comes out the same")
    func everyOrderOfTheWordsMergesToTheSameRow() {
        let expected = Self.merged(Self.lifetime)
        #expect(expected.latestTransactionID == "1002" && expected.expiresAt == TestTime.at(97 * Self.day))
        #expect(expected.status == .active && !expected.autoRenew && !expected.willRenew && expected.revokedAt == nil)
        var permutations = 0
        func permute(_ chosen: [SubscriptionObservation], _ rest: [SubscriptionObservation]) {
            guard !rest.isEmpty else {
                permutations += 1
                let record = Self.merged(chosen)
                #expect(record == expected, "\(chosen.map(\.source))")
                return
            }
            for index in rest.indices {
                var remaining = rest
                let next = remaining.remove(at: index)
                permute(chosen + [next], remaining)
            }
        }
        permute([], Self.lifetime)
        #expect(permutations == 5040)
        // The same word twice changes nothing.
        #expect(expected.merging(Self.lifetime[3], heardAt: TestTime.at(0)) == expected)
    }

    @Test("In a grace period access runs to the grace period's end; once it expires, billing retry ends access at the period's end")
    func aGracePeriodExtendsAccessAndBillingRetryDoesNot() {
        let renewed = Self.merged(Array(Self.lifetime[0...1]))
        let grace = renewed.merging(Self.lifetime[2], heardAt: TestTime.at(0))
        #expect(grace.status == .gracePeriod && grace.accessEndsAt == TestTime.at(76 * Self.day) && grace.willRenew)
        let retry = grace.merging(Self.word(76, "1001", bought: 30, ends: 60, retry: true, stated: .billingRetry),
                                  heardAt: TestTime.at(0))
        #expect(retry.status == .billingRetry && retry.accessEndsAt == TestTime.at(60 * Self.day) && retry.willRenew)
        let expired = retry.merging(Self.word(120, "1001", bought: 30, ends: 60, autoRenew: false, stated: .expired),
                                    heardAt: TestTime.at(0))
        #expect(expired.status == .expired && !expired.willRenew)
        // A word without a stated status follows the facts: still in billing retry past the grace period.
        let unstated = grace.merging(Self.word(80, "1001", bought: 30, ends: 60, retry: true, grace: 76), heardAt: TestTime.at(0))
        #expect(unstated.status == .billingRetry)
    }

    @Test("A refund of an older period leaves the subscription as it is; of the latest, it revokes it until Apple reverses the refund")
    func onlyTheLatestTransactionsRefundRevokes() {
        let renewed = Self.merged(Array(Self.lifetime[0...1]))
        let olderRefunded = renewed.merging(Self.word(40, "1000", bought: 0, ends: 30, revoked: 40), heardAt: TestTime.at(0))
        #expect(olderRefunded.status == .active && olderRefunded.accessEndsAt == TestTime.at(60 * Self.day))
        let revoked = renewed.merging(Self.word(45, "1001", bought: 30, ends: 60, revoked: 45, autoRenew: false), heardAt: TestTime.at(0))
        #expect(revoked.status == .revoked && revoked.accessEndsAt == TestTime.at(45 * Self.day) && !revoked.willRenew)
        let reversed = revoked.merging(Self.word(50, "1001", bought: 30, ends: 60, autoRenew: true), heardAt: TestTime.at(0))
        #expect(reversed.status == .active && reversed.accessEndsAt == TestTime.at(60 * Self.day))
    }

    @Test("Both stores make a subscription's row on first sight, merge every later word, and write the announcement only when what it grants changed",
          arguments: StoreKind.all)
    func theRowIsMergedAndAnnouncesOnlyChanges(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("SUB-1", amount: 3000, userID: "u1"), in: store)
            func announcement(_ id: String) -> OutboxEvent {
                OutboxEvent(id: id, outTradeNo: "SUB-1", type: "entitlement.changed", payload: "{}", createdAt: TestTime.at(0))
            }
            let first = try await store.recordSubscription(Self.lifetime[0], heardAt: TestTime.at(1), announcement: announcement("e1"))
            #expect(first.grantsChanged && first.record == SubscriptionRecord(first: Self.lifetime[0], heardAt: TestTime.at(1)))
            let renewed = try await store.recordSubscription(Self.lifetime[1], heardAt: TestTime.at(2), announcement: announcement("e2"))
            #expect(renewed.grantsChanged && renewed.record.latestTransactionID == "1001")
            // An older word, heard later: only when it was heard changes.
            let old = try await store.recordSubscription(Self.lifetime[0], heardAt: TestTime.at(3), announcement: announcement("e3"))
            #expect(!old.grantsChanged && old.record.latestTransactionID == "1001" && old.record.checkedAt == TestTime.at(3))
            #expect(try await store.outboxEvents("SUB-1").map(\.id) == ["e1", "e2"])

            let read = try await store.subscriptions(originalTransactionIDs: ["1000", "unknown", "1000"])
            #expect(read == [old.record])
            #expect(try await store.subscriptions(originalTransactionIDs: []).isEmpty)
            // Every part, with all optional columns set, survives the round trip.
            for word in Self.lifetime.dropFirst(2) {
                _ = try await store.recordSubscription(word, heardAt: TestTime.at(4), announcement: nil)
            }
            var expected = Self.merged(Self.lifetime)
            expected.checkedAt = TestTime.at(4)
            #expect(try await store.subscriptions(originalTransactionIDs: ["1000"]) == [expected])
        }
    }

    @Test("The reconciler is handed the subscriptions Apple may still renew that end soon or were not heard of for a period, least recently heard first",
          arguments: StoreKind.all)
    func subscriptionsToRecheckAreTheRenewingOnesNearTheirEndOrSilent(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            func subscription(_ id: String, ends: Double, heard: Double, stated: SubscriptionStatus? = nil) async throws {
                var word = Self.word(0, id, bought: ends - 30, ends: ends, stated: stated)
                word.originalTransactionID = id
                _ = try await store.recordSubscription(word, heardAt: TestTime.at(heard * Self.day), announcement: nil)
            }
            try await subscription("ENDING", ends: 100.5, heard: 90)
            try await subscription("ENDED", ends: 95, heard: 80)
            try await subscription("SILENT", ends: 200, heard: 60)        // heard of a period (30 days) ago
            try await subscription("FRESH", ends: 100.5, heard: 99.99)    // asked within the hour
            try await subscription("LATER", ends: 150, heard: 90)
            try await subscription("OVER", ends: 95, heard: 80, stated: .expired)
            let now = TestTime.at(100 * Self.day)
            let due = try await store.subscriptionsToRecheck(now: now, endingBefore: now.addingTimeInterval(Self.day),
                                                             heardBefore: now.addingTimeInterval(-3600), limit: 10)
            #expect(due.map(\.originalTransactionID) == ["SILENT", "ENDED", "ENDING"])
            #expect(try await store.subscriptionsToRecheck(now: now, endingBefore: now.addingTimeInterval(Self.day),
                                                           heardBefore: now.addingTimeInterval(-3600), limit: 1)
                .map(\.originalTransactionID) == ["SILENT"])
            try await store.markSubscriptionChecked("SILENT", at: now)
            try await store.markSubscriptionChecked("ENDED", at: TestTime.at(0))   // never moves back
            let next = try await store.subscriptionsToRecheck(now: now, endingBefore: now.addingTimeInterval(Self.day),
                                                              heardBefore: now.addingTimeInterval(-3600), limit: 10)
            #expect(next.map(\.originalTransactionID) == ["ENDED", "ENDING"])
        }
    }
}
