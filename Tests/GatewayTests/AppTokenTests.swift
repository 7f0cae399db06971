// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
@testable import Gateway
import Testing

/// The app token rules, one by one, on the verifier itself (the API tests repeat them over sockets).
struct AppTokenTests {
    static let now = Date(timeIntervalSince1970: 1_796_000_000)
    static let verifier = AppTokenVerifier(secrets: [TestTokens.secret])
    static var seconds: Int { Int(now.timeIntervalSince1970) }

    func refusal(_ token: String, verifier: AppTokenVerifier = AppTokenTests.verifier) -> AppTokenError? {
        do {
            _ = try verifier.verify(token, now: Self.now)
            return nil
        } catch {
            return error
        }
    }

    @Test func aWellFormedTokenGivesItsUser() throws {
        let claims = try Self.verifier.verify(TestTokens.token(payload: TestTokens.payload(sub: "u-1", now: Self.now)), now: Self.now)
        #expect(claims.subject == "u-1")
        #expect(claims.expiresAt - claims.issuedAt == 3600)
        // The minter's tokens, and an audience array that names the gateway, verify too.
        #expect(try Self.verifier.verify(TestTokens.minted("u-2", now: Self.now), now: Self.now).subject == "u-2")
        let array = TestTokens.payload(aud: #"["other","wxpay-gateway"]"#, now: Self.now)
        #expect(try Self.verifier.verify(TestTokens.token(payload: array), now: Self.now).subject == "user-a")
    }

    @Test func theClockRulesAllowSixtySecondsOfSkewAndNoMore() {
        let s = Self.seconds
        #expect(refusal(TestTokens.token(payload: TestTokens.payload(iat: s - 3600, exp: s - 61))) == .expired)
        #expect(refusal(TestTokens.token(payload: TestTokens.payload(iat: s - 3600, exp: s - 30))) == nil)
        #expect(refusal(TestTokens.token(payload: TestTokens.payload(iat: s + 61, exp: s + 600))) == .issuedInFuture)
        #expect(refusal(TestTokens.token(payload: TestTokens.payload(iat: s + 30, exp: s + 600))) == nil)
        #expect(refusal(TestTokens.token(payload: TestTokens.payload(iat: s, exp: s + 86401))) == .lifetime)
        #expect(refusal(TestTokens.token(payload: TestTokens.payload(iat: s, exp: s + 86400))) == nil)
        #expect(refusal(TestTokens.token(payload: TestTokens.payload(iat: s, exp: s))) == .lifetime)
        let notBefore = #"{"sub":"a","aud":"wxpay-gateway","iat":\#(s),"exp":\#(s + 600),"nbf":\#(s + 120)}"#
        #expect(refusal(TestTokens.token(payload: notBefore)) == .notYetValid)
    }

    @Test func everyClaimIsRequiredAndChecked() {
        let s = Self.seconds
        let cases: [(String, AppTokenError)] = [
            (#"{"aud":"wxpay-gateway","iat":\#(s),"exp":\#(s + 60)}"#, .subject),
            (#"{"sub":"","aud":"wxpay-gateway","iat":\#(s),"exp":\#(s + 60)}"#, .subject),
            (#"{"sub":"\#(String(repeating: "x", count: 65))","aud":"wxpay-gateway","iat":\#(s),"exp":\#(s + 60)}"#, .subject),
            (#"{"sub":42,"aud":"wxpay-gateway","iat":\#(s),"exp":\#(s + 60)}"#, .subject),
            (#"{"sub":"a","iat":\#(s),"exp":\#(s + 60)}"#, .audience),
            (#"{"sub":"a","aud":"other","iat":\#(s),"exp":\#(s + 60)}"#, .audience),
            (#"{"sub":"a","aud":["other"],"iat":\#(s),"exp":\#(s + 60)}"#, .audience),
            (#"{"sub":"a","aud":"wxpay-gateway","exp":\#(s + 60)}"#, .issuedAt),
            (#"{"sub":"a","aud":"wxpay-gateway","iat":"\#(s)","exp":\#(s + 60)}"#, .issuedAt),
            (#"{"sub":"a","aud":"wxpay-gateway","iat":\#(s)}"#, .expiry),
            (#"{"sub":"a","aud":"wxpay-gateway","iat":\#(s),"exp":\#(s + 60),"sub":"b"}"#, .duplicateKey(segment: "payload")),
            ("[1]", .notJSONObject(segment: "payload")),
        ]
        for (payload, expected) in cases {
            #expect(refusal(TestTokens.token(payload: payload)) == expected, "\(payload)")
        }
    }

    @Test func onlyHS256SignedWithAConfiguredSecretIsAccepted() throws {
        let payload = TestTokens.payload(now: Self.now)
        let none = Base64.encode(Array(#"{"alg":"none"}"#.utf8), .urlUnpadded) + "." + Base64.encode(Array(payload.utf8), .urlUnpadded) + "."
        // Unsigned (an empty signature): refused for its algorithm, not for its shape.
        #expect(refusal(none) == .algorithm)
        #expect(refusal(TestTokens.token(header: #"{"alg":"none"}"#, payload: payload)) == .algorithm)
        #expect(refusal(TestTokens.token(header: #"{"alg":"hs256"}"#, payload: payload)) == .algorithm)
        #expect(refusal(TestTokens.token(header: #"{"typ":"JWT"}"#, payload: payload)) == .algorithm)
        let hs512 = TestTokens.token(header: #"{"alg":"HS512","typ":"JWT"}"#, payload: payload) { input in
            TestTokens.hmacSHA512(input, secret: TestTokens.secret)
        }
        #expect(refusal(hs512) == .algorithm)
        #expect(refusal(TestTokens.token(header: #"{"alg":"HS256","alg":"none"}"#, payload: payload))
            == .duplicateKey(segment: "header"))
        #expect(refusal(TestTokens.token(header: #"{"alg":"HS256","crit":["exp"]}"#, payload: payload)) == .criticalHeader)
        #expect(refusal(TestTokens.token(header: #"{"alg":"HS256","typ":"JOSE+JSON"}"#, payload: payload)) == .type)
        #expect(refusal(TestTokens.token(payload: payload, secret: "another-secret-of-at-least-32-bytes!!")) == .signature)
    }

    @Test func aTamperedTokenIsRefusedAndARotatedSecretStillVerifies() {
        let token = TestTokens.token(payload: TestTokens.payload(sub: "alice", now: Self.now))
        var parts = token.split(separator: ".").map(String.init)
        parts[1] = Base64.encode(Array(TestTokens.payload(sub: "mallory", now: Self.now).utf8), .urlUnpadded)
        #expect(refusal(parts.joined(separator: ".")) == .signature)
        let old = "the-previous-secret-still-in-rotation-0001"
        let rotated = AppTokenVerifier(secrets: ["the-new-secret-minting-from-now-on-0002", old])
        #expect(refusal(TestTokens.token(payload: TestTokens.payload(now: Self.now), secret: old), verifier: rotated) == nil)
        #expect(refusal(TestTokens.token(payload: TestTokens.payload(now: Self.now), secret: old)) == .signature)
    }

    @Test func malformedTokensSayWhichRuleFailedWithoutEchoingTheToken() {
        let good = TestTokens.token(payload: TestTokens.payload(now: Self.now))
        let parts = good.split(separator: ".").map(String.init)
        let cases: [(String, AppTokenError)] = [
            (parts[0] + "." + parts[1], .segments),
            (good + ".extra", .segments),
            (parts[0] + ".." + parts[2], .segments),
            (parts[0] + "=." + parts[1] + "." + parts[2], .badBase64(segment: "header")),
            (parts[0] + "." + parts[1] + "." + parts[2].replacingOccurrences(of: "_", with: "/") + "+", .badBase64(segment: "signature")),
            (String(repeating: "a", count: 4097), .tooLong),
            (Base64.encode(Array("not json".utf8), .urlUnpadded) + "." + parts[1] + "." + parts[2], .notJSONObject(segment: "header")),
        ]
        for (token, expected) in cases {
            let error = refusal(token)
            #expect(error == expected, "\(token.prefix(40))")
            #expect(!(error?.description.contains(parts[1]) ?? true))
        }
    }

    @Test func base64urlIsCanonicalAndRoundTrips() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64.encode(bytes, .urlUnpadded)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64.decode(text.utf8, .urlUnpadded) == bytes)
        }
        // "QQ" is "A"; "QR" carries stray bits and must not also mean "A".
        #expect(Base64.decode("QQ".utf8, .urlUnpadded) == [0x41])
        #expect(Base64.decode("QR".utf8, .urlUnpadded) == nil)
        #expect(Base64.decode("Q".utf8, .urlUnpadded) == nil)
        #expect(Base64.decode("QQ==".utf8, .urlUnpadded) == nil)
    }
}
