// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import JSON
import Observability

/// A validated `POST /v1/iap/offers/signature` body: `{"product_id", "offer_identifier",
/// "transaction_id"?}`, and with a client token (the backend asks for its user) `"user_id"`.
struct OfferSignatureInput: Sendable, Hashable {
    /// The catalog's product id (not Apple's: the catalog names Apple's).
    var productID: String
    var offerIdentifier: String
    var transactionID: String?
    var userID: String

    static let appFields: Set<String> = ["product_id", "offer_identifier", "transaction_id"]
    static let clientFields: Set<String> = appFields.union(["user_id"])

    /// - Parameter user: the app token's `sub`, or nil for a client token (then `user_id` is required).
    init(json body: [UInt8], user: String?) throws(APIError) {
        let object = try CreateOrderInput.members(of: body)
        if user != nil, object["user_id"] != nil { throw .fieldNotAllowed("user_id") }
        let allowed = user == nil ? Self.clientFields : Self.appFields
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw .invalid(CreateOrderInput.printableField(unknown), "unknown field")
        }
        guard let productID = try CreateOrderInput.string(object, "product_id", required: true, bytes: 1...32) else {
            throw .invalid("product_id", "product_id is required")
        }
        self.productID = productID
        // The identifier goes into a JWS the App Store reads: App Store Connect's identifier
        // characters only, so nothing else (quotes, controls, spaces) is ever signed.
        guard let offer = try CreateOrderInput.string(object, "offer_identifier", required: true, bytes: 1...100),
              Catalog.isValidAppleProductID(offer)
        else {
            throw .invalid("offer_identifier", "offer_identifier must be 1 to 100 of A-Z a-z 0-9 _ . - (the offer's identifier in App Store Connect)")
        }
        offerIdentifier = offer
        transactionID = try CreateOrderInput.string(object, "transaction_id", required: false, bytes: 1...32)
        if let transactionID, !transactionID.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            throw .invalid("transaction_id", "transaction_id must be 1 to 32 digits: one of the customer's App Store transaction ids "
                               + "(or their appTransactionId)")
        }
        if let user {
            userID = user
        } else {
            guard let given = try UserID.member(of: object, required: true) else {
                throw .invalid("user_id", "user_id is required with a client token")
            }
            userID = given
        }
    }
}

extension IAPService {
    /// The subscription product `input` names, checked before anything is counted or signed: 400
    /// `unknown_product` when no active catalog product has that id, 400 `not_a_subscription`
    /// when it is not a membership the iOS app sells (promotional offers exist only for
    /// auto-renewable subscriptions), 503 `appstore_key_missing` without the In-App Purchase key.
    func offerProduct(_ input: OfferSignatureInput) throws(APIError) -> (appleProductID: String, credentials: ServerAPICredentials) {
        guard let product = context.catalog.catalog.product(input.productID), product.active else { throw .unknownProduct }
        guard case .membership = product.kind, let appleProductID = product.appleProductID else { throw .notASubscription }
        guard let credentials = clients.serverAPI?.credentials else { throw .appStoreKeyMissing }
        return (appleProductID, credentials)
    }

    /// `{"signature": JWS}`: Apple's v2 promotional offer signature for the product's App Store
    /// product id, issued now with a fresh nonce (`PromotionalOfferSignature.swift`). Nothing is
    /// stored: the App Store itself refuses a nonce twice and checks the offer and the customer.
    func offerSignature(_ input: OfferSignatureInput, product: (appleProductID: String, credentials: ServerAPICredentials))
        -> [UInt8]
    {
        let signature = product.credentials.promotionalOfferSignature(
            PromotionalOfferSignatureRequest(productID: product.appleProductID, offerIdentifier: input.offerIdentifier,
                                             transactionID: input.transactionID),
            issuedAt: now())
        logger.info("promotional offer signed", [
            "user_id": input.userID, "product_id": input.productID, "offer_identifier": input.offerIdentifier,
        ])
        var writer = JSONObjectWriter(capacity: signature.utf8.count + 32)
        writer.string("signature", signature)
        return writer.finish()
    }
}
