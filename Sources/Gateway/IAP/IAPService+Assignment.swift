// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import Observability
import StorageCore

/// Support's hand on an unclaimed purchase: a purchase reported only with weak evidence (a bare
/// transaction id, a receipt read unverified) or notified without a token, that nothing ties to a
/// user, waits in the ledger (the attention list's `unclaimed_transactions`). A person who found
/// whose it is — the customer wrote in with the Apple receipt e-mail and their order number —
/// assigns it to that user's order. The credit is the one every verified purchase takes
/// (`Settlement.creditApple`), with that order as its only candidate; the app's next report of the
/// transaction is then answered `finish_transaction: true`.
extension IAPService {
    /// What an assignment did.
    public struct Assignment: Sendable {
        /// The order, credited.
        public var order: OrderRecord
        /// True when the transaction had credited this very order before (a repeated assignment).
        public var replayed: Bool
    }

    /// Assigns the unclaimed purchase `transactionID` to the order `outTradeNo`, for `reason`
    /// (required, on the order's timeline), by `actor` (a console user, or a support token).
    ///
    /// Refused, changing nothing: an id the ledger does not hold (404), a transaction that credited
    /// another order (409 `transaction_already_credited`), one Apple refunded or revoked or a family
    /// member's (409 `transaction_not_assignable`), and an order that is not an iOS order of the
    /// purchase's product and of a user, is paid already, or belongs to another user than the one
    /// the purchase is tied to (its token's order, another purchase of its App Store account): 409
    /// `order_not_assignable`. A subscription's later payment while the payment before it waits
    /// unclaimed is not assigned on its own (409 `transaction_not_assignable`): it follows that
    /// one. A person's purchase (an upgrade, a resubscription) made while another user's period of
    /// the same subscription still ran is assigned to this order's user only `takingOver`: it takes
    /// the subscription over, and the holder's access ends where it begins (409
    /// `order_not_assignable` otherwise, naming the holder). With the Server API key Apple is asked
    /// first (Get Transaction Info), so a refund Apple made since is seen. Assigning it to the same
    /// order again answers that order.
    public func assign(transactionID: String, to outTradeNo: String, reason text: String?, by actor: String,
                       takingOver: Bool = false) async throws(APIError) -> Assignment
    {
        guard (1...32).contains(transactionID.utf8.count), transactionID.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw .invalid("transaction_id", "an App Store transaction id is 1 to 32 digits")
        }
        guard !outTradeNo.isEmpty else { throw .invalid("out_trade_no", "out_trade_no is required: the order to credit") }
        let reason = try SupportReason.parse(text)
        guard let row = try await context.storage({ () throws(StorageError) in try await self.store.appleTransaction(transactionID) })
        else { throw .appleTransactionNotFound }
        if let credited = row.outTradeNo {
            guard credited == outTradeNo else { throw .transactionAlreadyCredited(credited) }
            return Assignment(order: try await order(outTradeNo), replayed: true)
        }
        if row.isRevoked { throw .transactionNotAssignable("Apple refunded or revoked it") }
        let source = "support assignment by \(actor)"
        // Apple's word as it stands now, when it can be asked; else what the ledger recorded.
        var purchase = VerifiedPurchase(facts: row.facts, via: "ledger", verification: "as recorded when first seen (\(row.source))")
        if let api = clients.serverAPI {
            do {
                purchase = try await withDeadline(clients.deadline) { () async throws(APIError) in
                    try await self.lookUp(transactionID, api: api, environment: AppStoreEnvironment(rawValue: row.facts.environment))
                }
            } catch where error.code == APIError.appStoreUnavailable.code {
                // The app's words ("keep the transaction") are not support's.
                throw .appStoreUnavailableForAssignment
            }
            if purchase.facts.revocationDate != nil {
                _ = try await recordRevocation(purchase, source: source)
                throw .transactionNotAssignable("Apple refunded or revoked it")
            }
            if purchase.ownership == "FAMILY_SHARED" {
                throw .transactionNotAssignable("a family member's purchase (FAMILY_SHARED): it paid no order here")
            }
        }
        // A subscription's later payment follows the one before it: assigned alone, it would split
        // the subscription between two users (unless that one can never be claimed: refunded).
        if purchase.transactionID != purchase.facts.originalTransactionID,
           case .waits(let before, revoked: false) = await renewalHolder(purchase) {
            throw .transactionNotAssignable("the subscription's payment before it, transaction \(before), waits unclaimed: "
                                            + "assign that one, and this one follows it")
        }
        let order = try await order(outTradeNo)
        guard order.channel == .apple else { throw .orderNotAssignable("it is not an iOS (App Store) order") }
        guard order.appleProductID == purchase.productID else {
            throw .orderNotAssignable("it sells \(order.appleProductID ?? "another product"), the purchase is \(purchase.productID)")
        }
        guard let user = order.userID else { throw .orderNotAssignable("it has no user to credit") }
        guard order.state != .success && order.state != .refund else {
            throw .orderNotAssignable("it is paid already (App Store transaction \(order.appleTransactionID ?? "none"))")
        }
        let tie = await tie(purchase)
        if let tied = tie.user {
            guard sameUser(tied, user) else {
                throw .orderNotAssignable("the purchase is tied to another user (its token's order, or another purchase of the "
                                          + "same App Store account): credit that user's order")
            }
        } else if let users = tie.accountUsers, !users.isEmpty, !users.contains(where: { sameUser($0, user) }) {
            // A shared account's purchase tied to none of its users is still one of theirs.
            throw .orderNotAssignable("the purchase's App Store account is shared by \(users.joined(separator: ", ")), and "
                                      + "\(user) is not one of them: credit an order of one of them")
        }
        // An open order is no proof of payment: a stranger's would take a subscriber's running
        // period from them (an upgrade in the App Store's settings waits while anyone has one
        // open). The person assigning says they know it was this user's (a phone passed on,
        // another user of the App Store account).
        if !takingOver, let holder = await holderStillServed(by: purchase), !sameUser(holder.user, user) {
            throw .orderNotAssignable(
                "the purchase continues \(holder.user)'s subscription, whose period paid by transaction \(holder.after) runs "
                    + "until \(Timestamp.rfc3339(holder.until)): credited to \(user), it takes the subscription over and "
                    + "\(holder.user)'s access ends where it began. Only if \(user) made it (another user of the App Store "
                    + "account, or of a phone passed on), assign it again with takes_over")
        }
        let at = now()
        let summary = purchase.summary
        let firstSeen = row.source
        var credit = AppleCredit(
            transaction: purchase.facts, userID: user, outTradeNo: outTradeNo, newOrder: nil, source: source,
            outbox: { _ in nil },
            events: { decision in
                var words = "assigned by support (\(actor)): \(reason); the purchase was unclaimed (first seen via \(firstSeen)); "
                    + "credited to this order of \(user)" + (takingOver ? ", taking the subscription over" : "")
                if decision.previousState == .closed { words += "; the order had been closed locally (unpaid at its expiry)" }
                return [NewOrderEvent(kind: "appstore_verified", detail: summary, at: at),
                        NewOrderEvent(kind: "appstore_match", detail: words, at: at)]
            }, at: at)
        credit.assignedBy = actor
        let result = try await context.storage { () throws(StorageError) in
            try await self.context.settlement.creditApple(credit, in: self.store)
        }
        switch result {
        case .credited(let credited, _):
            instruments.credits.labelled("support_assignment", purchase.environment).increment()
            logger.info("unclaimed App Store transaction assigned by support", [
                "out_trade_no": outTradeNo, "transaction_id": transactionID, "actor": actor,
            ])
            await announceToFormerHolder(of: purchase, creditedTo: credited)
            await creditWaitingSiblings(of: purchase)
            return Assignment(order: credited, replayed: false)
        case .alreadyCredited(let credited, _):
            guard credited.outTradeNo == outTradeNo else { throw .transactionAlreadyCredited(credited.outTradeNo) }
            return Assignment(order: credited, replayed: true)
        case .revoked:
            throw .transactionNotAssignable("Apple refunded or revoked it")
        case .unmatched:
            // The order changed meanwhile (paid, or its product or user): decided on what it is now.
            throw .orderNotAssignable("it is no longer an open order of \(user) for \(purchase.productID)")
        }
    }

    /// The user whose subscription `purchase` (a later payment of it) continues, when the period
    /// their payment before it bought (its product's, counted as entitlements count it) still ran
    /// when it was made: the transaction of that payment and its end.
    private func holderStillServed(by purchase: VerifiedPurchase) async -> (user: String, after: String, until: Date)? {
        guard purchase.transactionID != purchase.facts.originalTransactionID,
              case .user(let user, _, let after) = await renewalHolder(purchase),
              let row = try? await store.appleTransaction(after), let credited = row.outTradeNo,
              let order = try? await context.store.order(credited),
              let product = order.productID.flatMap({ context.catalog.catalog.product($0) }),
              case .membership(let period) = product.kind
        else { return nil }
        let until = period.end(from: order.paidAt ?? row.facts.purchaseDate)
        return until > purchase.facts.purchaseDate ? (user, after, until) : nil
    }

    private func order(_ outTradeNo: String) async throws(APIError) -> OrderRecord {
        guard let order = try await context.storage({ () throws(StorageError) in try await self.context.store.order(outTradeNo) })
        else { throw .orderNotFound }
        return order
    }
}
