// SPDX-License-Identifier: Apache-2.0
import Foundation

/// What one store does inside the write transaction of `IAPStore.creditAppleTransaction`: read
/// and write rows. The matching itself (which order, in which order, with which flags) is decided
/// once, for every store, by `AppleCredit.perform(in:)` below.
package protocol AppleCreditSession {
    /// Inserts the ledger row unless one exists, then reads it, so that from here on this
    /// transaction is the only writer of the transaction id (PostgreSQL: locked until COMMIT).
    func claimLedgerRow(_ facts: AppleTransactionFacts, source: String, at: Date) throws(StorageError)
        -> AppleTransactionRecord
    /// Sets the revocation date unless one is known; returns the row.
    func revoke(_ transactionID: String, at revoked: Date, now: Date) throws(StorageError) -> AppleTransactionRecord
    func order(_ outTradeNo: String) throws(StorageError) -> OrderRecord?
    func order(appAccountToken: String) throws(StorageError) -> OrderRecord?
    /// The user's open App Store orders for the product, oldest first, at most `limit`.
    func openAppleOrders(userID: String, appleProductID: String, limit: Int) throws(StorageError) -> [OrderRecord]
    /// The candidates as they stand now, in the order given (nil for one that is gone), each
    /// locked until the transaction ends; the locks are taken in one order every credit uses
    /// (PostgreSQL: by out_trade_no), whatever order the candidates are tried in.
    func lock(_ candidates: [OrderRecord]) throws(StorageError) -> [OrderRecord?]
    /// Inserts a new order and its `created` event; false when the out_trade_no exists.
    func insert(_ order: OrderRecord, event: NewOrderEvent) throws(StorageError) -> Bool
    /// Whether a new order of `productID` may be made under `terms` (`ProductTerms.saleAgrees`).
    func saleAgrees(_ terms: SaleTerms, productID: String?) throws(StorageError) -> Bool
    /// The one door (`OrderStore.transition`), inside this transaction.
    func transition(_ transition: OrderTransition) throws(StorageError) -> TransitionResult
    /// Names the credited order in the ledger row (set once: the database refuses a change).
    func markCredited(_ transactionID: String, outTradeNo: String, matchedBy: AppleMatch, at: Date) throws(StorageError)
    func appendEvents(_ events: [NewOrderEvent], to outTradeNo: String) throws(StorageError)
    /// Sets a credited order's count where it has none, with `event`; nil when it had one.
    func fillQuantity(_ outTradeNo: String, _ quantity: Int, event: NewOrderEvent) throws(StorageError) -> OrderRecord?
}

extension AppleTransactionFacts {
    /// Whether this evidence says what the ledger row `known` of the same transaction does not —
    /// its count, what Apple charged, the storefront — and may fill it in: it gives a count that
    /// agrees with the row's (a charge without a count, or with another, could be another
    /// count's), and names the same product, environment and token. The same rule as
    /// `AppleTransactionRecord.ledgerFill`.
    package func fillsIn(_ known: AppleTransactionFacts) -> Bool {
        guard let quantity, known.quantity == nil || known.quantity == quantity, agrees(with: known) else { return false }
        return known.quantity == nil || (known.price == nil && price != nil) || (known.storefront == nil && storefront != nil)
            || (known.renewal == nil && renewal != nil)
    }

    /// Names the same product and environment as `known`, and no other token.
    package func agrees(with known: AppleTransactionFacts) -> Bool {
        productID == known.productID && environment == known.environment
            && (appAccountToken == nil || known.appAccountToken == nil || appAccountToken == known.appAccountToken)
    }

    /// Text every store keeps (no U+0000).
    package func validate() throws(StorageError) {
        try StoreText.validate(transactionID, originalTransactionID, productID, environment, appAccountToken, currency,
                               storefront)
        if let quantity, !(1...1_000_000).contains(quantity) {
            throw .invalidArgument("an App Store quantity is 1 to 1,000,000")
        }
    }
}

extension AppleCredit {
    /// Candidates of one user and product tried at most (凑单 finds the oldest; more would only
    /// be orders a double tap left open).
    package static let openOrdersTried = 8

    /// How far Apple's purchase date may be from the gateway's clock and still fall inside an
    /// order's life for 凑单: the same user's order, so a few minutes either way cost nothing,
    /// while an order opened an hour after a purchase that waited is not the one it paid.
    package static let clockMargin: TimeInterval = 300

    package func validate() throws(StorageError) {
        if let made = newOrder {
            try made.order.validateNew()
            guard made.order.channel == .apple, made.order.appleProductID == transaction.productID else {
                throw .invalidArgument("the new order must be an App Store order for the transaction's product")
            }
        }
        try transaction.validate()
        try StoreText.validate(userID, outTradeNo, source, assignedBy)
        if assignedBy != nil, outTradeNo == nil || userID == nil || newOrder != nil {
            throw .invalidArgument("an assignment names the order and its user, and makes no order")
        }
    }

    /// The matching and the credit, steps 1 to 4 of `IAPStore.creditAppleTransaction`, in the
    /// caller's transaction.
    package func perform(in session: some AppleCreditSession) throws(StorageError) -> AppleCreditResult {
        let facts = transaction
        // 1. The claim of the id.
        var ledger = try session.claimLedgerRow(facts, source: source, at: at)
        if let credited = ledger.outTradeNo {
            guard var order = try session.order(credited) else { throw .unexpectedRow }
            // The evidence that credited it gave no count and Apple's word now does (whoever relays
            // it): filled, never changed, and only by evidence that agrees with the order.
            if order.appleQuantity == nil, let quantity = ledger.facts.quantity, facts.quantity == quantity,
               facts.productID == order.appleProductID, facts.environment == order.environment,
               facts.appAccountToken == nil || facts.appAccountToken == order.appAccountToken {
                let event = NewOrderEvent(kind: "appstore_quantity", detail: "quantity \(quantity), from \(source)", at: at)
                order = try session.fillQuantity(credited, quantity, event: event) ?? order
            }
            return .alreadyCredited(order, ledger.matchedBy ?? .userProduct)
        }
        if let revoked = facts.revocationDate, ledger.facts.revocationDate == nil {
            ledger = try session.revoke(facts.transactionID, at: revoked, now: at)
        }
        if ledger.isRevoked { return .revoked(ledger) }
        // The first evidence's count stands (the ledger keeps it), unless it did not say.
        let quantity = ledger.facts.quantity ?? facts.quantity

        // An assignment by support: the named order only, decided on what it is now.
        if assignedBy != nil {
            guard let outTradeNo, let named = try session.order(outTradeNo),
                  named.channel == .apple, named.appleProductID == facts.productID, sameUser(named.userID, userID),
                  let current = try session.lock([named]).first ?? nil,
                  let credited = try credit(current, .outTradeNo, notes: [], quantity: quantity, in: session)
            else { return .unmatched(ledger) }
            return .credited(credited, .outTradeNo)
        }

        // 2. The candidates, in the order they are tried.
        var notes: [AppleMatchNote] = []
        var user = userID
        var candidates: [(order: OrderRecord, how: AppleMatch)] = []
        if let token = facts.appAccountToken {
            if let order = try session.order(appAccountToken: token) {
                // The token says whose purchase it is, whoever reports it (an account switch); not
                // one carried on from a payment before of the same subscription (that order is
                // paid: passed over below), whose purchase the caller weighed (`userID`).
                if !Self.tokenIsInherited(order, by: facts), let owner = order.userID { user = owner }
                if order.channel != .apple || order.appleProductID != facts.productID {
                    notes.append(.tokenOrderOtherProduct(outTradeNo: order.outTradeNo, appleProductID: order.appleProductID))
                } else if order.state == .success || order.state == .refund {
                    notes.append(.tokenOrderAlreadyPaid(outTradeNo: order.outTradeNo))
                } else {
                    candidates.append((order, .appAccountToken))
                }
            } else {
                notes.append(.tokenUnknown)
            }
        }
        if let outTradeNo, !candidates.contains(where: { $0.order.outTradeNo == outTradeNo }) {
            if let order = try session.order(outTradeNo), let user, sameUser(order.userID, user),
               Self.isOpenAppleOrder(order, product: facts.productID) {
                candidates.append((order, .outTradeNo))
            } else {
                notes.append(.outTradeNoNotUsable(outTradeNo: outTradeNo))
            }
        }
        // A renewal Apple charged by itself pays an order of its own: an order its user opened
        // meanwhile is for a purchase of theirs still to come. So is an order made after a
        // person's purchase (it waited, unclaimed), and one expired before it is none it paid
        // (give or take `clockMargin`: Apple's clock is not the gateway's).
        if let user, !renewal {
            let open = try session.openAppleOrders(userID: user, appleProductID: facts.productID, limit: Self.openOrdersTried)
            for order in open where !candidates.contains(where: { $0.order.outTradeNo == order.outTradeNo })
                && order.createdAt.addingTimeInterval(-Self.clockMargin) <= facts.purchaseDate
                && facts.purchaseDate < order.expiresAt.addingTimeInterval(Self.clockMargin) {
                candidates.append((order, .userProduct))
            }
        }

        // 3. The first candidate the door moves to SUCCESS. All of them are locked first, in one
        // order: each purchase tries them in an order of its own (its token's order, the one the
        // app named, the oldest), and two credits of one user and product taking the locks as
        // they try would each hold an order the other waits for, a deadlock (the door keeps the
        // lock of an order it finds paid meanwhile until COMMIT). Each is then decided on what it
        // is now, not on what it was when read.
        let current = try session.lock(candidates.map(\.order))
        for ((_, how), candidate) in zip(candidates, current) {
            guard let candidate else { continue }
            if let credited = try credit(candidate, how, notes: notes, quantity: quantity, in: session) {
                return .credited(credited, how)
            }
        }

        // 4. Nothing open: an order made for the purchase, or the ledger row waits.
        guard var made = newOrder, let user else { return .unmatched(ledger) }
        // Made by a catalog the database no longer holds (another instance reloaded first): none
        // of it is kept, and the purchase is credited where the catalog is the one bound.
        guard try session.saleAgrees(made.terms, productID: made.order.productID) else { throw .termsChanged }
        made.order.userID = user
        guard try session.insert(made.order, event: made.event) else { throw .constraint }
        guard let inserted = try session.order(made.order.outTradeNo),
              let credited = try credit(inserted, .newOrder, notes: notes, quantity: quantity, in: session)
        else { throw .unexpectedRow }
        return .credited(credited, .newOrder)
    }

    /// Credits `candidate` through the door if it is still in a state it may be credited from;
    /// returns the order as credited, or nil when it was not (then nothing was written).
    private func credit(_ candidate: OrderRecord, _ how: AppleMatch, notes: [AppleMatchNote], quantity: Int?,
                        in session: some AppleCreditSession) throws(StorageError) -> OrderRecord? {
        let facts = transaction
        // Only the token, or a person who looked (an assignment), says an order closed at its
        // expiry was paid after all; support's own decision needs no flag for a person.
        let from = how == .appAccountToken || assignedBy != nil ? OrderState.open.union([.closed]) : OrderState.open
        guard from.contains(candidate.state) else { return nil }
        var flags: Set<OrderFlag> = []
        // An order past its expiry is closed, whether or not the reconciler has closed it yet (one
        // made for the purchase here expires as it is made: it was never open to anyone).
        let expired = candidate.state == .closed || (how != .newOrder && at >= candidate.expiresAt)
        if expired && assignedBy == nil { flags.insert(.paidAfterClose) }
        if how == .newOrder {
            if newOrder?.expected != true { flags.insert(.matchedWithoutOrder) }
            flags.formUnion(newOrder?.flags ?? [])
        }
        let apple = AppleTransactionFields(transactionID: facts.transactionID, originalTransactionID: facts.originalTransactionID,
                                           environment: facts.environment, quantity: quantity)
        // The order as it will read once this commits: what the outbox event describes.
        var paid = candidate
        paid.state = .success
        paid.paidAt = StoreTime.date(milliseconds: StoreTime.milliseconds(facts.purchaseDate))
        paid.appleTransactionID = apple.transactionID
        paid.originalTransactionID = apple.originalTransactionID
        paid.environment = apple.environment
        paid.appleQuantity = paid.appleQuantity ?? apple.quantity
        paid.flags.formUnion(flags)
        let transition = OrderTransition(
            outTradeNo: candidate.outTradeNo, to: .success, from: from, paidAt: facts.purchaseDate,
            detail: candidate.state == .closed ? source + " (paid after close)" : source,
            outbox: outbox(paid), followUp: followUp(paid), addingFlags: flags, at: at, apple: apple)
        try transition.validate()
        guard case .changed(let after) = try session.transition(transition) else { return nil }
        try session.markCredited(facts.transactionID, outTradeNo: after.outTradeNo, matchedBy: how, at: at)
        let decision = AppleMatchDecision(matchedBy: how, order: after, previousState: candidate.state, notes: notes)
        try session.appendEvents(events(decision), to: after.outTradeNo)
        return after
    }

    package static func isOpenAppleOrder(_ order: OrderRecord, product: String) -> Bool {
        order.channel == .apple && order.appleProductID == product && OrderState.open.contains(order.state)
    }

    /// Whether `order`, the one a transaction's token names, was paid by another transaction of
    /// the same subscription. Apple carries a subscription's token on to its later transactions —
    /// its renewals, and an upgrade made in the App Store's settings by whoever uses the device —
    /// so there the token says whose the subscription was, not who made this purchase.
    public static func tokenIsInherited(_ order: OrderRecord, by facts: AppleTransactionFacts) -> Bool {
        guard let paidBy = order.appleTransactionID, paidBy != facts.transactionID else { return false }
        return order.originalTransactionID == facts.originalTransactionID
    }
}
