// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import StorageCore
import Testing
import WeChatPay

/// The entitlement rules as a pure function of the payments: stacking, refunds, the Beijing
/// calendar and month ends, and the same answer whatever order the events came in.
struct EntitlementsTests {
    static let catalog = Catalog(products: [
        CatalogProduct(id: "vip-m", amount: 3000, description: "月卡", kind: .membership(MembershipPeriod("P1M")!), entitlement: "vip"),
        CatalogProduct(id: "vip-y", amount: 29800, description: "年卡", kind: .membership(MembershipPeriod("P1Y")!), entitlement: "vip"),
        CatalogProduct(id: "vip-d", amount: 100, description: "日卡", kind: .membership(MembershipPeriod("P7D")!), entitlement: "vip"),
        CatalogProduct(id: "swift-101", amount: 990, description: "课", appleProductID: "com.x.swift101"),
        CatalogProduct(id: "swift-late", amount: 990, description: "课", appleProductID: "com.x.swift101-late"),
        CatalogProduct(id: "swift-102", amount: 990, description: "课", kind: .course, entitlement: "bundle"),
        CatalogProduct(id: "coins", amount: 600, description: "币", appleProductID: "com.x.coins", kind: .consumable),
    ])

    /// A Beijing wall-clock time.
    static func beijing(_ text: String) -> Date { BeijingTime.parse(text)! }

    static func paid(_ outTradeNo: String, _ product: String?, at paidAt: Date, amount: Int = 3000, state: OrderState = .success,
                     refunded: Int = 0, channel: OrderChannel = .wechat, appleProductID: String? = nil) -> PaidOrder {
        PaidOrder(order: OrderRecord(
            outTradeNo: outTradeNo, amount: amount, description: "d", clientIP: "127.0.0.1", userID: "u1", productID: product,
            signType: "MD5", timeExpire: "20270101000000", expiresAt: paidAt, createdAt: paidAt, state: state, paidAt: paidAt,
            parametersDigest: "x", channel: channel, appleProductID: appleProductID,
            originalTransactionID: channel == .apple ? "2000\(outTradeNo.count)" : nil), refundedAmount: refunded)!
    }

    @Test("A pass bought while another runs starts where that one ends")
    func passesStack() throws {
        let rights = Entitlements(payments: [
            Self.paid("a", "vip-m", at: Self.beijing("20270305100000")),
            Self.paid("b", "vip-m", at: Self.beijing("20270310090000")),
        ], catalog: Self.catalog)
        let vip = try #require(rights.grant("vip"))
        #expect(vip.expiresAt == Self.beijing("20270505100000"))
        #expect(vip.source.outTradeNo == "b")
        #expect(vip.source.channel == .wechat)
        #expect(!vip.willRenew)
        #expect(vip.isActive(at: Self.beijing("20270505095959")))
        #expect(!vip.isActive(at: Self.beijing("20270505100000")))
    }

    @Test("A pass bought after the last one lapsed starts at its own payment")
    func aLapseRestartsFromThePayment() throws {
        let rights = Entitlements(payments: [
            Self.paid("a", "vip-d", at: Self.beijing("20270301080000")),
            Self.paid("b", "vip-m", at: Self.beijing("20270320120000")),
        ], catalog: Self.catalog)
        #expect(rights.grant("vip")?.expiresAt == Self.beijing("20270420120000"))
    }

    @Test("Refunding the first of two stacked passes in full shortens the entitlement to what the second gives alone")
    func aFullRefundShortensItBack() throws {
        let first = Self.beijing("20270305100000"), second = Self.beijing("20270310090000")
        let refunded = Entitlements(payments: [
            Self.paid("a", "vip-m", at: first, state: .refund, refunded: 3000),
            Self.paid("b", "vip-m", at: second),
        ], catalog: Self.catalog)
        #expect(refunded.grant("vip")?.expiresAt == Self.beijing("20270410090000"))
        #expect(refunded.grant("vip")?.source.outTradeNo == "b")
        // Only a full refund takes the pass away: a partial one leaves it stacked.
        let partial = Entitlements(payments: [
            Self.paid("a", "vip-m", at: first, state: .refund, refunded: 1000),
            Self.paid("b", "vip-m", at: second),
        ], catalog: Self.catalog)
        #expect(partial.grant("vip")?.expiresAt == Self.beijing("20270505100000"))
        // Both refunded: the entitlement is gone entirely.
        let none = Entitlements(payments: [
            Self.paid("a", "vip-m", at: first, state: .refund, refunded: 3000),
            Self.paid("b", "vip-m", at: second, state: .refund, refunded: 3000),
        ], catalog: Self.catalog)
        #expect(none.grants.isEmpty)
    }

    @Test("Payments in any order, ties broken by order number, give the same entitlements")
    func orderOfEventsDoesNotMatter() {
        let same = Self.beijing("20270310090000")
        let payments = [
            Self.paid("a", "vip-m", at: Self.beijing("20270131100000")),
            Self.paid("b", "vip-y", at: Self.beijing("20270201000000"), state: .refund, refunded: 29800),
            Self.paid("c", "vip-d", at: same),
            Self.paid("d", "vip-m", at: same),
            Self.paid("e", "vip-m", at: Self.beijing("20290101000000")),
            Self.paid("f", "swift-101", at: Self.beijing("20270101000000"), amount: 990),
            Self.paid("g", "swift-102", at: Self.beijing("20270102000000"), amount: 990),
        ]
        let expected = Entitlements(payments: payments, catalog: Self.catalog)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            #expect(Entitlements(payments: payments.shuffled(using: &generator), catalog: Self.catalog) == expected)
        }
        #expect(expected.grants.map(\.entitlement) == ["bundle", "swift-101", "vip"])
    }

    @Test("A month from the 31st ends on the last day of a shorter month, and stacked months count from that end")
    func monthEndsClamp() {
        #expect(Entitlements(payments: [Self.paid("a", "vip-m", at: Self.beijing("20270131100000"))], catalog: Self.catalog)
            .grant("vip")?.expiresAt == Self.beijing("20270228100000"))
        #expect(Entitlements(payments: [Self.paid("a", "vip-m", at: Self.beijing("20280131100000"))], catalog: Self.catalog)
            .grant("vip")?.expiresAt == Self.beijing("20280229100000"))
        #expect(Entitlements(payments: [
            Self.paid("a", "vip-m", at: Self.beijing("20280131100000")),
            Self.paid("b", "vip-m", at: Self.beijing("20280131110000")),
        ], catalog: Self.catalog).grant("vip")?.expiresAt == Self.beijing("20280329100000"))
        #expect(Entitlements(payments: [Self.paid("a", "vip-y", at: Self.beijing("20280229235959"))], catalog: Self.catalog)
            .grant("vip")?.expiresAt == Self.beijing("20290228235959"))
        #expect(Entitlements(payments: [Self.paid("a", "vip-m", at: Self.beijing("20271231235959"))], catalog: Self.catalog)
            .grant("vip")?.expiresAt == Self.beijing("20280131235959"))
    }

    @Test("Months are counted on Beijing's calendar, not UTC's")
    func beijingCalendar() {
        // 2027-01-30 16:30 UTC is January 31, 00:30 in Beijing: a month later is February 28,
        // 00:30 Beijing. On UTC's calendar it would have been February 28, 16:30 UTC.
        let paidAt = Date(timeIntervalSince1970: 1_801_326_600)  // 2027-01-30T16:30:00Z
        #expect(BeijingTime.format(paidAt) == "20270131003000")
        let end = Entitlements(payments: [Self.paid("a", "vip-m", at: paidAt)], catalog: Self.catalog).grant("vip")?.expiresAt
        #expect(end == Self.beijing("20270228003000"))
        #expect(end == Date(timeIntervalSince1970: 1_803_745_800))  // 2027-02-27T16:30:00Z
        // Milliseconds survive the arithmetic.
        #expect(BeijingTime.adding(months: 1, days: 0, to: paidAt.addingTimeInterval(0.25)) == end?.addingTimeInterval(0.25))
    }

    @Test("Courses grant for ever; App Store purchases grant their product's entitlement unless refunded or revoked; consumables and unknown products grant nothing")
    func coursesAndAppStorePurchases() throws {
        let at = Self.beijing("20270301000000")
        let rights = Entitlements(payments: [
            Self.paid("w1", "swift-102", at: at, amount: 990),
            Self.paid("i1", "swift-101", at: at, amount: 990, channel: .apple, appleProductID: "com.x.swift101"),
            Self.paid("i2", nil, at: at, amount: 600, channel: .apple, appleProductID: "com.x.coins"),
            Self.paid("i3", nil, at: at, amount: 600, channel: .apple, appleProductID: "com.x.unknown"),
            // Recorded without a product (`unknown_product`) while the catalog did not have it:
            // nothing, though this catalog maps its App Store id to a course.
            Self.paid("i5", nil, at: at, amount: 990, channel: .apple, appleProductID: "com.x.swift101-late"),
            Self.paid("i4", "vip-y", at: at, amount: 29800, state: .refund, channel: .apple),
            Self.paid("w2", "retired-gone", at: at, amount: 100),
        ], catalog: Self.catalog)
        #expect(rights.grants.map(\.entitlement) == ["bundle", "retired-gone", "swift-101"])
        let course = try #require(rights.grant("swift-101"))
        #expect(course.expiresAt == nil)
        #expect(course.isActive(at: Self.beijing("29991231000000")))
        #expect(course.source.channel == .apple)
        #expect(course.source.originalTransactionID != nil)
        // A course held for ever outranks any pass of the same entitlement.
        let both = Entitlements(payments: [
            Self.paid("a", "vip-m", at: at),
            Self.paid("b", "swift-102", at: at, amount: 990),
        ], catalog: Catalog(products: Self.catalog.products + [
            CatalogProduct(id: "vip-life", amount: 99900, description: "终身", entitlement: "vip"),
        ]))
        #expect(both.grant("vip")?.expiresAt != nil)
        let lifetime = Entitlements(payments: [
            Self.paid("a", "vip-m", at: at),
            Self.paid("c", "vip-life", at: at.addingTimeInterval(60), amount: 99900),
        ], catalog: Catalog(products: Self.catalog.products + [
            CatalogProduct(id: "vip-life", amount: 99900, description: "终身", entitlement: "vip"),
        ]))
        #expect(lifetime.grant("vip")?.expiresAt == nil)
        #expect(lifetime.grant("vip")?.source.outTradeNo == "c")
    }

    @Test("A product the catalog does not know, named like an entitlement its products grant, grants nothing; any other still grants its id")
    func anUnknownProductNamedLikeAnEntitlementGrantsNothing() {
        let at = Self.beijing("20270301000000")
        let rights = Entitlements(payments: [
            Self.paid("w1", "vip", at: at, amount: 1),
            Self.paid("w2", "VIP", at: at, amount: 1),
            Self.paid("w3", " vip", at: at, amount: 1),
            Self.paid("w4", "ｖｉｐ", at: at, amount: 1),
            // Orders paid before such ids were refused at creation grant nothing either.
            Self.paid("w4a", "vi\u{200B}p", at: at, amount: 1),
            Self.paid("w4b", "vi\u{00AD}p", at: at, amount: 1),
            Self.paid("w4c", "vİp", at: at, amount: 1),
            Self.paid("w4d", "vip.", at: at, amount: 1),
            Self.paid("w4e", "vip-lifetime", at: at, amount: 1),
            Self.paid("w5", "Bundle", at: at, amount: 1),
            // Holding a catalog entitlement whole reads as it too ("bundle" is one here).
            Self.paid("w6", "bundle-9", at: at, amount: 1),
            Self.paid("w6a", "gift-9", at: at, amount: 1),
        ], catalog: Self.catalog)
        #expect(rights.grants.map(\.entitlement) == ["gift-9"])
        #expect(!Entitlements.canChange(OrderRecord(
            outTradeNo: "w7", amount: 1, description: "d", clientIP: "127.0.0.1", userID: "u1", productID: "VIP", signType: "MD5",
            timeExpire: "20270101000000", expiresAt: at, createdAt: at, parametersDigest: "x"), catalog: Self.catalog))
    }

    @Test("The answer names each entitlement with active, expires_at (null for ever), source and will_renew")
    func json() {
        let rights = Entitlements(payments: [
            Self.paid("a", "vip-m", at: Self.beijing("20270305100000")),
            Self.paid("f", "swift-101", at: Self.beijing("20270101000000"), amount: 990, channel: .apple, appleProductID: "com.x.swift101"),
        ], catalog: Self.catalog)
        #expect(String(decoding: rights.json(userID: "u1", at: Self.beijing("20270601000000")), as: UTF8.self)
            == #"{"entitlements":[{"active":true,"entitlement":"swift-101","expires_at":null,"source":{"channel":"apple","order":"f","original_transaction_id":"20001"},"will_renew":false},{"active":false,"entitlement":"vip","expires_at":"2027-04-05T10:00:00.000+08:00","source":{"channel":"wechat","order":"a"},"will_renew":false}],"user_id":"u1"}"#)
    }
}
