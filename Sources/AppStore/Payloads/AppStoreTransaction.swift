// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// A verified, decoded `signedTransactionInfo` (Apple's JWSTransactionDecodedPayload).
///
/// `transactionId` identifies this purchase (or renewal, or restore); `originalTransactionId`
/// the first purchase of the product by this customer, shared by its renewals: credit an order
/// by `transactionId`, never by `originalTransactionId`. `appAccountToken` is the UUID the app
/// set at purchase, if it did — the only link to the order that travels through Apple.
public struct AppStoreTransaction: Sendable, Hashable {
    public var transactionID: String
    public var originalTransactionID: String
    public var bundleID: String
    public var productID: String
    public var type: ProductType?
    /// How many were bought (above 1 only for a consumable); 0 when a decoded payload had no
    /// `quantity`: unknown, never guessed (Apple's payloads always carry it).
    public var quantity: Int
    /// The counts taken from Apple's evidence, signed or a receipt's (StoreKit sells at most 10;
    /// Apple's schema allows more): anything else is not a count.
    public static let quantityRange = 1...1_000_000
    public var appAccountToken: UUID?
    public var inAppOwnershipType: OwnershipType?
    public var environment: AppStoreEnvironment
    public var purchaseDate: Date
    public var originalPurchaseDate: Date?
    public var expiresDate: Date?
    /// When Apple signed this payload.
    public var signedDate: Date
    /// Set when the purchase was refunded or revoked: the order must be reversed.
    public var revocationDate: Date?
    /// 0: other reason (e.g. accidental purchase); 1: an actual or perceived issue in the app.
    public var revocationReason: Int?
    /// In milli-units of `currency` (9990 is 9.99).
    public var price: Int64?
    /// ISO 4217 code.
    public var currency: String?
    public var transactionReason: TransactionReason?
    /// ISO 3166-1 alpha-3 storefront country code.
    public var storefront: String?
    public var webOrderLineItemID: String?
    /// Auto-renewable subscriptions: the subscription group the product belongs to.
    public var subscriptionGroupIdentifier: String?
    /// Auto-renewable subscriptions: the customer upgraded from this transaction to another
    /// product of the group (it stops giving access at the upgrade).
    public var isUpgraded: Bool?
    /// The offer the transaction redeemed: 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: Int?
    public var offerIdentifier: String?

    /// Apple's `type` values.
    public struct ProductType: OpenStringEnumeration {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let consumable = Self(rawValue: "Consumable")
        public static let nonConsumable = Self(rawValue: "Non-Consumable")
        public static let autoRenewableSubscription = Self(rawValue: "Auto-Renewable Subscription")
        public static let nonRenewingSubscription = Self(rawValue: "Non-Renewing Subscription")
    }

    /// `PURCHASED` (the customer bought it) or `FAMILY_SHARED` (a family member's purchase).
    public struct OwnershipType: OpenStringEnumeration {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let purchased = Self(rawValue: "PURCHASED")
        public static let familyShared = Self(rawValue: "FAMILY_SHARED")
    }

    /// `PURCHASE` or `RENEWAL`.
    public struct TransactionReason: OpenStringEnumeration {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let purchase = Self(rawValue: "PURCHASE")
        public static let renewal = Self(rawValue: "RENEWAL")
    }

    public init(
        transactionID: String, originalTransactionID: String, bundleID: String, productID: String,
        type: ProductType?, quantity: Int = 1, appAccountToken: UUID? = nil, inAppOwnershipType: OwnershipType? = .purchased,
        environment: AppStoreEnvironment, purchaseDate: Date, originalPurchaseDate: Date? = nil, expiresDate: Date? = nil,
        signedDate: Date, revocationDate: Date? = nil, revocationReason: Int? = nil, price: Int64? = nil,
        currency: String? = nil, transactionReason: TransactionReason? = .purchase, storefront: String? = nil,
        webOrderLineItemID: String? = nil, subscriptionGroupIdentifier: String? = nil, isUpgraded: Bool? = nil,
        offerType: Int? = nil, offerIdentifier: String? = nil
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.bundleID = bundleID
        self.productID = productID
        self.type = type
        self.quantity = quantity
        self.appAccountToken = appAccountToken
        self.inAppOwnershipType = inAppOwnershipType
        self.environment = environment
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.signedDate = signedDate
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.price = price
        self.currency = currency
        self.transactionReason = transactionReason
        self.storefront = storefront
        self.webOrderLineItemID = webOrderLineItemID
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.isUpgraded = isUpgraded
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
    }

    /// Decodes a payload whose signature was verified.
    public init(payload: JSONValue) throws(SignedDataError) {
        let reader = try PayloadReader(payload)
        let quantity = try reader.integer("quantity")
        guard quantity.map({ Self.quantityRange.contains(Int($0)) }) ?? true else {
            throw SignedDataError(.malformed, "quantity out of range")
        }
        self.init(
            transactionID: try reader.requiredString("transactionId"),
            originalTransactionID: try reader.requiredString("originalTransactionId"),
            bundleID: try reader.requiredString("bundleId"),
            productID: try reader.requiredString("productId"),
            type: try reader.string("type").map(ProductType.init(rawValue:)),
            quantity: quantity.map { Int($0) } ?? 0,
            appAccountToken: try reader.uuid("appAccountToken"),
            inAppOwnershipType: try reader.string("inAppOwnershipType").map(OwnershipType.init(rawValue:)),
            environment: try reader.environment(),
            purchaseDate: try reader.requiredDate("purchaseDate"),
            originalPurchaseDate: try reader.date("originalPurchaseDate"),
            expiresDate: try reader.date("expiresDate"),
            signedDate: try reader.requiredDate("signedDate"),
            revocationDate: try reader.date("revocationDate"),
            revocationReason: try reader.integer("revocationReason").map { Int(clamping: $0) },
            price: try reader.integer("price"),
            currency: try reader.string("currency"),
            transactionReason: try reader.string("transactionReason").map(TransactionReason.init(rawValue:)),
            storefront: try reader.string("storefront"),
            webOrderLineItemID: try reader.string("webOrderLineItemId"),
            subscriptionGroupIdentifier: try reader.string("subscriptionGroupIdentifier"),
            isUpgraded: try reader.bool("isUpgraded"),
            offerType: try reader.integer("offerType").map { Int(clamping: $0) },
            offerIdentifier: try reader.string("offerIdentifier"))
    }

    /// The payload as Apple writes it (the simulator signs this; the CLI prints it).
    public var payload: JSONValue {
        var members: [String: JSONValue] = [
            "transactionId": .string(transactionID), "originalTransactionId": .string(originalTransactionID),
            "bundleId": .string(bundleID), "productId": .string(productID),
            "environment": .string(environment.rawValue), "purchaseDate": .int(Int(purchaseDate.millisecondsSince1970)),
            "signedDate": .int(Int(signedDate.millisecondsSince1970)),
        ]
        if quantity != 0 { members["quantity"] = .int(quantity) }
        members["type"] = type.map { .string($0.rawValue) }
        members["appAccountToken"] = appAccountToken.map { .string($0.uuidString.lowercased()) }
        members["inAppOwnershipType"] = inAppOwnershipType.map { .string($0.rawValue) }
        members["originalPurchaseDate"] = originalPurchaseDate.map { .int(Int($0.millisecondsSince1970)) }
        members["expiresDate"] = expiresDate.map { .int(Int($0.millisecondsSince1970)) }
        members["revocationDate"] = revocationDate.map { .int(Int($0.millisecondsSince1970)) }
        members["revocationReason"] = revocationReason.map { .int($0) }
        members["price"] = price.map { .int(Int($0)) }
        members["currency"] = currency.map { .string($0) }
        members["transactionReason"] = transactionReason.map { .string($0.rawValue) }
        members["storefront"] = storefront.map { .string($0) }
        members["webOrderLineItemId"] = webOrderLineItemID.map { .string($0) }
        members["subscriptionGroupIdentifier"] = subscriptionGroupIdentifier.map { .string($0) }
        members["isUpgraded"] = isUpgraded.map { .bool($0) }
        members["offerType"] = offerType.map { .int($0) }
        members["offerIdentifier"] = offerIdentifier.map { .string($0) }
        return .object(members)
    }
}
