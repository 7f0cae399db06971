// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import StorageCore

/// An App Store transaction the gateway has verified — a StoreKit 2 JWS checked locally, an answer
/// of the Server API, a receipt's `in_app` entry from verifyReceipt, a notification's transaction —
/// in one shape, with the words the timeline says about how it was verified.
struct VerifiedPurchase: Sendable, Hashable {
    var facts: AppleTransactionFacts
    /// Short: `signed_transaction`, `transaction_id`, `receipt`, `notification ONE_TIME_CHARGE`, …
    var via: String
    /// What was checked, for the timeline.
    var verification: String
    var ownership: String?
    /// Whether the evidence proves that whoever sent it holds the purchase: data Apple signed that
    /// only the paying device has (a StoreKit 2 JWS, an app receipt whose signature was verified,
    /// locally or by verifyReceipt). A bare transaction id — sequential, anyone may guess one — or a
    /// receipt read without its signature proves nothing about who sends it.
    var provesPossession = false
    /// The verified transaction itself, when it is one of an auto-renewable subscription (its
    /// period goes into the subscription's state once credited).
    var subscriptionTransaction: AppStoreTransaction?

    var environment: String { facts.environment }
    /// A subscription's payment Apple took by itself (Apple's `transactionReason`, kept in the
    /// ledger for a transaction verified earlier).
    var isRenewal: Bool { facts.renewal == true }
    var transactionID: String { facts.transactionID }
    var productID: String { facts.productID }

    init(_ transaction: AppStoreTransaction, via: String, verification: String) {
        facts = AppleTransactionFacts(
            transactionID: transaction.transactionID, originalTransactionID: transaction.originalTransactionID,
            productID: transaction.productID, environment: transaction.environment.rawValue,
            appAccountToken: transaction.appAccountToken?.uuidString.lowercased(), purchaseDate: transaction.purchaseDate,
            revocationDate: transaction.revocationDate, price: transaction.price, currency: transaction.currency,
            storefront: transaction.storefront, quantity: Self.quantity(transaction.quantity),
            renewal: transaction.type == .autoRenewableSubscription ? Self.renewal(transaction.transactionReason) : nil)
        self.via = via
        self.verification = verification
        ownership = transaction.inAppOwnershipType?.rawValue
        subscriptionTransaction = transaction.type == .autoRenewableSubscription ? transaction : nil
    }

    /// A transaction verified earlier, from the ledger (an unmatched purchase tried again).
    init(facts: AppleTransactionFacts, via: String, verification: String) {
        self.facts = facts
        self.via = via
        self.verification = verification
        ownership = nil
    }

    /// A receipt's entry carries no `appAccountToken`: StoreKit 1 purchases match by order or 凑单.
    init(_ transaction: ReceiptTransaction, receipt: VerifiedReceipt) {
        facts = AppleTransactionFacts(
            transactionID: transaction.transactionID, originalTransactionID: transaction.originalTransactionID,
            productID: transaction.productID, environment: receipt.environment.rawValue, appAccountToken: nil,
            purchaseDate: transaction.purchaseDate, revocationDate: transaction.cancellationDate,
            quantity: Self.quantity(transaction.quantity))
        via = "receipt"
        verification = "receipt verified with verifyReceipt (\(receipt.environment.rawValue), status \(receipt.status.rawValue)); "
            + "the transaction is in its in_app list"
        ownership = transaction.inAppOwnershipType
        provesPossession = true
    }

    /// Apple's reason as the ledger keeps it: nil for one it did not give, or one this gateway does
    /// not know (neither a renewal nor a person's purchase, as far as it can tell).
    private static func renewal(_ reason: AppStoreTransaction.TransactionReason?) -> Bool? {
        switch reason {
        case .some(.renewal): return true
        case .some(.purchase): return false
        default: return nil
        }
    }

    /// Apple's `quantity` as the store keeps it, nil for unknown: both decoders give 0 for a count
    /// Apple did not give, and a transaction made in code may hold anything.
    private static func quantity(_ quantity: Int) -> Int? {
        AppStoreTransaction.quantityRange.contains(quantity) ? quantity : nil
    }

    /// The timeline's line about it: `transaction 2000… (com.example…, Production, purchased …): <how verified>`.
    var summary: String {
        var text = "transaction \(transactionID) (\(productID), \(environment), purchased \(Timestamp.rfc3339(facts.purchaseDate))"
        if facts.originalTransactionID != transactionID { text += ", original \(facts.originalTransactionID)" }
        if let quantity = facts.quantity, quantity != 1 { text += ", quantity \(quantity)" }
        if let price = facts.price, let currency = facts.currency {
            text += ", price \(AppStorePrice.decimal(price)) \(currency)"
        }
        if let storefront = facts.storefront { text += ", storefront \(storefront)" }
        return text + "): " + verification
    }

    /// What Apple charged in the minor unit of its currency (CNY 13990 milli-units → 1399 fen),
    /// when the transaction says; nil also for nothing charged (a price of 0).
    var chargedMinorUnits: (amount: Int, currency: String)? {
        guard let price = facts.price, let currency = facts.currency,
              let minor = AppStorePrice.minorUnits(milli: price, currency: currency), minor > 0, let amount = Int(exactly: minor)
        else { return nil }
        return (amount, currency)
    }
}
