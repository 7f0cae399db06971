// SPDX-License-Identifier: Apache-2.0
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
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        let mac = try signature?(input) ?? HMACSHA256Key(Array(secret.utf8)).mac(Array(input.utf8))
        return input + "." + Base64URL.encode(mac)
    }

    /// A token for `user` as the gateway's own minter makes it.
    static func minted(_ user: String, secret: String = secret, now: Date = Date(), ttl: Int = 3600) -> String {
        AppTokenMinter(secret: secret).token(subject: user, now: now, ttl: ttl)
    }

    /// HMAC-SHA512 by the openssl command line (a correctly signed HS512 token must still be refused).
    static func hmacSHA512(_ message: String, secret: String) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "dgst", "-sha512", "-mac", "HMAC", "-macopt", "key:\(secret)", "-binary"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(message.utf8))
        try input.fileHandleForWriting.close()
        let mac = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Array(mac)
    }
}
