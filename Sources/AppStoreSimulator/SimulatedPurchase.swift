// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import SimulatorKit

/// What a customer buys in the simulated App Store.
public struct SimulatedPurchase: Sendable, Codable, Hashable {
    /// The Apple account (history and receipts are per account).
    public var user: String
    public var productID: String
    /// `Consumable`, `Non-Consumable` (default), `Auto-Renewable Subscription`, `Non-Renewing Subscription`.
    public var type: String
    /// The token the app set at purchase; nil models the app that set none (or lost it).
    public var appAccountToken: UUID?
    public var environment: AppStoreEnvironment
    /// `PURCHASED` (default) or `FAMILY_SHARED`.
    public var ownership: String
    public var quantity: Int
    /// Milli-units of `currency` (68000 is 68.00); nil: the simulator's price for the product
    /// (`AppStoreSimulatorConfiguration.priceOf`, else 68.00 CNY).
    public var price: Int64?
    public var currency: String?
    public var storefront: String
    /// The offer redeemed (1 introductory, 2 promotional, 3 offer code, 4 win-back) and its id.
    public var offerType: Int?
    public var offerIdentifier: String?

    public init(user: String, productID: String, type: String = "Non-Consumable", appAccountToken: UUID? = nil,
                environment: AppStoreEnvironment = .production, ownership: String = "PURCHASED", quantity: Int = 1,
                price: Int64? = nil, currency: String? = nil, storefront: String = "CHN", offerType: Int? = nil,
                offerIdentifier: String? = nil) {
        self.user = user
        self.productID = productID
        self.type = type
        self.appAccountToken = appAccountToken
        self.environment = environment
        self.ownership = ownership
        self.quantity = quantity
        self.price = price
        self.currency = currency
        self.storefront = storefront
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case user, productID = "productId", type, appAccountToken, environment, ownership, quantity, price, currency, storefront,
             offerType, offerIdentifier
    }

    // Written by hand in control requests: only user and productId are required.
    public init(from decoder: any Decoder) throws {
        try ControlBody.refuseUnknownMembers(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(user: try c.decode(String.self, forKey: .user), productID: try c.decode(String.self, forKey: .productID),
                  type: try c.decodeIfPresent(String.self, forKey: .type) ?? "Non-Consumable",
                  appAccountToken: try c.decodeIfPresent(UUID.self, forKey: .appAccountToken),
                  environment: try c.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment) ?? .production,
                  ownership: try c.decodeIfPresent(String.self, forKey: .ownership) ?? "PURCHASED",
                  quantity: try c.decodeIfPresent(Int.self, forKey: .quantity) ?? 1,
                  price: try c.decodeIfPresent(Int64.self, forKey: .price),
                  currency: try c.decodeIfPresent(String.self, forKey: .currency),
                  storefront: try c.decodeIfPresent(String.self, forKey: .storefront) ?? "CHN",
                  offerType: try c.decodeIfPresent(Int.self, forKey: .offerType),
                  offerIdentifier: try c.decodeIfPresent(String.self, forKey: .offerIdentifier))
    }
}

/// What the device (and a test) learns from a completed purchase.
public struct PurchaseReceipt: Sendable, Codable, Hashable {
    public var transactionID: String
    public var originalTransactionID: String
    public var orderID: String
    public var environment: AppStoreEnvironment
    public var productID: String
    public var appAccountToken: UUID?
    /// What StoreKit 2 hands the app (`Transaction.jsonRepresentation`'s JWS).
    public var signedTransactionInfo: String
    /// What StoreKit 1 hands the app: the account's base64 app receipt.
    public var receipt: String

    private enum CodingKeys: String, CodingKey {
        case transactionID = "transactionId", originalTransactionID = "originalTransactionId", orderID = "orderId",
             environment, productID = "productId", appAccountToken, signedTransactionInfo, receipt
    }
}

/// Why a control action could not happen.
public struct AppStoreSimulatorControlError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case transactionNotFound = "transaction_not_found"
        case alreadyRevoked = "already_revoked"
        case invalidPurchase = "invalid_purchase"
        case notRevoked = "not_revoked"
        case alreadySubscribed = "already_subscribed"
        case subscriptionNotFound = "subscription_not_found"
        case subscriptionInactive = "subscription_inactive"
        case invalidProduct = "invalid_product"
    }

    public let code: Code
    public var description: String {
        switch code {
        case .transactionNotFound: "no such transaction"
        case .alreadyRevoked: "the transaction was already refunded or revoked"
        case .invalidPurchase:
            "user and productId must be non-empty, quantity 1-10 (above 1 only with type Consumable) and offerType 1-4"
        case .notRevoked: "the transaction was not refunded or revoked"
        case .alreadySubscribed: "the customer is already subscribed to a product of this subscription group"
        case .subscriptionNotFound: "no subscription has this original transaction id"
        case .subscriptionInactive: "the subscription has expired or was revoked, or cannot do that in its state"
        case .invalidProduct: "the product is not another auto-renewable product of the subscription's group"
        }
    }
}
