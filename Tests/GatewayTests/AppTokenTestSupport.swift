// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
@testable import Gateway

/// App tokens made by hand, right or wrong in exactly one way.
enum TestTokens {
    static let secret = AppConfiguration.demoTokenSecret
    static let header = #"{"alg":"HS256","typ":"JWT"}"#

    /// A payload with the usual claims around `now`.
    static func payload(sub: String = "user-a", aud: String = #""wxpay-gateway""#, iat: Int? = nil, exp: Int? = nil,
                        now: Date = Date()) -> String {
        let issued = iat ?? Int(now.timeIntervalSince1970)
        return #"{"sub":"\#(sub)","aud":\#(aud),"iat":\#(issued),"exp":\#(exp ?? issued + 3600)}"#
    }

    /// `header.payload.signature`, HS256-signed with `secret` unless `signature` says otherwise.
    static func token(header: String = header, payload: String = payload(), secret: String = secret,
                      signature: ((String) throws -> [UInt8])? = nil) rethrows -> String {
        let input = Base64.encode(Array(header.utf8), .urlUnpadded) + "." + Base64.encode(Array(payload.utf8), .urlUnpadded)
        let mac = try signature?(input) ?? HMACSHA256Key(Array(secret.utf8)).authenticationCode(for: Array(input.utf8))
        return input + "." + Base64.encode(mac, .urlUnpadded)
    }

    /// A token for `user` as the gateway's own minter makes it.
    static func minted(_ user: String, secret: String = secret, now: Date = Date(), ttl: Int = 3600, apps: [String]? = nil) -> String {
        AppTokenMinter(secret: secret).token(subject: user, now: now, ttl: ttl, apps: apps)
    }

    /// HMAC-SHA512 (a correctly signed HS512 token must still be refused).
    static func hmacSHA512(_ message: String, secret: String) -> [UInt8] {
        HMAC.authenticationCode(.sha512, key: Array(secret.utf8), message: Array(message.utf8))
    }
}
