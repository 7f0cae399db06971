// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import JSON
import Testing

/// The hostile corpus: every way a forged or broken token is refused, each with its named rule,
/// and never with the token in the error.
struct HostileSignedDataTests {
    typealias F = SignedDataFixtures

    /// Verifies `jws` and returns the rule it was refused with (nil if it was accepted).
    static func rule(_ jws: String, verifier: SignedDataVerifier? = nil, kind: Kind = .transaction) -> SignedDataError.Rule? {
        let verifier = verifier ?? (try! F.verifier())
        do {
            switch kind {
            case .transaction: _ = try verifier.verifyTransaction(jws)
            case .notification: _ = try verifier.verifyNotification(jws)
            }
            return nil
        } catch {
            // The description names the rule and never carries the token or its values.
            let text = "\(error)"
            #expect(text.hasPrefix(error.rule.rawValue + ": "))
            #expect(text.count < 120)
            #expect(!text.contains("2000000812345678") && !text.contains(F.bundleID) && !text.contains("eyJ"))
            return error.rule
        }
    }

    enum Kind { case transaction, notification }

    static var genuine: String { F.pki.sign(payload: F.transaction().payload) }

    /// Replaces segment `index` of `jws`.
    static func replacing(_ jws: String, segment index: Int, with text: String) -> String {
        var parts = F.segments(jws)
        parts[index] = text
        return parts.joined(separator: ".")
    }

    @Test func theGenuineTokenIsAccepted() {
        #expect(Self.rule(Self.genuine) == nil)
    }

    @Test func aTamperedPayloadHeaderOrSignatureIsAnInvalidSignature() {
        let jws = Self.genuine
        var payload = F.transaction().payload.objectValue!
        payload["price"] = 1
        let tamperedPayload = Self.replacing(jws, segment: 1, with: Base64.encode(JSONValue.object(payload).bytes(), .urlUnpadded))
        #expect(Self.rule(tamperedPayload) == .invalidSignature)

        let header = JSONValue.object(["alg": "ES256", "kid": "x", "x5c": .array(F.pki.x5c.map(JSONValue.string))])
        let tamperedHeader = Self.replacing(jws, segment: 0, with: Base64.encode(header.bytes(), .urlUnpadded))
        #expect(Self.rule(tamperedHeader) == .invalidSignature)

        var signature = Base64.decode(F.segments(jws)[2], .urlUnpadded)!
        signature[10] ^= 0x01
        #expect(Self.rule(Self.replacing(jws, segment: 2, with: Base64.encode(signature, .urlUnpadded))) == .invalidSignature)
        // r or s of zero, or beyond the group order, is simply invalid.
        #expect(Self.rule(Self.replacing(jws, segment: 2, with: Base64.encode([UInt8](repeating: 0, count: 64), .urlUnpadded))) == .invalidSignature)
        #expect(Self.rule(Self.replacing(jws, segment: 2, with: Base64.encode([UInt8](repeating: 0xFF, count: 64), .urlUnpadded))) == .invalidSignature)
    }

    @Test func aDERSignatureWhereRawIsExpectedIsRefused() throws {
        let jws = Self.genuine
        let raw = Base64.decode(F.segments(jws)[2], .urlUnpadded)!
        let der = try #require(ECDSASignature.der(fromRaw: raw))
        #expect(der.count > 64)
        #expect(Self.rule(Self.replacing(jws, segment: 2, with: Base64.encode(der, .urlUnpadded))) == .invalidSignature)
        // And a signature from the right key over the right bytes, DER-encoded, is still refused.
        #expect(ECDSASignature.raw(fromDER: der) == raw)
    }

    @Test func algNoneRS256AndOtherAlgorithmsAreUnsupported() {
        for alg in ["none", "RS256", "HS256", "es256", "ES384", ""] {
            let jws = F.token(header: F.header(x5c: F.pki.x5c, alg: alg), payload: F.transaction().payload)
            #expect(Self.rule(jws) == .unsupportedAlgorithm, "alg \(alg)")
        }
        let unsigned = Base64.encode(Array(#"{"alg":"none"}"#.utf8), .urlUnpadded) + "."
            + Base64.encode(F.transaction().payload.bytes(), .urlUnpadded) + "."
        #expect(Self.rule(unsigned) == .malformed)  // an empty signature segment is not even a JWS here
        let numeric = F.token(header: #"{"alg":256,"x5c":[]}"#, payload: F.transaction().payload)
        #expect(Self.rule(numeric) == .unsupportedAlgorithm)
    }

    @Test func twoOrFourCertificatesAreAnInvalidChain() {
        let x5c = F.pki.x5c
        for chain in [[], [x5c[0]], [x5c[0], x5c[1]], x5c + [x5c[2]], [x5c[0], x5c[1], x5c[1], x5c[2]]] {
            let jws = F.token(header: F.header(x5c: chain), payload: F.transaction().payload)
            #expect(Self.rule(jws) == .invalidChain, "\(chain.count) certificates")
        }
    }

    @Test func theAttackersOwnRootInX5cIsNeverTrusted() throws {
        // A perfectly valid chain and signature, all of it the attacker's.
        let attacker = F.otherPKI
        #expect(Self.rule(attacker.sign(payload: F.transaction().payload)) == .invalidChain)
        // The attacker's leaf and intermediate presented with our root in x5c[2].
        let spliced = F.token(header: F.header(x5c: [attacker.x5c[0], attacker.x5c[1], F.pki.x5c[2]]),
                              payload: F.transaction().payload, pki: attacker)
        #expect(Self.rule(spliced) == .invalidChain)
        // Our leaf and intermediate, with the attacker's root in x5c[2].
        let foreignRoot = F.token(header: F.header(x5c: [F.pki.x5c[0], F.pki.x5c[1], attacker.x5c[2]]),
                                  payload: F.transaction().payload)
        #expect(Self.rule(foreignRoot) == .invalidChain)
    }

    @Test func aLeafSignedDirectlyByTheRootOrTheIntermediateInTheLeafsPlaceIsAnInvalidChain() {
        // The intermediate offered as the leaf: it is a CA and lacks the leaf OID; OpenSSL finds a
        // path of two, not three.
        let x5c = F.pki.x5c
        let jws = F.token(header: F.header(x5c: [x5c[1], x5c[1], x5c[2]]), payload: F.transaction().payload)
        #expect(Self.rule(jws) == .invalidChain)
        let swapped = F.token(header: F.header(x5c: [x5c[1], x5c[0], x5c[2]]), payload: F.transaction().payload)
        #expect(Self.rule(swapped) == .invalidChain)
    }

    @Test func aMissingLeafOrIntermediateOIDIsRefused() throws {
        for options in [SimulatorPKI.Options(name: "No leaf OID", leafOID: false),
                        SimulatorPKI.Options(name: "No WWDR OID", intermediateOID: false)] {
            let pki = SimulatorPKI(options)
            let verifier = try F.verifier(pki: pki)
            #expect(Self.rule(pki.sign(payload: F.transaction().payload), verifier: verifier) == .missingAppleOID)
        }
    }

    @Test func aLeafExpiredOrNotYetValidAtSignedDateIsAnInvalidChain() throws {
        let expired = SimulatorPKI(.init(name: "Expired leaf", leafValidity:
            Date(timeIntervalSince1970: 1_577_836_800)...Date(timeIntervalSince1970: 1_735_689_600)))
        #expect(Self.rule(expired.sign(payload: F.transaction().payload), verifier: try F.verifier(pki: expired)) == .invalidChain)
        let future = SimulatorPKI(.init(name: "Future leaf", leafValidity:
            Date(timeIntervalSince1970: 1_900_000_000)...Date(timeIntervalSince1970: 2_000_000_000)))
        #expect(Self.rule(future.sign(payload: F.transaction().payload), verifier: try F.verifier(pki: future)) == .invalidChain)
        let expiredIntermediate = SimulatorPKI(.init(name: "Expired WWDR", intermediateValidity:
            Date(timeIntervalSince1970: 1_577_836_800)...Date(timeIntervalSince1970: 1_735_689_600)))
        #expect(Self.rule(expiredIntermediate.sign(payload: F.transaction().payload),
                          verifier: try F.verifier(pki: expiredIntermediate)) == .invalidChain)
    }

    @Test func aLeafKeyThatIsNotP256IsAnInvalidChain() throws {
        let pki = SimulatorPKI(.init(name: "P-384 leaf", leafCurve: .p384))
        #expect(pki.leafKey == nil)
        // Signed by some P-256 key: the chain is refused before the signature is looked at.
        let jws = F.token(header: F.header(x5c: pki.x5c), payload: F.transaction().payload)
        #expect(Self.rule(jws, verifier: try F.verifier(pki: pki)) == .invalidChain)
    }

    @Test func aWrongBundleEnvironmentOrAppIsRefusedByName() throws {
        #expect(Self.rule(F.pki.sign(payload: F.transaction(bundleID: "com.attacker.app").payload)) == .bundleMismatch)
        let sandbox = F.pki.sign(payload: F.transaction(environment: .sandbox).payload)
        #expect(Self.rule(sandbox, verifier: try F.verifier(environment: .production)) == .environmentMismatch)
        var xcode = F.transaction().payload.objectValue!
        xcode["environment"] = "Xcode"
        #expect(Self.rule(F.pki.sign(payload: .object(xcode))) == .environmentMismatch)

        #expect(Self.rule(F.notification(appAppleID: 42), kind: .notification) == .appAppleIDMismatch)
        #expect(Self.rule(F.notification(appAppleID: nil), kind: .notification) == .appAppleIDMismatch)
        #expect(Self.rule(F.notification(bundleID: "com.attacker.app"), kind: .notification) == .bundleMismatch)
        // Sandbox notifications carry no app id check, as Apple's library does.
        #expect(Self.rule(F.notification(environment: .sandbox, appAppleID: nil), kind: .notification) == nil)
        // A notification wrapping another app's transaction.
        let foreign = F.notification(transaction: F.transaction(bundleID: "com.attacker.app"))
        #expect(Self.rule(foreign, kind: .notification) == .bundleMismatch)
        // A genuine notification whose inner transaction was signed by another chain.
        let rogue = F.pki.sign(payload: AppStoreNotification(
            notificationType: .refund, notificationUUID: "u", signedDate: F.signedDate, bundleID: F.bundleID,
            appAppleID: F.appAppleID, environment: .production
        ).payload(signedTransactionInfo: F.otherPKI.sign(payload: F.transaction().payload), signedRenewalInfo: nil))
        #expect(Self.rule(rogue, kind: .notification) == .invalidChain)
    }

    @Test func oversizedAndMalformedInputIsMalformed() {
        let jws = Self.genuine
        let parts = F.segments(jws)
        let payload = F.transaction().payload
        var cases: [(String, String)] = [
            ("empty", ""),
            ("one segment", parts[0]),
            ("two segments", parts[0] + "." + parts[1]),
            ("four segments", jws + "." + parts[2]),
            ("empty payload", parts[0] + ".." + parts[2]),
            ("padding", parts[0] + "." + parts[1] + "=." + parts[2]),
            ("whitespace", parts[0] + ". " + parts[1] + "." + parts[2]),
            ("newline", parts[0] + "." + parts[1] + "\n." + parts[2]),
            ("oversized", F.token(header: F.header(x5c: F.pki.x5c),
                                  payload: ["signedDate": 1, "pad": .string(String(repeating: "x", count: 70_000))])),
            ("payload not JSON", parts[0] + "." + Base64.encode(Array("not json".utf8), .urlUnpadded) + "." + parts[2]),
            ("payload an array", F.token(header: F.header(x5c: F.pki.x5c), payload: [1, 2])),
            ("header not JSON", Base64.encode(Array("{".utf8), .urlUnpadded) + "." + parts[1] + "." + parts[2]),
            ("no signedDate", F.token(header: F.header(x5c: F.pki.x5c), payload: ["transactionId": "1"])),
            ("x5c not base64", F.token(header: F.header(x5c: ["!!!", "!!!", "!!!"]), payload: payload)),
            ("x5c not DER", F.token(header: F.header(x5c: [Base64.encode([1, 2, 3], .standardPadded)] + Array(F.pki.x5c.dropFirst())),
                                    payload: payload)),
            ("x5c not a string", F.token(header: #"{"alg":"ES256","x5c":[1,2,3]}"#, payload: payload)),
            ("x5c certificate over 8 KiB", F.token(header: F.header(x5c: [Base64.encode([UInt8](repeating: 0x30, count: 9000), .standardPadded)]
                                                                  + Array(F.pki.x5c.dropFirst())), payload: payload)),
            ("no x5c", F.token(header: #"{"alg":"ES256"}"#, payload: payload)),
        ]
        // The standard alphabet's '+' and '/' are refused wherever they stand. A random signature may
        // hold no '-' or '_' to swap, so one character is always replaced too, by the standard-alphabet
        // character a lax decoder would NOT read as the one it replaces.
        let standard = jws.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if standard != jws { cases.append(("standard alphabet", standard)) }
        let swapped = parts[2].first == "-" ? "/" : "+"
        cases.append(("standard alphabet in the signature", parts[0] + "." + parts[1] + "." + swapped + parts[2].dropFirst()))
        // A last character with non-zero unused bits decodes to the same bytes in lax decoders.
        var payloadText = parts[1]
        if let last = payloadText.last, payloadText.utf8.count % 4 != 0, let index = "AEIMQUYcgkosw048".firstIndex(of: last) {
            payloadText.removeLast()
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            payloadText.append(alphabet[alphabet.firstIndex(of: "AEIMQUYcgkosw048"[index])! + 1])
            cases.append(("non-canonical base64url", parts[0] + "." + payloadText + "." + parts[2]))
        }
        for (name, token) in cases {
            #expect(Self.rule(token) == .malformed, "\(name)")
        }
    }

    @Test func duplicateKeysInThePayloadOrTheHeaderAreMalformed() {
        let body = F.transaction().payload.serialized()
        let duplicated = "{\"bundleId\":\"com.attacker.app\"," + body.dropFirst()
        let jws = JWSSigner.sign(headerBytes: Array(F.header(x5c: F.pki.x5c).utf8), payloadBytes: Array(duplicated.utf8),
                                 with: F.pki.leafKey!)
        #expect(Self.rule(jws) == .malformed)
        let header = "{\"alg\":\"none\"," + F.header(x5c: F.pki.x5c).dropFirst()
        #expect(Self.rule(F.token(header: header, payload: F.transaction().payload)) == .malformed)
        let nested = JSONValue.object(["signedDate": 1, "data": .object(["a": 1])]).serialized()
            .replacingOccurrences(of: "{\"a\":1}", with: "{\"a\":1,\"a\":2}")
        let nestedJWS = JWSSigner.sign(headerBytes: Array(F.header(x5c: F.pki.x5c).utf8), payloadBytes: Array(nested.utf8),
                                       with: F.pki.leafKey!)
        #expect(Self.rule(nestedJWS) == .malformed)
    }

    @Test func unknownPayloadKeysAreAcceptedBecauseAppleAddsFields() {
        var payload = F.transaction().payload.objectValue!
        payload["offerPeriod"] = "P1M"
        payload["appTransactionId"] = "704000000000000"
        payload["someFutureField"] = ["nested": [1, 2, 3]]
        #expect(Self.rule(F.pki.sign(payload: .object(payload))) == nil)
    }

    @Test func aMemberOfTheWrongTypeIsMalformed() {
        var payload = F.transaction().payload.objectValue!
        payload["transactionId"] = 2_000_000_812_345_678
        #expect(Self.rule(F.pki.sign(payload: .object(payload))) == .malformed)
        payload = F.transaction().payload.objectValue!
        payload["appAccountToken"] = "not-a-uuid"
        #expect(Self.rule(F.pki.sign(payload: .object(payload))) == .malformed)
    }

    @Test("A signed payload's text holding U+0000 is malformed, refused where it is read: no store keeps it")
    func aPayloadTextHoldingNULIsMalformed() throws {
        let payload = try JSONValue.parse(Array(#"""
            {"transactionId":"2000000000000001","originalTransactionId":"2000000000000001","bundleId":"com.example",\#
            "productId":"coins\u0000x","purchaseDate":1700000000000,"signedDate":1700000000000,"environment":"Production"}
            """#.utf8))
        #expect(throws: SignedDataError.self) { try AppStoreTransaction(payload: payload) }
    }
}
