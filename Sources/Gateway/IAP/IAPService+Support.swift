// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import JSON
import Observability
import StorageCore

/// What support staff need of iOS purchases: the look-up by Apple's ids (a service call the JSON
/// route and the console share) and a recheck that asks the App Store.
extension IAPService {
    /// The orders credited by the App Store transaction (or by the transactions sharing the original
    /// transaction id), and the ledger's rows for them as JSON — credited or not: a purchase whose
    /// user was never known shows up here even without an order.
    public func lookup(appleTransactionID: String?, originalTransactionID: String?) async throws(APIError)
        -> (orders: [OrderRecord], ledger: [[UInt8]])
    {
        for id in [appleTransactionID, originalTransactionID].compactMap({ $0 })
        where id.isEmpty || id.utf8.count > 32 || !id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            throw .invalid(appleTransactionID != nil ? "apple_transaction_id" : "original_transaction_id",
                           "an App Store transaction id is 1 to 32 digits")
        }
        return try await context.storage { () throws(StorageError) in
            if let appleTransactionID {
                let orders = try await self.store.orders(appleTransactionID: appleTransactionID)
                let rows = try await self.store.appleTransaction(appleTransactionID).map { [$0] } ?? []
                return (orders, rows.map(Self.json))
            }
            let original = originalTransactionID ?? ""
            let orders = try await self.store.orders(originalTransactionID: original)
            let rows = try await self.store.appleTransactions(originalTransactionID: original)
            return (orders, rows.map(Self.json))
        }
    }

    /// Look Up Order ID: the order id on the customer's receipt e-mail (`MV…`), the transactions of
    /// that invoice (verified) and the orders they credited. A transaction of the invoice the
    /// gateway never saw goes through the usual credit (its token names its order; else its
    /// ledger row waits for its user): a customer quoting an invoice is how a lost one is found.
    /// Returns nil for an order id Apple does not know (status 1).
    public func lookup(appleOrderID: String) async throws(APIError)
        -> (orders: [OrderRecord], ledger: [[UInt8]], unclaimed: [String])?
    {
        guard (6...64).contains(appleOrderID.utf8.count),
              appleOrderID.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) }) else {
            throw .invalid("apple_order_id", "an Apple order id is 6 to 64 capital letters and digits, as on the receipt e-mail")
        }
        guard let api = clients.serverAPI else { throw .transactionLookupUnavailable(field: "apple_order_id") }
        let answer: OrderLookupResponse
        do {
            answer = try await api.lookUpOrder(appleOrderID)
        } catch {
            throw serverAPIRefusal(error)
        }
        guard answer.isValid else { return nil }
        var orders: [OrderRecord] = []
        var ledger: [[UInt8]] = []
        // The transactions no order holds yet (their page is where support assigns them).
        var unclaimed: [String] = []
        for signed in answer.signedTransactions {
            let transaction: AppStoreTransaction
            do {
                transaction = try clients.verifier.verifyTransaction(signed)
            } catch {
                instruments.upstreamErrors.labelled("order_lookup", error.rule.rawValue).increment()
                continue
            }
            let purchase = VerifiedPurchase(transaction, via: "order id lookup",
                                            verification: "found with Look Up Order ID \(appleOrderID); its signed transaction verified")
            if try await context.storage({ () throws(StorageError) in try await self.store.appleTransaction(purchase.transactionID) }) == nil {
                if purchase.facts.revocationDate != nil {
                    _ = try? await recordRevocation(purchase, source: "support: Look Up Order ID \(appleOrderID)")
                } else {
                    _ = try? await credit(purchase, user: nil, outTradeNo: nil, source: "support: Look Up Order ID \(appleOrderID)")
                }
            }
            let found = try await lookup(appleTransactionID: transaction.transactionID, originalTransactionID: nil)
            orders += found.orders.filter { order in !orders.contains { $0.outTradeNo == order.outTradeNo } }
            ledger += found.ledger
            let row = try await context.storage({ () throws(StorageError) in try await self.store.appleTransaction(transaction.transactionID) })
            if let row, row.outTradeNo == nil { unclaimed.append(row.transactionID) }
        }
        return (orders, ledger, unclaimed)
    }

    /// A ledger row as the support lookup shows it (keys sorted).
    static func json(_ row: AppleTransactionRecord) -> [UInt8] {
        var writer = JSONObjectWriter(capacity: 384)
        writer.string("app_account_token", row.facts.appAccountToken)
        writer.stringOrNull("credited_at", row.creditedAt.map(Timestamp.rfc3339))
        writer.string("currency", row.facts.currency)
        writer.string("environment", row.facts.environment)
        writer.string("first_seen_at", Timestamp.rfc3339(row.firstSeenAt))
        writer.stringOrNull("matched_by", row.matchedBy?.rawValue)
        writer.string("original_transaction_id", row.facts.originalTransactionID)
        writer.stringOrNull("out_trade_no", row.outTradeNo)
        if let price = row.facts.price { writer.number("price", Int(price)) }
        writer.string("product_id", row.facts.productID)
        writer.string("purchase_date", Timestamp.rfc3339(row.facts.purchaseDate))
        if let quantity = row.facts.quantity { writer.number("quantity", quantity) }
        writer.stringOrNull("refund_reversed_at", row.refundReversedAt.map(Timestamp.rfc3339))
        writer.stringOrNull("revocation_date", row.facts.revocationDate.map(Timestamp.rfc3339))
        writer.string("source", row.source)
        writer.string("storefront", row.facts.storefront)
        writer.string("transaction_id", row.facts.transactionID)
        return writer.finish()
    }

    /// Support's recheck of an iOS order: a credited one is looked up with Get Transaction Info
    /// (a refund Apple made and no notification brought is applied); an open or closed one is
    /// checked like the reconciler does, with Get Transaction History of its user's account. What
    /// the App Store said goes on the timeline. Returns the order afterwards.
    func recheck(_ order: OrderRecord) async -> OrderRecord {
        let at = now()
        guard let api = clients.serverAPI else {
            _ = try? await context.store.appendEvent(order.outTradeNo, kind: "recheck",
                                                     detail: "the App Store Server API is not configured: nothing to ask", at: at)
            return order
        }
        if let transactionID = order.appleTransactionID {
            do {
                let purchase = try await lookUp(transactionID, api: api,
                                                environment: order.environment.flatMap(AppStoreEnvironment.init(rawValue:)))
                if purchase.facts.revocationDate != nil {
                    let after = try await recordRevocation(purchase, source: "support recheck (Get Transaction Info)")
                    _ = try? await context.store.appendEvent(order.outTradeNo, kind: "recheck",
                                                             detail: "Get Transaction Info: \(purchase.summary); revoked", at: now())
                    return after ?? order
                }
                _ = try? await context.store.appendEvent(
                    order.outTradeNo, kind: "recheck", detail: "Get Transaction Info: \(purchase.summary); not revoked", at: now())
                if let known = try? await store.appleTransaction(transactionID) {
                    _ = try await fillIn(purchase, known: known, order: order, source: "support recheck (Get Transaction Info)")
                }
                // A subscription's order: where the subscription stands, as Apple says now.
                if let (failed, words) = await refreshSubscription(of: order) {
                    if failed {
                        _ = try? await context.store.appendEvent(order.outTradeNo, kind: "recheck_failed", detail: words, at: now())
                    } else {
                        _ = try? await context.store.appendEvent(order.outTradeNo, kind: "recheck", detail: words, at: now())
                    }
                }
            } catch {
                _ = try? await context.store.appendEvent(order.outTradeNo, kind: "recheck_failed",
                                                         detail: "Get Transaction Info: \(error.code)", at: now())
            }
            return (try? await context.store.order(order.outTradeNo)) ?? order
        }
        _ = await checkHistory(of: order, reason: "support recheck", kind: "recheck", recordNothingFound: true)
        return (try? await context.store.order(order.outTradeNo)) ?? order
    }

    /// A credited purchase's ledger row and order given what `purchase` says and they lacked
    /// (the count, what Apple charged): the evidence that credited it may not have said, a
    /// receipt answer or a purchase recorded before the gateway kept counts. Only evidence that
    /// agrees with the transaction fills anything, and a count once known never changes
    /// (`AppleTransactionFacts.fillsIn`); the ledger may know a count the order lacks (it came
    /// with evidence that did not agree with the order), which evidence giving the same count
    /// fills in. `order`: the credited order, if read already. Returns the order afterwards when
    /// it has a count.
    func fillIn(_ purchase: VerifiedPurchase, known: AppleTransactionRecord, order: OrderRecord?, source: String)
        async throws(APIError) -> OrderRecord?
    {
        var fills = purchase.facts.fillsIn(known.facts)
        if !fills, let count = purchase.facts.quantity, count == known.facts.quantity, let credited = known.outTradeNo {
            var current = order
            if current == nil {
                current = try await context.storage { () throws(StorageError) in try await self.context.store.order(credited) }
            }
            fills = current?.appleQuantity == nil
        }
        guard fills else { return nil }
        let fill = AppleCredit(transaction: purchase.facts, userID: nil, newOrder: nil, source: source,
                               outbox: { _ in nil }, at: now())
        let result = try await context.storage { () throws(StorageError) in
            try await self.context.settlement.creditApple(fill, in: self.store)
        }
        guard case .alreadyCredited(let order, _) = result, order.appleQuantity != nil else { return nil }
        return order
    }
}
