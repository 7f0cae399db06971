// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import JSON

/// The credentials of App Store Server API calls: the In-App Purchase key from App Store Connect
/// (`.p8`, P-256), its key id, the team's issuer id, and the app's bundle id.
public struct ServerAPICredentials: Sendable {
    public var key: ES256PrivateKey
    /// `kid`: the key's 10-character id.
    public var keyID: String
    /// `iss`: the issuer id (a UUID) shown on App Store Connect's Keys page.
    public var issuerID: String
    /// `bid`: the app's bundle id.
    public var bundleID: String

    public init(key: ES256PrivateKey, keyID: String, issuerID: String, bundleID: String) {
        self.key = key
        self.keyID = keyID
        self.issuerID = issuerID
        self.bundleID = bundleID
    }

    /// Apple refuses tokens that live longer than an hour; its own libraries use five minutes.
    public static let defaultTokenLifetime: TimeInterval = 300

    /// A signed bearer token (ES256 JWT): header `alg` ES256, `kid`, `typ` JWT; claims `iss`,
    /// `iat` (`now`, whole seconds), `exp` (`iat` + `lifetime`), `aud` `appstoreconnect-v1`, `bid`.
    ///
    /// The signature is OpenSSL's DER ECDSA converted to the raw r‖s JWS requires.
    public func token(issuedAt now: Date, lifetime: TimeInterval = defaultTokenLifetime) -> String {
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let header: JSONValue = ["alg": "ES256", "kid": .string(keyID), "typ": "JWT"]
        let claims: JSONValue = [
            "iss": .string(issuerID), "iat": .int(Int(issuedAt)), "exp": .int(Int(issuedAt + Int64(lifetime))),
            "aud": "appstoreconnect-v1", "bid": .string(bundleID),
        ]
        return JWSSigner.sign(header: header, payload: claims, with: key)
    }
}
