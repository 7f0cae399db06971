// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import Storage

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
    var quantity: Int
    var price: Int64?
    var currency: String?

    var environment: String { facts.environment }
    var transactionID: String { facts.transactionID }
    var productID: String { facts.productID }

    init(_ transaction: AppStoreTransaction, via: String, verification: String) {
        facts = AppleTransactionFacts(
            transactionID: transaction.transactionID, originalTransactionID: transaction.originalTransactionID,
            productID: transaction.productID, environment: transaction.environment.rawValue,
            appAccountToken: transaction.appAccountToken?.uuidString.lowercased(), purchaseDate: transaction.purchaseDate,
            revocationDate: transaction.revocationDate)
        self.via = via
        self.verification = verification
        ownership = transaction.inAppOwnershipType?.rawValue
        quantity = transaction.quantity
        price = transaction.price
        currency = transaction.currency
    }

    /// A transaction verified earlier, from the ledger (an unmatched purchase tried again).
    init(facts: AppleTransactionFacts, via: String, verification: String) {
        self.facts = facts
        self.via = via
        self.verification = verification
        ownership = nil
        quantity = 1
        price = nil
        currency = nil
    }

    /// A receipt's entry carries no `appAccountToken`: StoreKit 1 purchases match by order or 凑单.
    init(_ transaction: ReceiptTransaction, receipt: VerifiedReceipt) {
        facts = AppleTransactionFacts(
            transactionID: transaction.transactionID, originalTransactionID: transaction.originalTransactionID,
            productID: transaction.productID, environment: receipt.environment.rawValue, appAccountToken: nil,
            purchaseDate: transaction.purchaseDate, revocationDate: transaction.cancellationDate)
        via = "receipt"
        verification = "receipt verified with verifyReceipt (\(receipt.environment.rawValue), status \(receipt.status.rawValue)); "
            + "the transaction is in its in_app list"
        ownership = transaction.inAppOwnershipType
        quantity = transaction.quantity
        price = nil
        currency = nil
    }

    /// The timeline's line about it: `transaction 2000… (com.example…, Production, purchased …): <how verified>`.
    var summary: String {
        var text = "transaction \(transactionID) (\(productID), \(environment), purchased \(Timestamp.rfc3339(facts.purchaseDate))"
        if facts.originalTransactionID != transactionID { text += ", original \(facts.originalTransactionID)" }
        if quantity != 1 { text += ", quantity \(quantity)" }
        if let price, let currency { text += ", price \(Self.decimal(price)) \(currency)" }
        return text + "): " + verification
    }

    /// Milli-units as a decimal: 68000 → 68.000.
    private static func decimal(_ milli: Int64) -> String {
        let sign = milli < 0 ? "-" : ""
        let value = abs(milli)
        let fraction = String(value % 1000)
        return "\(sign)\(value / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}
