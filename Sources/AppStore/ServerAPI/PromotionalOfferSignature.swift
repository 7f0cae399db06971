// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// What an app needs to redeem a promotional offer with StoreKit 2
/// (`Product.PurchaseOption.promotionalOffer(_:compactJWS:)`): Apple's v2 promotional offer
/// signature, a compact JWS signed with the In-App Purchase key — the same key, key id, issuer id
/// and bundle id as the Server API's bearer tokens.
///
/// Made as Apple's `PromotionalOfferV2SignatureCreator` (app-store-server-library) makes it, so the
/// App Store reads ours as it reads the library's: header `alg` ES256, `kid`, `typ` JWT; claims
/// `iss`, `iat` (whole seconds), `aud` `promotional-offer`, `bid`, `nonce` (a fresh lowercase
/// UUID: the App Store accepts each signature once), `productId`, `offerIdentifier`, and
/// `transactionId` only when one is given (Apple recommends it: it ties the offer to the customer).
public struct PromotionalOfferSignatureRequest: Sendable, Hashable {
    /// The subscription's product id in App Store Connect.
    public var productID: String
    /// The promotional offer's identifier, as set up in App Store Connect.
    public var offerIdentifier: String
    /// Any transaction of the customer (or their appTransactionId); nil: not in the claims.
    public var transactionID: String?

    public init(productID: String, offerIdentifier: String, transactionID: String? = nil) {
        self.productID = productID
        self.offerIdentifier = offerIdentifier
        self.transactionID = transactionID
    }

    /// The JWS `aud` of promotional offer signatures (the Server API's tokens say `appstoreconnect-v1`).
    public static let audience = "promotional-offer"
}

extension ServerAPICredentials {
    /// Apple's v2 promotional offer signature for `request`, issued at `now` with `nonce` (pass a
    /// fresh UUID each time: Apple refuses a nonce it has seen).
    public func promotionalOfferSignature(_ request: PromotionalOfferSignatureRequest, issuedAt now: Date,
                                          nonce: UUID = UUID()) -> String {
        let issuedAt = Int(now.timeIntervalSince1970.rounded(.down))
        let header: JSONValue = ["alg": "ES256", "kid": .string(keyID), "typ": "JWT"]
        var claims: [String: JSONValue] = [
            "iss": .string(issuerID), "iat": .int(issuedAt), "aud": .string(PromotionalOfferSignatureRequest.audience),
            "bid": .string(bundleID), "nonce": .string(nonce.uuidString.lowercased()),
            "productId": .string(request.productID), "offerIdentifier": .string(request.offerIdentifier),
        ]
        if let transactionID = request.transactionID { claims["transactionId"] = .string(transactionID) }
        return JWSSigner.sign(header: header, payload: .object(claims), with: key)
    }
}
