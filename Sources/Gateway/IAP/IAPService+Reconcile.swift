// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import Observability
import StorageCore

/// The reconciler's App Store half: what the app never reported and no notification brought is
/// found by asking the App Store about the user's account, and Apple's refunds that no
/// notification brought by the daily Get Refund History.
///
/// An iOS order has no id at Apple to ask about; what the App Store can be asked about is an
/// account, through any of its transactions. So an open iOS order is checked when its user has a
/// transaction the gateway credited before: Get Transaction History from that transaction, for the
/// order's product, not revoked — every purchase there that credits no order yet is credited
/// through the same checks and matching as a report.
extension IAPService {
    /// One leased open iOS order in a sweep: past its expiry it is checked once more and then closed
    /// locally (there is nothing to close at Apple); otherwise its user's account is asked about.
    func reconcile(_ order: OrderRecord, now: Date) async -> Reconciler.Outcome {
        let outcome = await checkHistory(of: order, reason: "reconcile", kind: "reconcile", recordNothingFound: order.lastQueriedAt == nil)
        _ = try? await context.store.touch(order.outTradeNo, .lastQueried, at: self.now())
        let after = (try? await context.store.order(order.outTradeNo)) ?? order
        if after.state == .success { return .settled }
        if outcome == .failed { return .failed }
        guard order.expiresAt <= now, OrderState.open.contains(after.state) else { return .open }
        let closed = try? await context.settlement.close(
            after, detail: "reconcile: expired unpaid, closed locally (an iOS order has nothing to close at Apple; a "
                + "transaction arriving later still settles it, flagged paid_after_close)")
        return closed?.state == .closed ? .closed : .open
    }

    /// Get Transaction History of the order's user's account for its product (at most 3 pages of 20,
    /// newest first); every verified purchase there that credits nothing yet is credited. Returns
    /// `.settled` when one was, `.failed` when the App Store could not be asked (not when it
    /// answered that it does not know the transaction asked from), `.open` otherwise.
    /// What it found goes on the timeline as `kind` (`kind_failed` when it could not ask); `reason`
    /// is the words for people.
    func checkHistory(of order: OrderRecord, reason: String, kind: String, recordNothingFound: Bool) async -> Reconciler.Outcome {
        guard let api = clients.serverAPI, let user = order.userID, let product = order.appleProductID else { return .open }
        let anchor: AppleAnchor?
        do {
            anchor = try await store.latestAppleTransaction(userID: user)
        } catch {
            return .failed
        }
        guard let anchor else {
            if recordNothingFound {
                _ = try? await context.store.appendEvent(
                    order.outTradeNo, kind: kind,
                    detail: "no App Store transaction of \(user) credited yet: no account to ask Get Transaction History about",
                    at: now())
            }
            return .open
        }
        var credited: [String] = []
        var seen = 0
        var revision: String?
        var environment = AppStoreEnvironment(rawValue: anchor.environment)
        for _ in 0..<3 {
            let page: TransactionHistoryPage
            do {
                page = try await api.transactionHistory(
                    anchor.transactionID,
                    query: TransactionHistoryQuery(revision: revision, productIDs: [product], sort: .descending, revoked: false),
                    environment: environment)
            } catch {
                instruments.upstreamErrors.labelled("transaction_history", error.kind.rawValue).increment()
                instruments.historyErrors.labelled(error.kind.rawValue).increment()
                _ = try? await context.store.appendEvent(order.outTradeNo, kind: "\(kind)_failed",
                                                         detail: "Get Transaction History: \(error.kind.rawValue)", at: now())
                // Apple not knowing the account's transaction (a purged sandbox account, a
                // transaction of another App Store) is an answer about this order, not an outage:
                // it must neither make the reconciler back off for everyone nor keep the order
                // from closing at its expiry.
                return error.kind == .notFound ? .open : .failed
            }
            for signed in page.signedTransactions {
                seen += 1
                guard let transaction = try? clients.verifier.verifyTransaction(signed) else {
                    instruments.upstreamErrors.labelled("transaction_history", "invalid_signed_data").increment()
                    continue
                }
                let purchase = VerifiedPurchase(
                    transaction, via: "transaction history",
                    verification: "found with Get Transaction History of \(user)'s App Store account (from transaction "
                        + "\(anchor.transactionID), \(reason)); its signed transaction verified")
                if let known = try? await store.appleTransaction(purchase.transactionID), known.outTradeNo != nil || known.isRevoked {
                    continue
                }
                // The account may be shared: a purchase tied to another of its users, or on an
                // account whose purchases went to several users and tied to none, is not this
                // user's to take (it waits for its app's report; `inferUser`).
                guard await isForThisUser(purchase, user) else { continue }
                if let answer = try? await credit(purchase, user: user, outTradeNo: nil, source: "\(reason) (Get Transaction History)"),
                   answer.outcome == "credited" {
                    credited.append("\(purchase.transactionID) → \(answer.order.outTradeNo)")
                }
            }
            guard page.hasMore, let next = page.revision else { break }
            revision = next
            environment = page.environment
        }
        if !credited.isEmpty || recordNothingFound {
            let found = credited.isEmpty ? "no purchase of \(product) that credits nothing yet" : "credited \(credited.joined(separator: ", "))"
            _ = try? await context.store.appendEvent(
                order.outTradeNo, kind: kind,
                detail: "Get Transaction History of \(user)'s account (\(seen) transactions of \(product)): \(found)", at: now())
        }
        return credited.isEmpty ? .open : .settled
    }

    /// Whether a purchase found in `user`'s App Store account may be credited to `user`: it is tied
    /// to `user` (its token's order, its original transaction, the account's purchases), or tied to
    /// nobody on an account no other user's purchase was credited from.
    func isForThisUser(_ purchase: VerifiedPurchase, _ user: String) async -> Bool {
        let tie = await tie(purchase)
        if let tied = tie.user { return sameUser(tied, user) }
        guard let users = tie.accountUsers else { return false }
        return users.allSatisfy { sameUser($0, user) }
    }

    /// Purchases a notification could not match (no token, no user known) are tried again, a few a
    /// sweep: their user may be known by now (another purchase of the same App Store account, a
    /// renewal of the same original transaction). Returns how many were credited.
    func retryUnmatched(now: Date, olderThan age: TimeInterval, limit: Int) async -> Int {
        guard let rows = try? await store.unmatchedAppleTransactions(before: now.addingTimeInterval(-age), limit: limit) else {
            return 0
        }
        var credited = 0
        for row in rows {
            _ = try? await store.markAppleTransactionChecked(row.transactionID, at: self.now())
            let purchase = VerifiedPurchase(facts: row.facts, via: row.source,
                                            verification: "verified when first seen (\(row.source)); tried again by the reconciler")
            // A renewal of a subscription whose payment before it waits unclaimed waits with it
            // (`renewalHolder`), and is credited with it. A row older than the ledger's reasons
            // that is a later payment of its subscription is taken for one: it is not given to
            // whoever the account's rule would find on its own.
            if purchase.facts.renewal ?? (purchase.transactionID != purchase.facts.originalTransactionID),
               case .waits = await renewalHolder(purchase) {
                continue
            }
            guard let (user, how) = await inferUser(purchase) else { continue }
            if let answer = try? await credit(purchase, user: user, outTradeNo: nil, source: "reconcile (unmatched purchase; \(how))"),
               answer.outcome == "credited" {
                credited += 1
            }
        }
        return credited
    }

    /// Credits a purchase nobody reported with a user: to the order its token names, else to the
    /// user inferred from the subscription or the App Store account (`inferUser`). Nil when neither
    /// found an order or a user: the ledger row waits.
    func creditWithoutReporter(_ purchase: VerifiedPurchase, source: String) async throws(APIError) -> ReportAnswer? {
        if let answer = try await credit(purchase, user: nil, outTradeNo: nil, source: source) { return answer }
        guard let (user, how) = await inferUser(purchase) else { return nil }
        return try await credit(purchase, user: user, outTradeNo: nil, source: "\(source); \(how)")
    }

    /// Purchases of `purchase`'s original transaction that waited unmatched for their user — a
    /// subscription's renewals Apple notified before anyone reported its first purchase — credited
    /// as soon as one of them is: their user is known now, and the reconciler tries unmatched
    /// purchases only every `Reconciler.unmatchedRetryAge`, while the subscriber's access would
    /// end with the first period.
    func creditWaitingSiblings(of purchase: VerifiedPurchase) async {
        let original = purchase.facts.originalTransactionID
        guard let rows = try? await store.appleTransactions(originalTransactionID: original) else { return }
        for row in rows where row.outTradeNo == nil && row.transactionID != purchase.transactionID {
            let waiting = VerifiedPurchase(facts: row.facts, via: row.source,
                                           verification: "verified when first seen (\(row.source)); credited once \(purchase.transactionID) "
                                               + "of the same original transaction was")
            // A renewal follows the subscription's payment before it, as Apple's notification of it
            // would (so does a row older than the ledger's reasons); a purchase a person made is
            // whoever its own evidence names (`inferUser`: its token, the shared-account rule).
            let holder: (user: String, how: String)?
            switch waiting.facts.renewal == false ? .unknown : await renewalHolder(waiting) {
            case .user(let user, let how): holder = (user, how)
            case .waits: holder = nil
            case .unknown: holder = await inferUser(waiting)
            }
            guard let (user, how) = holder else { continue }
            _ = try? await credit(waiting, user: user, outTradeNo: nil, source: "\(row.source); \(how)", siblings: false)
        }
    }

    /// Whose purchase a transaction is: the user of the order its `appAccountToken` names (the
    /// app's word, whatever else the account's history says: an upgrade or resubscription a user
    /// of a shared account made with their token is theirs); else, for a renewal, the user credited
    /// with the subscription's payment before it (`renewalHolder`: nobody's yet while that payment
    /// waits unclaimed); else the user of the latest order credited by the same original
    /// transaction, else the user the same App Store account's other purchases were credited to
    /// (`accountUsers`). A purchase a person made (a resubscription, not a renewal) on a
    /// subscription several users held is a shared account's purchase among them.
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
           let user = named.userID {
            return ((user, "its appAccountToken is \(user)'s order \(named.outTradeNo)'s"), nil)
        }
        let orders = try? await store.orders(originalTransactionID: purchase.facts.originalTransactionID)
        var holders: [String] = []
        for holder in (orders ?? []).compactMap(\.userID) where !holders.contains(holder) { holders.append(holder) }
        if purchase.isRenewal {
            switch await renewalHolder(purchase) {
            case .user(let user, let how): return ((user, how), nil)
            case .waits: return (nil, holders.isEmpty ? nil : holders)
            case .unknown: break
            }
        }
        if let order = orders?.last(where: { $0.userID != nil }), let user = order.userID {
            if holders.count == 1 || purchase.isRenewal {
                return ((user, "original transaction \(purchase.facts.originalTransactionID) credited \(user)'s order \(order.outTradeNo)"),
                        nil)
            }
            return (await sharedPurchase(purchase, users: holders), holders)
        }
        guard let users = await accountUsers(purchase) else { return (nil, nil) }
        let names = users.map(\.user)
        guard users.count > 1 else { return (users.first, names) }
        return (await sharedPurchase(purchase, users: names), names)
    }

    enum RenewalHolder { case user(String, how: String), waits, unknown }

    /// Whose a renewal is: the user credited with the subscription's transaction just before it,
    /// since Apple renews what was bought last (after a resubscription by another user of a shared
    /// account, theirs). When that transaction waits unclaimed itself, the renewal waits with it and
    /// is credited with it (`creditWaitingSiblings`), rather than follow whoever held the
    /// subscription before. A transaction that can never be credited (revoked before anyone claimed
    /// it; nothing charged for a product the catalog lacks) says nothing and is passed over.
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
                    + "\(user)'s order \(credited)")
            }
            let creditable = catalog.product(appleProductID: row.facts.productID) != nil
                || VerifiedPurchase(facts: row.facts, via: row.source, verification: "").chargedMinorUnits != nil
            if row.isRevoked || !creditable { continue }
            return .waits
        }
        return .unknown
    }

    /// A shared account's purchase (`users` bought from it): the one of them who had an order open
    /// for its product when it was made, if exactly one had; nobody's otherwise.
    private func sharedPurchase(_ purchase: VerifiedPurchase, users names: [String]) async -> (user: String, how: String)? {
        var waiting: [String] = []
        for user in names {
            guard let orders = try? await context.store.orders(userID: user) else { return nil }
            if orders.contains(where: { AppleCredit.isOpenAppleOrder($0, product: purchase.productID) && Self.wasOpen($0, at: purchase) }) {
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

    /// What one Get Refund History run found.
    public struct RefundHistoryReport: Sendable, Hashable {
        public var accounts = 0
        public var refunded = 0
        public var errors = 0
    }

    /// Get Refund History for every App Store account with an order paid (and not refunded) in the
    /// last `lookback` seconds (90 days by default): each refunded or revoked transaction that
    /// credited an order still SUCCESS moves it to REFUND with `order.refunded`. The daily
    /// backstop for refund notifications that never arrived.
    public func checkRefundHistory(lookback: TimeInterval = 90 * 86400) async -> RefundHistoryReport {
        var report = RefundHistoryReport()
        guard let api = clients.serverAPI,
              let anchors = try? await store.appleRefundAnchors(paidSince: now().addingTimeInterval(-lookback), limit: 100_000)
        else { return report }
        for anchor in anchors {
            report.accounts += 1
            var revision: String?
            var environment = AppStoreEnvironment(rawValue: anchor.environment)
            for _ in 0..<10 {
                let page: TransactionHistoryPage
                do {
                    page = try await api.refundHistory(anchor.transactionID, revision: revision, environment: environment)
                } catch {
                    report.errors += 1
                    instruments.upstreamErrors.labelled("refund_history", error.kind.rawValue).increment()
                    break
                }
                for signed in page.signedTransactions {
                    guard let transaction = try? clients.verifier.verifyTransaction(signed), transaction.revocationDate != nil else {
                        continue
                    }
                    let purchase = VerifiedPurchase(transaction, via: "refund history",
                                                    verification: "found with Get Refund History (daily check)")
                    let before = try? await store.appleTransaction(purchase.transactionID)
                    let order = try? await recordRevocation(
                        purchase, source: "daily Get Refund History",
                        reason: transaction.revocationReason.map { "revocationReason \($0)" })
                    if let order, order.state == .refund, before?.isRevoked != true { report.refunded += 1 }
                }
                guard page.hasMore, let next = page.revision else { break }
                revision = next
                environment = page.environment
            }
        }
        logger.notice("App Store refund history checked", ["accounts": String(report.accounts),
                                                          "refunded": String(report.refunded), "errors": String(report.errors)])
        return report
    }
}
