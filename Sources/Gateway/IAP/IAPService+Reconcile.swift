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
        // A later payment of a subscription whose payment before it waits unclaimed is credited
        // with that one, to whoever it proves: not to whoever opens an order meanwhile.
        if purchase.transactionID != purchase.facts.originalTransactionID, case .waits = await renewalHolder(purchase) {
            return false
        }
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
        // In payment order, so that each follows the one before it once that one is credited.
        var credited: Set<String> = [purchase.transactionID]
        let waitingRows = rows.filter { $0.outTradeNo == nil && $0.transactionID != purchase.transactionID }
            .sorted { ($0.facts.purchaseDate, $0.transactionID) < ($1.facts.purchaseDate, $1.transactionID) }
        for row in waitingRows {
            let waiting = VerifiedPurchase(facts: row.facts, via: row.source,
                                           verification: "verified when first seen (\(row.source)); credited once \(purchase.transactionID) "
                                               + "of the same original transaction was")
            // A renewal follows the subscription's payment before it, as Apple's notification of it
            // would (so does a row older than the ledger's reasons), and so does a purchase a person
            // made (an upgrade) that waited with the payment credited here; another purchase a
            // person made is whoever its own evidence names (`inferUser`: its token, the
            // shared-account rule).
            let holder: (user: String, how: String)?
            switch await renewalHolder(waiting) {
            case .user(let user, let how, let after) where waiting.facts.renewal != false || credited.contains(after):
                holder = (user, how)
            case .waits: holder = nil
            default: holder = await inferUser(waiting)
            }
            guard let (user, how) = holder else { continue }
            if let answer = try? await credit(waiting, user: user, outTradeNo: nil, source: "\(row.source); \(how)", siblings: false),
               answer.outcome == "credited" {
                credited.insert(row.transactionID)
            }
        }
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
