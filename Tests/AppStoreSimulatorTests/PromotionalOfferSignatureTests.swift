// SPDX-License-Identifier: Apache-2.0
import AppStore
import Crypto
import Foundation
import JSON
import Testing

/// Apple's v2 promotional offer signature as `ServerAPICredentials` makes it: the header and claims
/// `PromotionalOfferV2SignatureCreator` writes, whole-second `iat`, the nonce as given and
/// lowercase, `transactionId` only when there is one, and an ES256 signature the key's public half
/// verifies (Apple's library and PyJWT check the gateway's: OfferSignatureAgreementTests).
struct PromotionalOfferSignatureTests {
    static let credentials = ServerAPICredentials(key: ES256PrivateKey.generate(), keyID: "2X9R4HXF34",
                                                  issuerID: "57246542-96fe-1a63-e053-0824d011072a", bundleID: "com.example.courses")
    static let nonce = UUID(uuidString: "3F2504E0-4F89-41D3-9A0C-0305E82C3301")!

    static func decode(_ jws: String) throws -> (header: JSONValue, claims: JSONValue, verifies: Bool) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        let header = try JSONValue.parse(try #require(Base64.decode(parts[0], .urlUnpadded)))
        let claims = try JSONValue.parse(try #require(Base64.decode(parts[1], .urlUnpadded)))
        let signature = try #require(Base64.decode(parts[2], .urlUnpadded))
        let verifies = signature.count == 64
            && credentials.key.publicKey.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8))
        return (header, claims, verifies)
    }

    @Test("The signature carries Apple's header and claims, the nonce lowercase and iat in whole seconds, and verifies")
    func theSignatureCarriesApplesHeaderAndClaims() throws {
        let jws = Self.credentials.promotionalOfferSignature(
            PromotionalOfferSignatureRequest(productID: "vip.monthly", offerIdentifier: "winback_50", transactionID: "2000000000000042"),
            issuedAt: Date(timeIntervalSince1970: 1_764_460_800.9), nonce: Self.nonce)
        let (header, claims, verifies) = try Self.decode(jws)
        #expect(verifies)
        #expect(header == ["alg": "ES256", "kid": "2X9R4HXF34", "typ": "JWT"])
        #expect(claims == [
            "iss": "57246542-96fe-1a63-e053-0824d011072a", "iat": .int(1_764_460_800), "aud": "promotional-offer",
            "bid": "com.example.courses", "nonce": "3f2504e0-4f89-41d3-9a0c-0305e82c3301", "productId": "vip.monthly",
            "offerIdentifier": "winback_50", "transactionId": "2000000000000042",
        ])
    }

    @Test("Without a transaction id the claim is absent, and each signature gets a fresh nonce by default")
    func withoutATransactionIDTheClaimIsAbsent() throws {
        let request = PromotionalOfferSignatureRequest(productID: "vip.monthly", offerIdentifier: "winback_50")
        let first = try Self.decode(Self.credentials.promotionalOfferSignature(request, issuedAt: Date()))
        let second = try Self.decode(Self.credentials.promotionalOfferSignature(request, issuedAt: Date()))
        #expect(first.verifies && second.verifies)
        #expect(first.claims["transactionId"] == nil)
        let nonce = try #require(first.claims["nonce"]?.stringValue)
        #expect(nonce == nonce.lowercased() && UUID(uuidString: nonce) != nil)
        #expect(first.claims["nonce"] != second.claims["nonce"])
    }
}
