// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import StorageCore
import Testing
import WeChatPay

/// How App Store subscriptions grant a membership: Apple sets their periods (no stacking), their
/// state says how far they reach and whether they renew, and a membership lasts as long as the
/// furthest of its WeChat passes and its subscriptions.
struct SubscriptionEntitlementsTests {
    static let catalog = Catalog(products: [
        CatalogProduct(id: "vip-m", amount: 3000, description: "月卡", kind: .membership(MembershipPeriod("P1M")!), entitlement: "vip"),
        CatalogProduct(id: "vip-ios", amount: 3000, description: "月卡（iOS）", appleProductID: "vip.monthly",
                       kind: .membership(MembershipPeriod("P1M")!), entitlement: "vip"),
    ])

    static func beijing(_ text: String) -> Date { BeijingTime.parse(text)! }

    /// The subscription group of `catalog` with a cheaper tier granting another entitlement and a
    /// higher yearly one, for changes of product within one subscription.
    static let tiers = Catalog(products: catalog.products + [
        CatalogProduct(id: "lite-ios", amount: 1000, description: "轻享月卡（iOS）", appleProductID: "lite.monthly",
                       kind: .membership(MembershipPeriod("P1M")!), entitlement: "lite"),
        CatalogProduct(id: "ultra-ios", amount: 30000, description: "旗舰年卡（iOS）", appleProductID: "ultra.yearly",
                       kind: .membership(MembershipPeriod("P1Y")!), entitlement: "ultra"),
    ])

    /// An App Store payment of subscription 1000 in product `productID` (nil: one the catalog does not have).
    static func payment(_ outTradeNo: String, _ productID: String?, apple: String, at paidAt: Date) -> PaidOrder {
        PaidOrder(outTradeNo: outTradeNo, amount: 1000, state: .success, channel: .apple, paidAt: paidAt, productID: productID,
                  appleProductID: apple, originalTransactionID: "1000", refundedAmount: 0, appleTransactionID: "t-" + outTradeNo)
    }

    /// An App Store payment of the monthly subscription `chain`, by transaction `t-<outTradeNo>`.
    static func apple(_ outTradeNo: String, at paidAt: Date, chain: String = "1000", state: OrderState = .success) -> PaidOrder {
        PaidOrder(outTradeNo: outTradeNo, amount: 3000, state: state, channel: .apple, paidAt: paidAt, productID: "vip-ios",
                  appleProductID: "vip.monthly", originalTransactionID: chain, refundedAmount: 0, appleTransactionID: "t-" + outTradeNo)
    }

    /// The state of `chain` whose latest transaction paid order `latest`.
    static func state(_ chain: String = "1000", latest: String, started: Date, ends: Date, status: SubscriptionStatus? = nil,
                      autoRenew: Bool = true, grace: Date? = nil, revoked: Date? = nil) -> SubscriptionRecord {
        SubscriptionRecord(originalTransactionID: chain, environment: "Sandbox", latestTransactionID: "t-" + latest, productID: "vip.monthly",
                           periodStartedAt: started, expiresAt: ends, transactionSignedAt: started, revokedAt: revoked,
                           renewalSignedAt: started, autoRenew: autoRenew, autoRenewProductID: "vip.monthly",
                           inBillingRetry: status == .gracePeriod || status == .billingRetry, gracePeriodExpiresAt: grace,
                           signedAt: started, stated: status, source: "test", checkedAt: started)
    }

    @Test("Renewals of one subscription do not stack: each reaches a period from its purchase, and the state, once known, says how far and whether it renews")
    func renewalsDoNotStackAndTheStateDecides() throws {
        let payments = [Self.apple("s1", at: Self.beijing("20270301100000")), Self.apple("s2", at: Self.beijing("20270401100000"))]
        let alone = try #require(Entitlements(payments: payments, catalog: Self.catalog).grant("vip"))
        #expect(alone.expiresAt == Self.beijing("20270501100000") && !alone.willRenew)
        #expect(alone.source.outTradeNo == "s2" && alone.source.originalTransactionID == "1000")

        // Apple extended the period by a week and will renew it.
        let extended = Self.state(latest: "s2", started: Self.beijing("20270401100000"), ends: Self.beijing("20270508100000"))
        let withState = try #require(Entitlements(payments: payments, subscriptions: [extended], catalog: Self.catalog).grant("vip"))
        #expect(withState.expiresAt == Self.beijing("20270508100000") && withState.willRenew)
        // A state of a subscription none of the payments belongs to is not read.
        let other = Self.state("2000", latest: "s2", started: Self.beijing("20270401100000"), ends: Self.beijing("20280101000000"))
        #expect(Entitlements(payments: payments, subscriptions: [other], catalog: Self.catalog).grant("vip") == alone)
        #expect(Entitlements.subscriptionIDs(of: payments, catalog: Self.catalog) == ["1000"])
    }

    @Test("A grace period keeps access to its end; a refunded latest period ends it at the refund; a payment newer than the state adds its period")
    func graceRevocationAndANewerPayment() throws {
        let first = Self.apple("s1", at: Self.beijing("20270301100000"))
        let grace = Self.state(latest: "s1", started: Self.beijing("20270301100000"), ends: Self.beijing("20270401100000"), status: .gracePeriod,
                               grace: Self.beijing("20270417100000"))
        let inGrace = try #require(Entitlements(payments: [first], subscriptions: [grace], catalog: Self.catalog).grant("vip"))
        #expect(inGrace.expiresAt == Self.beijing("20270417100000") && inGrace.willRenew)

        // The latest period (s2) refunded ten days in: its order is REFUND, the state revoked.
        let refunded = [first, Self.apple("s2", at: Self.beijing("20270401100000"), state: .refund)]
        let revoked = Self.state(latest: "s2", started: Self.beijing("20270401100000"), ends: Self.beijing("20270501100000"), autoRenew: false,
                                 revoked: Self.beijing("20270411100000"))
        let ended = try #require(Entitlements(payments: refunded, subscriptions: [revoked], catalog: Self.catalog).grant("vip"))
        #expect(ended.expiresAt == Self.beijing("20270411100000") && !ended.willRenew)
        #expect(ended.source.outTradeNo == "s2", "the refunded period's order, the state's latest")

        // A renewal credited before Apple's word on it reached the state.
        let stale = Self.state(latest: "s1", started: Self.beijing("20270301100000"), ends: Self.beijing("20270401100000"))
        let renewed = [first, Self.apple("s2", at: Self.beijing("20270401100000"))]
        #expect(Entitlements(payments: renewed, subscriptions: [stale], catalog: Self.catalog).grant("vip")?.expiresAt
            == Self.beijing("20270501100000"))
    }

    @Test("A membership lasts as long as the furthest of its WeChat passes and its subscriptions, and renews when a subscription will")
    func passesAndSubscriptionsTogether() throws {
        let payments = [
            Self.apple("s1", at: Self.beijing("20270301100000")),
            PaidOrder(outTradeNo: "w1", amount: 3000, state: .success, channel: .wechat, paidAt: Self.beijing("20270305100000"),
                      productID: "vip-m", appleProductID: nil, originalTransactionID: nil, refundedAmount: 0),
            PaidOrder(outTradeNo: "w2", amount: 3000, state: .success, channel: .wechat, paidAt: Self.beijing("20270306100000"),
                      productID: "vip-m", appleProductID: nil, originalTransactionID: nil, refundedAmount: 0),
        ]
        let state = Self.state(latest: "s1", started: Self.beijing("20270301100000"), ends: Self.beijing("20270401100000"))
        let vip = try #require(Entitlements(payments: payments, subscriptions: [state], catalog: Self.catalog).grant("vip"))
        // The passes stack among themselves (to 5 May), not on the subscription.
        #expect(vip.expiresAt == Self.beijing("20270505100000") && vip.source.outTradeNo == "w2" && vip.willRenew)
        let off = Self.state(latest: "s1", started: Self.beijing("20270301100000"), ends: Self.beijing("20270401100000"), autoRenew: false)
        #expect(Entitlements(payments: payments, subscriptions: [off], catalog: Self.catalog).grant("vip")?.willRenew == false)
    }

    @Test("A subscription's state another user's resubscription moved on is not this user's: their own payments say how far it reached")
    func aStateWhoseLatestTransactionIsAnotherUsersIsIgnored() throws {
        // Alice's two months; then Bob, on the same App Store account, resubscribed: the state's
        // latest transaction paid Bob's order, not one of Alice's.
        let alice = [Self.apple("a1", at: Self.beijing("20270101100000")), Self.apple("a2", at: Self.beijing("20270201100000"))]
        let bobs = Self.state(latest: "b1", started: Self.beijing("20270601100000"), ends: Self.beijing("20270701100000"))
        let vip = try #require(Entitlements(payments: alice, subscriptions: [bobs], catalog: Self.catalog).grant("vip"))
        #expect(vip.expiresAt == Self.beijing("20270301100000") && !vip.willRenew && vip.source.outTradeNo == "a2")
        let bob = [Self.apple("b1", at: Self.beijing("20270601100000"))]
        #expect(Entitlements(payments: bob, subscriptions: [bobs], catalog: Self.catalog).grant("vip")?.willRenew == true)
    }

    @Test("After a downgrade the earlier product's entitlement ends with its last period; the state, now the new product's, extends only the new one")
    func aDowngradedSubscriptionStopsGrantingTheHigherTier() throws {
        let payments = [
            Self.payment("m1", "vip-ios", apple: "vip.monthly", at: Self.beijing("20270301100000")),
            Self.payment("l1", "lite-ios", apple: "lite.monthly", at: Self.beijing("20270401100000")),
            Self.payment("l2", "lite-ios", apple: "lite.monthly", at: Self.beijing("20270501100000")),
        ]
        var state = Self.state(latest: "l2", started: Self.beijing("20270501100000"), ends: Self.beijing("20270601100000"))
        state.productID = "lite.monthly"
        state.autoRenewProductID = "lite.monthly"
        for subscriptions in [[], [state]] {
            let entitlements = Entitlements(payments: payments, subscriptions: subscriptions, catalog: Self.tiers)
            let vip = try #require(entitlements.grant("vip"))
            #expect(vip.expiresAt == Self.beijing("20270401100000") && !vip.willRenew && vip.source.outTradeNo == "m1")
            let lite = try #require(entitlements.grant("lite"))
            #expect(lite.expiresAt == Self.beijing("20270601100000") && lite.source.outTradeNo == "l2")
            #expect(lite.willRenew == !subscriptions.isEmpty)
        }
    }

    @Test("After an upgrade the earlier product's entitlement ends at the upgrade, not at the end of the period Apple refunded the rest of")
    func anUpgradeEndsTheLowerTierAtOnce() throws {
        let payments = [
            Self.payment("m1", "vip-ios", apple: "vip.monthly", at: Self.beijing("20270301100000")),
            Self.payment("u1", "ultra-ios", apple: "ultra.yearly", at: Self.beijing("20270310100000")),
        ]
        var state = Self.state(latest: "u1", started: Self.beijing("20270310100000"), ends: Self.beijing("20280310100000"))
        state.productID = "ultra.yearly"
        state.autoRenewProductID = "ultra.yearly"
        let entitlements = Entitlements(payments: payments, subscriptions: [state], catalog: Self.tiers)
        #expect(entitlements.grant("vip")?.expiresAt == Self.beijing("20270310100000"))
        #expect(entitlements.grant("ultra")?.expiresAt == Self.beijing("20280310100000"))
    }

    @Test("Renewals into a product the catalog does not have grant nothing, and do not extend the product the subscription left")
    func renewalsOfAnUnknownProductExtendNothing() throws {
        let payments = [
            Self.payment("m1", "vip-ios", apple: "vip.monthly", at: Self.beijing("20270301100000")),
            Self.payment("x1", nil, apple: "mystery.monthly", at: Self.beijing("20270401100000")),
            Self.payment("x2", nil, apple: "mystery.monthly", at: Self.beijing("20270501100000")),
        ]
        var state = Self.state(latest: "x2", started: Self.beijing("20270501100000"), ends: Self.beijing("20270601100000"))
        state.productID = "mystery.monthly"
        state.autoRenewProductID = "mystery.monthly"
        let entitlements = Entitlements(payments: payments, subscriptions: [state], catalog: Self.tiers)
        #expect(entitlements.grants.map(\.entitlement) == ["vip"])
        let vip = try #require(entitlements.grant("vip"))
        #expect(vip.expiresAt == Self.beijing("20270401100000") && !vip.willRenew && vip.source.outTradeNo == "m1")
    }

    @Test("A downgrade waiting for the renewal says the current entitlement will not renew: Apple renews the subscription into another one")
    func aPendingDowngradeRenewsTheOtherEntitlement() throws {
        let payments = [Self.payment("m1", "vip-ios", apple: "vip.monthly", at: Self.beijing("20270301100000"))]
        var state = Self.state(latest: "m1", started: Self.beijing("20270301100000"), ends: Self.beijing("20270401100000"))
        #expect(Entitlements(payments: payments, subscriptions: [state], catalog: Self.tiers).grant("vip")?.willRenew == true)
        for next in ["lite.monthly", "mystery.monthly"] {
            state.autoRenewProductID = next
            let vip = try #require(Entitlements(payments: payments, subscriptions: [state], catalog: Self.tiers).grant("vip"))
            #expect(vip.expiresAt == Self.beijing("20270401100000") && !vip.willRenew, "\(next)")
        }
        // The subscription gave lite before an upgrade to vip: Apple renews it into lite, whose
        // entitlement (lapsed at the upgrade) will renew.
        let both = [Self.payment("l1", "lite-ios", apple: "lite.monthly", at: Self.beijing("20270201100000"))] + payments
        state.autoRenewProductID = "lite.monthly"
        let downgrading = Entitlements(payments: both, subscriptions: [state], catalog: Self.tiers)
        let lite = try #require(downgrading.grant("lite"))
        #expect(lite.expiresAt == Self.beijing("20270301100000") && lite.willRenew)
        #expect(downgrading.grant("vip")?.willRenew == false)
        state.autoRenew = false
        #expect(Entitlements(payments: both, subscriptions: [state], catalog: Self.tiers).grant("lite")?.willRenew == false)
        state.autoRenew = true
        // A move between two products granting the same entitlement still renews it.
        state.autoRenewProductID = "vip.monthly"
        state.productID = "vip.monthly"
        #expect(Entitlements(payments: payments, subscriptions: [state], catalog: Self.tiers).grant("vip")?.willRenew == true)
    }

    @Test("Memberships bought through the App Store without a subscription (Non-Renewing Subscriptions) stack like passes, WeChat's included")
    func nonRenewingPurchasesStack() throws {
        // Each its own original transaction, and Apple keeps no subscription state of any.
        let payments = [
            PaidOrder(outTradeNo: "n1", amount: 3000, state: .success, channel: .apple, paidAt: Self.beijing("20270301100000"),
                      productID: "vip-ios", appleProductID: "vip.monthly", originalTransactionID: "3001", refundedAmount: 0,
                      appleTransactionID: "3001"),
            PaidOrder(outTradeNo: "n2", amount: 3000, state: .success, channel: .apple, paidAt: Self.beijing("20270302100000"),
                      productID: "vip-ios", appleProductID: "vip.monthly", originalTransactionID: "3002", refundedAmount: 0,
                      appleTransactionID: "3002"),
            PaidOrder(outTradeNo: "w1", amount: 3000, state: .success, channel: .wechat, paidAt: Self.beijing("20270303100000"),
                      productID: "vip-m", appleProductID: nil, originalTransactionID: nil, refundedAmount: 0),
        ]
        let vip = try #require(Entitlements(payments: payments, catalog: Self.tiers).grant("vip"))
        #expect(vip.expiresAt == Self.beijing("20270601100000") && !vip.willRenew && vip.source.outTradeNo == "w1")
    }
}
