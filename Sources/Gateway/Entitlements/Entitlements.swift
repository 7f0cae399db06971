// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import StorageCore

/// What a user may open, until when and why: computed from the user's paid orders and the
/// catalog, every time, never kept. The one place these rules live:
///
/// - A **course** order (the catalog's default type) grants its product's entitlement for ever.
/// - A **membership** order grants its entitlement for the product's period. Passes stack: taken
///   in the order they were paid (`paidAt`, then `out_trade_no`), each one starts at the later of
///   its payment and the end the passes before it reached, and adds its period there on Beijing's
///   calendar (month ends clamped: `MembershipPeriod`). A pass bought while another runs therefore
///   starts where that one ends; one bought after a lapse starts at its payment.
/// - An **App Store subscription** (the App Store orders of a membership, one chain per
///   `original_transaction_id`) does not stack: Apple sets its periods. When its state's latest
///   transaction paid one of the user's orders, it reaches as far as that state says
///   (`SubscriptionRecord.accessEndsAt`: the period's end, the grace period's in a grace period,
///   the revocation when its latest transaction was refunded) and renews when the state says so;
///   a payment newer than the state (credited before Apple's word on it) reaches its payment plus
///   a period; with no state of the user's, each payment does. The state is its latest
///   product's: after a change of product (an upgrade, a downgrade, one the catalog does not
///   have) the earlier product's payments reach their own periods only, each cut where the
///   subscription's next payment begins; it renews the entitlement of the product Apple will
///   renew it into. A membership bought through the App Store that Apple keeps no subscription
///   state of (a Non-Renewing Subscription) is a pass, stacked with WeChat's. The membership lasts
///   as long as the furthest of its pass stack and its subscriptions.
/// - A **consumable** grants nothing (coins, credits: the business counts them itself).
/// - A WeChat order refunded in full grants nothing, and the passes are recomputed without it, so
///   a refunded pass shortens the time the others give. A partial refund (a goodwill gesture)
///   leaves the grant. An App Store order in REFUND was refunded or revoked by Apple: nothing.
/// - An order whose product the catalog no longer has grants what a course would (its product id,
///   for ever): retire a product with `"active": false` instead of deleting it, so a membership
///   keeps its period. Unless that id reads as an entitlement a catalog product grants
///   (`Catalog.grantsLike`): then it grants nothing. An order with no catalog product at all (an
///   App Store purchase of a product the catalog never had, flagged `unknown_product`) grants
///   nothing.
///
/// Because the result is a function of the set of payments and of the subscriptions' states alone
/// (each state the same whatever order Apple's words arrived in: `SubscriptionRecord.merging`),
/// events that arrive in any order — a late notify, a refund before its order's page was read, a
/// renewal's notification after the next one — give the same answer.
public struct Entitlements: Sendable, Hashable {
    /// Why the user has an entitlement: the order that gives it its current end (the one course
    /// order, or the last stacked pass).
    public struct Source: Sendable, Hashable {
        public var channel: OrderChannel
        public var outTradeNo: String
        /// The App Store subscription or purchase chain, for an App Store order.
        public var originalTransactionID: String?
    }

    public struct Grant: Sendable, Hashable {
        /// The catalog's `entitlement` (by default the product id).
        public var entitlement: String
        /// Nil: for ever.
        public var expiresAt: Date?
        public var source: Source
        /// Whether something will extend it without the user buying again: an App Store
        /// subscription of it that Apple will renew, into a product granting it; never a WeChat
        /// pass or a course.
        public var willRenew: Bool

        /// Open at `now`: for ever, or until `expiresAt` (exclusive).
        public func isActive(at now: Date) -> Bool {
            expiresAt.map { now < $0 } ?? true
        }
    }

    /// One grant per entitlement the user ever had, active or lapsed, sorted by name.
    public let grants: [Grant]

    /// - Parameter subscriptions: the App Store subscriptions the payments belong to, as Apple
    ///   last told of them (`EntitlementStore.subscriptions`); any others are ignored.
    /// - Parameter othersPayments: by original transaction, when the subscription's payments for
    ///   other users were made: each of this user's payments of it ends where the next of those
    ///   begins, if that comes sooner (an upgrade another user of a shared App Store account made
    ///   replaced this user's period at once; Apple refunds the rest of it).
    public init(payments: [PaidOrder], subscriptions: [SubscriptionRecord] = [], othersPayments: [String: [Date]] = [:],
                catalog: Catalog) {
        // The store reads a user's payments in this order already (`paidOrders`); a list in any
        // other order is sorted first, so the result is the same whatever order it came in.
        let ordered = Self.isInPaymentOrder(payments)
            ? payments : payments.sorted { PaymentKey($0) < PaymentKey($1) }
        // A subscription's state is this user's only when its latest transaction paid one of their
        // orders: the same App Store account may resubscribe for another user of the app (the
        // same original transaction, a new token), and from then on the state is theirs.
        var states: [String: SubscriptionRecord] = [:]
        var latest: [String: Int] = [:]
        if !subscriptions.isEmpty {
            let all = Dictionary(subscriptions.map { ($0.originalTransactionID, $0) }, uniquingKeysWith: { first, _ in first })
            for index in ordered.indices where ordered[index].channel == .apple {
                guard let chain = ordered[index].originalTransactionID, let state = all[chain],
                      ordered[index].appleTransactionID == state.latestTransactionID else { continue }
                states[chain] = state
                latest[chain] = index
            }
        }
        // In payment order a course is granted by its first payment, and each pass starts where
        // the ones before it ended: one walk. A user's payments are of a few products, so each
        // product's rule is looked up once and its entitlement is a slot of `reaches`; a reach
        // names its payments by their index in `ordered` until the grants are made.
        var rules = ProductRules(catalog: catalog)
        var reaches: [Reach] = []
        // A subscription's state is its latest product's: it counts for the entitlement that
        // product grants only. After a change of product (an upgrade, a downgrade, a product the
        // catalog does not have), the earlier product's payments reach as far as their own periods
        // do, each ending where the subscription's next payment begins if that comes sooner (Apple
        // switches at once on an upgrade, at the renewal on a downgrade).
        var stateSlots: [String: Int] = [:]
        // And it renews the entitlement of the product Apple will renew it into: after a
        // downgrade or crossgrade waiting for the renewal, that product's, not the current one's.
        var renewalSlots: [String: Int] = [:]
        for (chain, index) in latest {
            stateSlots[chain] = rules.rule(productID: ordered[index].productID, reaches: &reaches)?.slot
            guard let state = states[chain], let next = state.autoRenewProductID, next != state.productID else {
                renewalSlots[chain] = stateSlots[chain]
                continue
            }
            renewalSlots[chain] = catalog.product(appleProductID: next).flatMap { rules.rule(productID: $0.id, reaches: &reaches)?.slot }
        }
        // A membership bought through the App Store that is no auto-renewable subscription (Apple
        // keeps no state of it: a Non-Renewing Subscription) is a pass bought for its period, and
        // stacks like WeChat's.
        let subscribed = Set(subscriptions.map(\.originalTransactionID))
        let nextInChain = Self.nextPaymentInChain(ordered, othersPayments: othersPayments)
        for index in ordered.indices where Self.grants(ordered[index]) {
            guard let (slot, kind) = rules.rule(productID: ordered[index].productID, reaches: &reaches) else { continue }
            let paidAt = ordered[index].paidAt
            switch kind {
            case .course:
                if reaches[slot].forever == nil { reaches[slot].forever = index }
            case .membership(let period):
                if ordered[index].channel == .apple, let chain = ordered[index].originalTransactionID, subscribed.contains(chain) {
                    // App Store subscriptions do not stack: Apple sets their periods. A payment the
                    // subscription's state already counts adds nothing to it; one newer than the
                    // state (credited before Apple's word on it) gives its period. Whether it
                    // renews is the product it renews into: after a downgrade waiting for the
                    // renewal, the entitlement an earlier product of it gave renews, lapsed or not.
                    let state = stateSlots[chain] == slot ? states[chain] : nil
                    var candidate = reaches[slot].subscriptions[chain]
                        ?? Candidate(end: state?.accessEndsAt ?? .distantPast, payment: index,
                                     willRenew: (states[chain]?.willRenew ?? false) && renewalSlots[chain] == slot)
                    candidate.payment = index
                    if state.map({ paidAt > $0.periodStartedAt }) ?? true {
                        let end = period.end(from: paidAt)
                        candidate.end = max(candidate.end, nextInChain[index].map { min(end, $0) } ?? end)
                    }
                    reaches[slot].subscriptions[chain] = candidate
                } else {
                    let start = reaches[slot].pass.map { max(paidAt, $0.end) } ?? paidAt
                    reaches[slot].pass = Candidate(end: period.end(from: start), payment: index, willRenew: false)
                }
            case .consumable:
                continue
            }
        }
        func source(_ index: Int) -> Source {
            Source(channel: ordered[index].channel, outTradeNo: ordered[index].outTradeNo,
                   originalTransactionID: ordered[index].originalTransactionID)
        }
        var grants: [Grant] = []
        for (slot, reach) in reaches.enumerated() {
            if let index = reach.forever {
                grants.append(Grant(entitlement: reach.entitlement, expiresAt: nil, source: source(index), willRenew: false))
                continue
            }
            // A subscription whose state is known is sourced to its latest payment, refunded or
            // not. The pass stack or subscription that reaches furthest gives the end and the
            // source; it will renew when any of its subscriptions will.
            var candidates = reach.subscriptions.map { chain, candidate in
                Candidate(end: candidate.end, payment: stateSlots[chain] == slot ? latest[chain] ?? candidate.payment : candidate.payment,
                          willRenew: candidate.willRenew)
            }
            if let pass = reach.pass { candidates.insert(pass, at: 0) }
            guard let best = candidates.max(by: {
                ($0.end, ordered[$0.payment].outTradeNo) < ($1.end, ordered[$1.payment].outTradeNo)
            }) else { continue }
            grants.append(Grant(entitlement: reach.entitlement, expiresAt: best.end, source: source(best.payment),
                                willRenew: candidates.contains { $0.willRenew }))
        }
        self.grants = grants.sorted { $0.entitlement < $1.entitlement }
    }

    /// For each App Store payment of a subscription (by index in `ordered`, in payment order), when
    /// the same subscription's next payment was made: among these, or for another user.
    private static func nextPaymentInChain(_ ordered: [PaidOrder], othersPayments: [String: [Date]]) -> [Int: Date] {
        var next: [Int: Date] = [:]
        var later: [String: Date] = [:]
        for index in ordered.indices.reversed() where ordered[index].channel == .apple {
            guard let chain = ordered[index].originalTransactionID else { continue }
            let paidAt = ordered[index].paidAt
            let others = othersPayments[chain]?.filter { $0 > paidAt }.min()
            if let date = [later[chain], others].compactMap({ $0 }).min() { next[index] = date }
            later[chain] = paidAt
        }
        return next
    }

    /// How far one entitlement reaches, gathered in the walk over the payments (by their index).
    private struct Reach {
        let entitlement: String
        /// The first payment that grants it for ever (a course).
        var forever: Int?
        /// The WeChat pass stack: its end and its last pass.
        var pass: Candidate?
        /// The App Store subscriptions of it, by original transaction.
        var subscriptions: [String: Candidate] = [:]
    }

    /// A membership's reach from one pass stack or one App Store subscription.
    private struct Candidate {
        var end: Date
        var payment: Int
        var willRenew: Bool
    }

    /// The catalog's rule for each product a user's payments name, looked up once per product;
    /// each entitlement gets one slot of the walk's `reaches`.
    private struct ProductRules {
        let catalog: Catalog
        private var known: [(productID: String?, rule: (slot: Int, kind: CatalogProduct.Kind)?)] = []
        private var last = -1

        init(catalog: Catalog) {
            self.catalog = catalog
        }

        mutating func rule(productID: String?, reaches: inout [Reach])
            -> (slot: Int, kind: CatalogProduct.Kind)?
        {
            if last >= 0, known[last].productID == productID {
                return known[last].rule
            }
            if let hit = known.firstIndex(where: { $0.productID == productID }) {
                last = hit
                return known[hit].rule
            }
            var resolved: (slot: Int, kind: CatalogProduct.Kind)?
            if let (entitlement, kind) = Entitlements.rule(productID: productID, in: catalog) {
                let slot = reaches.firstIndex { $0.entitlement == entitlement } ?? {
                    reaches.append(Reach(entitlement: entitlement))
                    return reaches.count - 1
                }()
                resolved = (slot, kind)
            }
            known.append((productID, resolved))
            last = known.count - 1
            return resolved
        }
    }

    /// The App Store subscriptions among `payments` whose state entitlements read: the original
    /// transaction of each App Store payment of a membership.
    public static func subscriptionIDs(of payments: [PaidOrder], catalog: Catalog) -> [String] {
        var ids: Set<String> = []
        for payment in payments where payment.channel == .apple {
            guard let chain = payment.originalTransactionID, !ids.contains(chain),
                  case .membership? = rule(productID: payment.productID, in: catalog)?.1
            else { continue }
            ids.insert(chain)
        }
        return ids.sorted()
    }

    /// Whether `payments` are sorted by `PaymentKey`.
    static func isInPaymentOrder(_ payments: [PaidOrder]) -> Bool {
        var index = 1
        while index < payments.count {
            if PaymentKey(payments[index]) < PaymentKey(payments[index - 1]) { return false }
            index += 1
        }
        return true
    }

    /// The grant of `entitlement`, if the user ever had it.
    public func grant(_ entitlement: String) -> Grant? {
        grants.first { $0.entitlement == entitlement }
    }

    /// Whether the payment still grants: paid and not taken back.
    static func grants(_ payment: PaidOrder) -> Bool {
        switch payment.state {
        case .success: true
        case .refund: payment.channel == .wechat && payment.refundedAmount < payment.amount
        default: false
        }
    }

    /// The entitlement and kind the order's product grants. An App Store order is credited to its
    /// catalog product (`product_id`); one recorded without (`unknown_product`: the catalog did
    /// not have its App Store product) grants nothing until the catalog binding makes it the sale
    /// of the product a catalog first gives its App Store id (`Catalog.bind`). Never read through
    /// the App Store id: each catalog edit would give or take its buyer a grant no binding of
    /// terms could hold fixed.
    static func rule(productID: String?, in catalog: Catalog) -> (String, CatalogProduct.Kind)? {
        guard let id = productID else { return nil }
        guard let product = catalog.product(id) else {
            // A product the catalog does not know, named like an entitlement its products grant
            // (ordered before such ids were refused): nothing, rather than that membership for
            // ever at whatever the order cost.
            return catalog.grantsLike(id) ? nil : (id, .course)
        }
        return (product.entitlement, product.kind)
    }

    /// Whether paying for, or taking back, `order` can change its user's entitlements: it has a
    /// user, and its product grants something (a course or a membership; a consumable grants
    /// nothing, nor does an App Store product the catalog does not know).
    public static func canChange(_ order: OrderRecord, catalog: Catalog) -> Bool {
        guard order.userID != nil,
              let (_, kind) = rule(productID: order.productID, in: catalog)
        else { return false }
        if case .consumable = kind { return false }
        return true
    }

    /// Payments sort by when they were paid, then by order number: a total order, so the result
    /// never depends on the order they were read or arrived in.
    struct PaymentKey: Comparable, Hashable {
        var paidAt: Date
        var outTradeNo: String

        init(_ payment: PaidOrder) {
            paidAt = payment.paidAt
            outTradeNo = payment.outTradeNo
        }

        /// Bytewise on the order number, as both stores sort it.
        static func < (lhs: PaymentKey, rhs: PaymentKey) -> Bool {
            lhs.paidAt != rhs.paidAt ? lhs.paidAt < rhs.paidAt : lhs.outTradeNo.utf8.lexicographicallyPrecedes(rhs.outTradeNo.utf8)
        }
    }
}

extension Entitlements {
    /// The user's entitlements now: their payments, then the states of the App Store
    /// subscriptions among them (a second read only for a user who has some). With `recorded`,
    /// each product they paid for grants what the database holds for it where `catalog` says
    /// otherwise (`Catalog.holding`: an instance not yet reloaded to another's catalog).
    public static func read(userID: String, from store: any EntitlementStore, catalog given: Catalog,
                            recorded: RecordedTerms? = nil) async throws(StorageError) -> Entitlements
    {
        let payments = try await store.paidOrders(userID: userID)
        var catalog = given
        if let recorded { catalog = given.holding(try await recorded.terms(of: payments.compactMap(\.productID), in: store)) }
        let chains = subscriptionIDs(of: payments, catalog: catalog)
        let states = chains.isEmpty ? [] : try await store.subscriptions(originalTransactionIDs: chains)
        // A subscription whose latest transaction paid none of this user's orders went on without
        // them: when, for whom else, is read only for those (a shared App Store account's).
        let own = Set(payments.map(\.outTradeNo))
        let paidHere = Set(payments.compactMap(\.appleTransactionID))
        var othersPayments: [String: [Date]] = [:]
        for state in states where !paidHere.contains(state.latestTransactionID) {
            othersPayments[state.originalTransactionID] = try await store.orders(originalTransactionID: state.originalTransactionID)
                .filter { !own.contains($0.outTradeNo) }.compactMap(\.paidAt)
        }
        return Entitlements(payments: payments, subscriptions: states, othersPayments: othersPayments, catalog: catalog)
    }

    /// `{"entitlements":[…],"user_id":…}`: the entitlements route's answer and the
    /// `entitlement.changed` event's `data`. Each entitlement is
    /// `{"active","entitlement","expires_at","source":{"channel","order","original_transaction_id"?},"will_renew"}`.
    public func json(userID: String, at now: Date) -> [UInt8] {
        var writer = JSONObjectWriter(capacity: 64 + grants.count * 200)
        writer.array("entitlements", grants.map { $0.json(at: now) })
        writer.string("user_id", userID)
        return writer.finish()
    }
}

extension Entitlements.Grant {
    func json(at now: Date) -> [UInt8] {
        var source = JSONObjectWriter(capacity: 96)
        source.string("channel", self.source.channel.rawValue)
        source.string("order", self.source.outTradeNo)
        source.string("original_transaction_id", self.source.originalTransactionID)
        var writer = JSONObjectWriter(capacity: 200)
        writer.bool("active", isActive(at: now))
        writer.string("entitlement", entitlement)
        writer.stringOrNull("expires_at", expiresAt.map(Timestamp.rfc3339))
        writer.raw("source", source.finish())
        writer.bool("will_renew", willRenew)
        return writer.finish()
    }
}
