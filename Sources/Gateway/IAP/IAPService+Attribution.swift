// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import StorageCore

/// Whose purchase an App Store transaction is when nobody reported it with proof: its token's
/// order, a subscription's holder, the App Store account's users — and when none of them is
/// certain (a shared account, a phone passed on), nobody's yet: it waits in the ledger for its
/// app's report or support's assignment. Notifications, the reconciler, support's checks and the
/// crediting of waiting renewals all ask here, so one rule decides for all of them.
extension IAPService {
    /// Whose purchase a transaction is: the user of the order its `appAccountToken` names (the
    /// app's word, whatever else the account's history says: an upgrade or resubscription a user
    /// of a shared account made with their token is theirs); else, for a renewal, the user credited
    /// with the subscription's payment before it (`renewalHolder`: nobody's yet while that payment
    /// waits unclaimed, and so does any later payment of it); else the user of the latest order
    /// credited by the same original transaction, else the user the same App Store account's
    /// other purchases were credited to (`accountUsers`) — for a person's purchase, only while no
    /// other user of the app has an order for it open since before it (`onlyKnownUser`). A
    /// purchase a person made (a resubscription, an upgrade, not a renewal) on a subscription
    /// several users held, or on an account that bought for a user other than its holder, is a
    /// shared account's purchase among all of them.
    ///
    /// An account whose purchases were credited to several users is shared (a family iPad, a phone
    /// passed on): the purchase is then the one of those users who had an order open for its
    /// product when it was made, if exactly one had, and otherwise nobody's here. It waits for its
    /// app's report or support's assignment, rather than go to whoever bought last and leave the
    /// payer's own report refused as already used. (An order made after the purchase cannot be the
    /// one it paid for, nor one expired by then: `wasOpen`.)
    func inferUser(_ purchase: VerifiedPurchase) async -> (user: String, how: String)? {
        await infer(purchase).inferred
    }

    /// `inferUser`'s answer, with the users of the App Store account it read to find it (nil when
    /// it needed not read them, or could not): what `tie` reports beside it, so that one reading of
    /// the account's history serves both.
    private func infer(_ purchase: VerifiedPurchase) async -> (inferred: (user: String, how: String)?, accountUsers: [String]?) {
        if let token = purchase.facts.appAccountToken, let named = try? await store.order(appAccountToken: token),
           let user = named.userID, !AppleCredit.tokenIsInherited(named, by: purchase.facts) {
            return ((user, "its appAccountToken is \(user)'s order \(named.outTradeNo)'s"), nil)
        }
        let orders = try? await store.orders(originalTransactionID: purchase.facts.originalTransactionID)
        var holders: [String] = []
        for holder in (orders ?? []).compactMap(\.userID) where !holders.contains(holder) { holders.append(holder) }
        // A later payment of a subscription whose payment before it waits unclaimed waits with it,
        // a person's purchase (an upgrade) as much as a renewal: who holds the subscription is
        // what that one's report or assignment will say.
        if purchase.transactionID != purchase.facts.originalTransactionID {
            switch await renewalHolder(purchase) {
            case .user(let user, let how, _) where purchase.isRenewal: return ((user, how), nil)
            case .waits: return (nil, await everyone(purchase, holders: holders))
            default: break
            }
        }
        if let order = orders?.last(where: { $0.userID != nil }), let user = order.userID {
            let known = (user, "original transaction \(purchase.facts.originalTransactionID) credited \(user)'s order \(order.outTradeNo)")
            if purchase.isRenewal { return (known, nil) }
            // A person's purchase: the account's other buyers weigh as much as the subscription's
            // holders (a family iPad whose other user resubscribes, or upgrades in the App Store's
            // settings). When Apple could not be asked who they are, it waits.
            guard let users = await everyone(purchase, holders: holders) else { return (nil, holders) }
            if users.count == 1 {
                let weighed = await onlyKnownUser(purchase, known)
                return (weighed.inferred, weighed.inferred == nil ? weighed.users : nil)
            }
            return (await sharedPurchase(purchase, users: users), users)
        }
        guard let users = await accountUsers(purchase) else { return (nil, nil) }
        let names = users.map(\.user)
        guard users.count > 1 else {
            guard let only = users.first else { return (nil, names) }
            let weighed = await onlyKnownUser(purchase, only)
            return (weighed.inferred, weighed.users)
        }
        return (await sharedPurchase(purchase, users: names), names)
    }

    /// A person's purchase on an App Store account (or a subscription) only `known` is known to
    /// have bought from: theirs if no other user of the app has an order for its product open since
    /// before it was made; else nobody's yet, with the users it may be (a phone passed on: the new
    /// user's purchase, made with their order open but without its token, would go to the one
    /// before, and the payer's own report be refused as already used). It waits for its app's
    /// report, which proves who holds it, or support's assignment, at most until those orders
    /// close: the reconciler then tries it again.
    private func onlyKnownUser(_ purchase: VerifiedPurchase, _ known: (user: String, how: String)) async
        -> (inferred: (user: String, how: String)?, users: [String])
    {
        let at = purchase.facts.purchaseDate
        guard let open = try? await store.usersWithAppleOrdersOpen(
            appleProductID: purchase.productID, at: at,
            madeAfter: at.addingTimeInterval(-TimeInterval(IAPOrderInput.lifetimes.upperBound)), limit: 8)
        else { return (nil, [known.user]) }
        let others = open.filter { !sameUser($0, known.user) }
        return others.isEmpty ? (known, [known.user]) : (nil, [known.user] + others)
    }

    /// The subscription's `holders` and the users its App Store account bought for (`accountUsers`),
    /// the holders first; the holders alone without Apple's Server API, and nil when Apple could
    /// not be asked.
    private func everyone(_ purchase: VerifiedPurchase, holders: [String]) async -> [String]? {
        guard clients.serverAPI != nil else { return holders }
        guard let account = await accountUsers(purchase) else { return nil }
        var users = holders
        for other in account.map(\.user) where !users.contains(other) { users.append(other) }
        return users
    }

    /// `user`: credited with the payment `after` (a transaction id) just before it. `waits`: the
    /// payment before it, `on`, waits unclaimed (`revoked`: and Apple refunded or revoked it, so
    /// nobody can claim it any more).
    enum RenewalHolder { case user(String, how: String, after: String), waits(on: String, revoked: Bool), unknown }

    /// Whose a renewal is: the user credited with the subscription's transaction just before it,
    /// since Apple renews what was bought last (after a resubscription by another user of a shared
    /// account, theirs). When that transaction waits unclaimed itself, the renewal waits with it and
    /// is credited with it (`creditWaitingSiblings`), rather than follow whoever held the
    /// subscription before. So it does when that payment was a person's purchase (a resubscription,
    /// an upgrade) refunded or revoked before anyone claimed it: Apple renews what that person
    /// bought, whoever they were, and the refund does not make the holder before them its payer. A
    /// renewal refunded unclaimed, or nothing charged for a product the catalog lacks, says nothing
    /// and is passed over.
    func renewalHolder(_ purchase: VerifiedPurchase) async -> RenewalHolder {
        guard let rows = try? await store.appleTransactions(originalTransactionID: purchase.facts.originalTransactionID) else {
            return .unknown
        }
        let earlier = rows.filter { $0.transactionID != purchase.transactionID && $0.facts.purchaseDate <= purchase.facts.purchaseDate }
            .sorted { ($0.facts.purchaseDate, $0.transactionID) < ($1.facts.purchaseDate, $1.transactionID) }
        let catalog = context.catalog.catalog
        for row in earlier.reversed() {
            if let credited = row.outTradeNo {
                guard let order = try? await context.store.order(credited), let user = order.userID else { return .unknown }
                return .user(user, how: "the subscription's payment before it, transaction \(row.transactionID), credited "
                    + "\(user)'s order \(credited)", after: row.transactionID)
            }
            let creditable = catalog.product(appleProductID: row.facts.productID) != nil
                || VerifiedPurchase(facts: row.facts, via: row.source, verification: "").chargedMinorUnits != nil
            if !creditable || (row.isRevoked && row.facts.renewal != false) { continue }
            return .waits(on: row.transactionID, revoked: row.isRevoked)
        }
        return .unknown
    }

    /// A shared account's purchase (`users` bought from it): the one of them who had an order open
    /// for its product when it was made, if exactly one had; nobody's otherwise.
    private func sharedPurchase(_ purchase: VerifiedPurchase, users names: [String]) async -> (user: String, how: String)? {
        var waiting: [String] = []
        for user in names {
            guard let orders = try? await context.store.orders(userID: user) else { return nil }
            if orders.contains(where: { Self.wasOpenAndIsUnpaid($0, product: purchase.productID, at: purchase) }) {
                waiting.append(user)
            }
        }
        guard waiting.count == 1, let user = waiting.first else { return nil }
        return (user, "the App Store account is shared by \(names.joined(separator: ", ")); only \(user) had an order "
                    + "open for \(purchase.productID) when it was bought")
    }

    /// Whose purchase it is as far as the gateway can tell (`tiedUser`), and the users of its App
    /// Store account when it was read: nobody tied on an account several users bought from is a
    /// shared account's purchase, still one of theirs.
    func tie(_ purchase: VerifiedPurchase) async -> (user: String?, accountUsers: [String]?) {
        let inferred = await infer(purchase)
        return (inferred.inferred?.user, inferred.accountUsers)
    }

    /// Whether `order` was open when `purchase` was made: made before it and not yet expired
    /// (an order past its expiry the reconciler has not closed yet is as good as closed). The app
    /// makes its order before StoreKit's payment sheet opens, seconds before Apple records the
    /// purchase; no margin is allowed for the two clocks, since any would let another user of a
    /// shared account open an order just after someone else's purchase and take it.
    static func wasOpen(_ order: OrderRecord, at purchase: VerifiedPurchase) -> Bool {
        order.createdAt <= purchase.facts.purchaseDate && purchase.facts.purchaseDate < order.expiresAt
    }

    /// An iOS order for `product` that was open when `purchase` was made and is not paid: still
    /// open, or closed since (its app gave up on a purchase that was interrupted; its expiry came
    /// before Apple's word did).
    static func wasOpenAndIsUnpaid(_ order: OrderRecord, product: String, at purchase: VerifiedPurchase) -> Bool {
        let unpaid = OrderState.open.contains(order.state) || order.state == .closed
        return order.channel == .apple && order.appleProductID == product && unpaid && wasOpen(order, at: purchase)
    }

    /// The users the App Store account's other purchases were credited to, the most recent
    /// purchase's first, each with the words saying which (Get Transaction History from this
    /// transaction, three pages at most). Nil without the Server API or when Apple could not be
    /// asked.
    func accountUsers(_ purchase: VerifiedPurchase) async -> [(user: String, how: String)]? {
        guard let api = clients.serverAPI else { return nil }
        var users: [(user: String, how: String)] = []
        var revision: String?
        var environment = AppStoreEnvironment(rawValue: purchase.environment)
        for _ in 0..<3 {
            guard let page = try? await api.transactionHistory(
                purchase.transactionID, query: TransactionHistoryQuery(revision: revision, sort: .descending),
                environment: environment)
            else { return nil }
            for signed in page.signedTransactions {
                guard let other = try? clients.verifier.verifyTransaction(signed), other.transactionID != purchase.transactionID,
                      let row = try? await store.appleTransaction(other.transactionID), let credited = row.outTradeNo,
                      let order = try? await context.store.order(credited), let user = order.userID,
                      !users.contains(where: { $0.user == user })
                else { continue }
                users.append((user, "another purchase of the same App Store account (\(other.transactionID)) credited \(user)'s order "
                                  + "\(order.outTradeNo)"))
            }
            guard page.hasMore, let next = page.revision else { break }
            revision = next
            environment = page.environment
        }
        return users
    }
}
