// SPDX-License-Identifier: Apache-2.0
import Foundation

/// What a verified App Store transaction says, as the store keeps it (no protocol types: the
/// gateway verified it and copied these fields out).
public struct AppleTransactionFacts: Sendable, Hashable {
    /// Apple's `transactionId`: the key of a purchase, credited to one order ever.
    public var transactionID: String
    public var originalTransactionID: String
    /// Apple's `productId` (the catalog's `apple_product_id`).
    public var productID: String
    /// `Production` or `Sandbox`.
    public var environment: String
    /// The `appAccountToken` the app passed to StoreKit (lowercase UUID), if it did.
    public var appAccountToken: String?
    public var purchaseDate: Date
    /// Set once Apple refunded or revoked it.
    public var revocationDate: Date?
    /// What Apple charged, as Apple gave it: `price` in milli-units of `currency` (CNY 13.99 is
    /// 13990), and the storefront (ISO 3166-1 alpha-3). Nil when the evidence did not say
    /// (verifyReceipt's entries, rows older than these columns).
    public var price: Int64?
    public var currency: String?
    public var storefront: String?
    /// How many of the product the transaction sold (a consumable may be bought several at once).
    /// Nil when the evidence did not say (rows older than this column).
    public var quantity: Int?
    /// Apple's `transactionReason` of a subscription's transaction: a renewal Apple charged by
    /// itself (true) or a purchase a person made (false). Nil when the evidence did not say (not a
    /// subscription, a receipt's entry, rows older than this column).
    public var renewal: Bool?

    public init(transactionID: String, originalTransactionID: String, productID: String, environment: String,
                appAccountToken: String? = nil, purchaseDate: Date, revocationDate: Date? = nil, price: Int64? = nil,
                currency: String? = nil, storefront: String? = nil, quantity: Int? = nil, renewal: Bool? = nil) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.environment = environment
        self.appAccountToken = appAccountToken
        self.purchaseDate = purchaseDate
        self.revocationDate = revocationDate
        self.price = price
        self.currency = currency
        self.storefront = storefront
        self.quantity = quantity
        self.renewal = renewal
    }

    /// `renewal` as the ledger's `transaction_reason` keeps it: Apple's own words.
    package var transactionReason: String? { renewal.map { $0 ? "RENEWAL" : "PURCHASE" } }

    package static func renewal(transactionReason: String?) throws(StorageError) -> Bool? {
        switch transactionReason {
        case nil: return nil
        case "RENEWAL": return true
        case "PURCHASE": return false
        default: throw .unexpectedRow
        }
    }
}

/// How a transaction found its order, in the order they are tried (the answer's `matched_by`).
public enum AppleMatch: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The order whose `app_account_token` is the transaction's `appAccountToken`.
    case appAccountToken = "app_account_token"
    /// The `out_trade_no` the app reported, an open order of this user for this product.
    case outTradeNo = "out_trade_no"
    /// The user's oldest open App Store order for the product (凑单).
    case userProduct = "user_product"
    /// None of those: an order was made for the user and product, flagged `matched_without_order`.
    case newOrder = "new_order"

    public var description: String { rawValue }
}

/// One App Store transaction in the ledger: every transaction the gateway verified, credited to an
/// order or not yet (a notification whose user is unknown), and whether Apple revoked it.
///
/// The ledger is where "a transaction id credits one order, ever" is kept by the database itself:
/// `transactionID` is its primary key, `outTradeNo` is set once and never changes (and is unique),
/// and the credited order carries the same id under a unique index of its own.
public struct AppleTransactionRecord: Sendable, Hashable {
    public var facts: AppleTransactionFacts
    /// The order it credited; nil while unmatched.
    public var outTradeNo: String?
    public var matchedBy: AppleMatch?
    /// How the gateway first learned of it, e.g. `report (signed_transaction)`, `notification ONE_TIME_CHARGE`.
    public var source: String
    public var firstSeenAt: Date
    public var creditedAt: Date?
    public var updatedAt: Date
    /// When Apple last reversed a refund of it (REFUND_REVERSED's `signedDate`): a revocation dated
    /// at or before this is one Apple took back, and is never applied again.
    public var refundReversedAt: Date?

    public init(facts: AppleTransactionFacts, outTradeNo: String? = nil, matchedBy: AppleMatch? = nil, source: String,
                firstSeenAt: Date, creditedAt: Date? = nil, updatedAt: Date? = nil, refundReversedAt: Date? = nil) {
        self.facts = facts
        self.outTradeNo = outTradeNo
        self.matchedBy = matchedBy
        self.source = source
        self.firstSeenAt = firstSeenAt
        self.creditedAt = creditedAt
        self.updatedAt = updatedAt ?? firstSeenAt
        self.refundReversedAt = refundReversedAt
    }

    public var transactionID: String { facts.transactionID }
    public var isRevoked: Bool { facts.revocationDate != nil }
}

/// A transaction of some user's App Store account, to ask the Server API about that account
/// (Get Transaction History, Get Refund History): the latest one the gateway credited for the user.
public struct AppleAnchor: Sendable, Hashable {
    public var userID: String
    public var transactionID: String
    public var environment: String

    public init(userID: String, transactionID: String, environment: String) {
        self.userID = userID
        self.transactionID = transactionID
        self.environment = environment
    }
}

/// One App Store Server Notification V2, recorded once per `notificationUUID` (Apple's idempotency
/// key) after its effects were made durable.
public struct AppStoreNotificationRecord: Sendable, Hashable {
    public var notificationUUID: String
    public var notificationType: String
    public var subtype: String?
    public var environment: String
    public var transactionID: String?
    public var signedDate: Date
    public var receivedAt: Date
    /// What it did, in a few words (`credited T1 to O1`, `refund of O1`, `recorded`).
    public var outcome: String

    public init(notificationUUID: String, notificationType: String, subtype: String?, environment: String,
                transactionID: String?, signedDate: Date, receivedAt: Date, outcome: String) {
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.subtype = subtype
        self.environment = environment
        self.transactionID = transactionID
        self.signedDate = signedDate
        self.receivedAt = receivedAt
        self.outcome = outcome
    }
}
