// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import ChildProcessSupport
import Crypto
import Foundation
@testable import Gateway
import HTTP
import JSON
import SimulatorKit
import TestSupport
import Testing

/// `POST /v1/iap/offers/signature` over the in-process gateway with the App Store simulator's
/// In-App Purchase key: the JWS Apple's v2 promotional offers need, who may ask, and every refusal
/// (nothing signed, nothing written).
@Suite(.serialized)
struct OfferSignatureAPITests {
    /// An iOS monthly membership, the same membership sold on WeChat only, a course and a
    /// consumable the iOS app sells, and a retired iOS membership.
    static let catalog = #"""
        {"products":[
         {"id":"vip-month-ios","amount":3000,"description":"VIP 月卡 (iOS)","type":"membership","period":"P1M","entitlement":"vip","apple_product_id":"vip.monthly"},
         {"id":"vip-month","amount":3000,"description":"VIP 月卡","type":"membership","period":"P1M","entitlement":"vip"},
         {"id":"swift-101","amount":990,"description":"Swift 入门课","apple_product_id":"com.example.courses.swift101"},
         {"id":"coins-100","amount":600,"description":"100 币","type":"consumable","apple_product_id":"coins.100"},
         {"id":"vip-old","amount":2500,"description":"旧月卡","active":false,"type":"membership","period":"P1M","apple_product_id":"vip.old"}
        ]}
        """#

    static func withRig(serverAPI: Bool = true, environment: [String: String] = [:],
                        _ body: (IAPRig) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("offers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("catalog.json")
        try Data(catalog.utf8).write(to: file)
        var variables = environment
        variables["GATEWAY_CATALOG"] = file.path
        let rig = try await IAPRig.start(.inProcess, serverAPI: serverAPI, environment: variables)
        do {
            try await body(rig)
            await rig.stop()
        } catch {
            await rig.stop()
            throw error
        }
    }

    /// The JWS's header, claims and signature, with whether the signature verifies with `key`.
    struct DecodedJWS {
        var header: JSONValue
        var claims: JSONValue
        var verifies: Bool

        init(_ jws: String, key: ES256PublicKey) throws {
            let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
            try #require(parts.count == 3)
            header = try JSONValue.parse(try #require(Base64.decode(String(parts[0]), .urlUnpadded)))
            claims = try JSONValue.parse(try #require(Base64.decode(String(parts[1]), .urlUnpadded)))
            let signature = try #require(Base64.decode(String(parts[2]), .urlUnpadded))
            verifies = signature.count == 64 && key.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8))
        }
    }

    static func signature(_ rig: IAPRig, _ body: String, token: String?) async throws -> GatewayRig.Response {
        try await rig.gateway.send(.post, "/v1/iap/offers/signature", token: token, body: body)
    }

    @Test("An app token gets Apple's v2 promotional offer JWS for the product's App Store id, signed with the In-App Purchase key")
    func anAppTokenGetsTheSignedOffer() async throws {
        try await Self.withRig { rig in
            let configuration = rig.appStore.configuration
            let key = try #require(rig.appStore.generatedAPIKey).publicKey
            let before = Int(rig.gateway.clock.now().timeIntervalSince1970.rounded(.down))
            let answer = try await Self.signature(
                rig, #"{"product_id":"vip-month-ios","offer_identifier":"winback_50.pct-1","transaction_id":"2000000000000042"}"#,
                token: rig.token("offer-user"))
            #expect(answer.status == 200)
            #expect(answer.json.keys.sorted() == ["signature"])
            let decoded = try DecodedJWS(try #require(answer.json["signature"] as? String), key: key)
            #expect(decoded.verifies)
            #expect(decoded.header == ["alg": "ES256", "kid": .string(configuration.keyID), "typ": "JWT"])
            let claims = try #require(decoded.claims.objectValue)
            #expect(claims.keys.sorted() == ["aud", "bid", "iat", "iss", "nonce", "offerIdentifier", "productId", "transactionId"])
            #expect(claims["iss"] == .string(configuration.issuerID) && claims["bid"] == .string(configuration.bundleID))
            #expect(claims["aud"] == "promotional-offer")
            // Apple's product id from the catalog, never the catalog's own id.
            #expect(claims["productId"] == "vip.monthly" && claims["offerIdentifier"] == "winback_50.pct-1")
            #expect(claims["transactionId"] == "2000000000000042")
            let issuedAt = try #require(claims["iat"]?.intValue)
            #expect(issuedAt >= before && issuedAt <= Int(rig.gateway.clock.now().timeIntervalSince1970) + 1)
            let nonce = try #require(claims["nonce"]?.stringValue)
            #expect(UUID(uuidString: nonce) != nil && nonce == nonce.lowercased())

            // Without a transaction id the claim is absent (not null), and every nonce is new.
            let bare = try await Self.signature(rig, #"{"product_id":"vip-month-ios","offer_identifier":"winback"}"#,
                                                token: rig.token("offer-user"))
            #expect(bare.status == 200)
            let second = try DecodedJWS(try #require(bare.json["signature"] as? String), key: key)
            #expect(second.verifies && second.claims["transactionId"] == nil)
            #expect(second.claims["nonce"] != nil && second.claims["nonce"] != claims["nonce"])
        }
    }

    @Test("A client token names the user; an app token may not, and a client token without user_id is refused")
    func aClientTokenNamesTheUser() async throws {
        try await Self.withRig { rig in
            let key = try #require(rig.appStore.generatedAPIKey).publicKey
            let proxied = try await Self.signature(
                rig, #"{"product_id":"vip-month-ios","offer_identifier":"winback","user_id":"backend-user"}"#, token: GatewayRig.client)
            #expect(proxied.status == 200)
            #expect(try DecodedJWS(try #require(proxied.json["signature"] as? String), key: key).verifies)
            let missing = try await Self.signature(rig, #"{"product_id":"vip-month-ios","offer_identifier":"winback"}"#,
                                                   token: GatewayRig.client)
            #expect(missing.status == 400 && missing.error?["field"] as? String == "user_id")
            let named = try await Self.signature(
                rig, #"{"product_id":"vip-month-ios","offer_identifier":"winback","user_id":"someone-else"}"#, token: rig.token("u1"))
            #expect(named.status == 400 && named.error?["code"] as? String == "field_not_allowed")
        }
    }

    @Test("Unknown, retired and non-subscription products, bad offer identifiers and transaction ids, and other tokens are refused, and nothing but the support token's audit entry is written")
    func refusalsAreClearAndWriteNothing() async throws {
        try await Self.withRig { rig in
            let before = await TableRowCounts.of(rig.gateway.database)
            let user = rig.token("offer-refused")
            let cases: [(String, Int, String, String?)] = [
                (#"{"product_id":"nope","offer_identifier":"o"}"#, 400, "unknown_product", "product_id"),
                (#"{"product_id":"vip-old","offer_identifier":"o"}"#, 400, "unknown_product", "product_id"),
                (#"{"product_id":"vip-month","offer_identifier":"o"}"#, 400, "not_a_subscription", "product_id"),
                (#"{"product_id":"swift-101","offer_identifier":"o"}"#, 400, "not_a_subscription", "product_id"),
                (#"{"product_id":"coins-100","offer_identifier":"o"}"#, 400, "not_a_subscription", "product_id"),
                (#"{"offer_identifier":"o"}"#, 400, "invalid_request", "product_id"),
                (#"{"product_id":"vip-month-ios"}"#, 400, "invalid_request", "offer_identifier"),
                (#"{"product_id":"vip-month-ios","offer_identifier":""}"#, 400, "invalid_request", "offer_identifier"),
                (#"{"product_id":"vip-month-ios","offer_identifier":"a b"}"#, 400, "invalid_request", "offer_identifier"),
                (#"{"product_id":"vip-month-ios","offer_identifier":"a\"b"}"#, 400, "invalid_request", "offer_identifier"),
                (#"{"product_id":"vip-month-ios","offer_identifier":"优惠"}"#, 400, "invalid_request", "offer_identifier"),
                (#"{"product_id":"vip-month-ios","offer_identifier":"\#(String(repeating: "o", count: 101))"}"#, 400,
                 "invalid_request", "offer_identifier"),
                (#"{"product_id":"vip-month-ios","offer_identifier":7}"#, 400, "invalid_request", "offer_identifier"),
                (#"{"product_id":"vip-month-ios","offer_identifier":"o","transaction_id":"12a"}"#, 400, "invalid_request",
                 "transaction_id"),
                (#"{"product_id":"vip-month-ios","offer_identifier":"o","transaction_id":""}"#, 400, "invalid_request",
                 "transaction_id"),
                (#"{"product_id":"vip-month-ios","offer_identifier":"o","transaction_id":"\#(String(repeating: "1", count: 33))"}"#,
                 400, "invalid_request", "transaction_id"),
                (#"{"product_id":"vip-month-ios","offer_identifier":"o","transaction_id":2000000000000042}"#, 400,
                 "invalid_request", "transaction_id"),
                (#"{"product_id":"vip-month-ios","offer_identifier":"o","nonce":"mine"}"#, 400, "invalid_request", "nonce"),
                (#"not json"#, 400, "invalid_request", nil),
            ]
            for (body, status, code, field) in cases {
                let answer = try await Self.signature(rig, body, token: user)
                #expect(answer.status == status, "\(body)")
                #expect(answer.error?["code"] as? String == code, "\(body)")
                #expect(answer.error?["field"] as? String == field, "\(body)")
                #expect(answer.json["signature"] == nil, "\(body)")
            }
            let good = #"{"product_id":"vip-month-ios","offer_identifier":"o","user_id":"u"}"#
            let support = try await Self.signature(rig, good, token: GatewayRig.support)
            #expect(support.status == 403 && support.json["signature"] == nil)
            let anonymous = try await Self.signature(rig, good, token: nil)
            #expect(anonymous.status == 401 && anonymous.error?["code"] as? String == "unauthorized")
            #expect(anonymous.json["signature"] == nil)
            let forged = try await Self.signature(rig, good, token: "not-a-token")
            #expect(forged.status == 401)
            // Only the support token's refused call is on record (docs/api.md, support calls are audited).
            var expected = before
            expected["audit_log", default: 0] += 1
            #expect(await TableRowCounts.of(rig.gateway.database) == expected)
        }
    }

    @Test("Without the In-App Purchase key the route answers 503 appstore_key_missing for a subscription, and still 400 for a course")
    func withoutTheKeyTheRouteSays503() async throws {
        try await Self.withRig(serverAPI: false) { rig in
            let missing = try await Self.signature(rig, #"{"product_id":"vip-month-ios","offer_identifier":"o"}"#,
                                                   token: rig.token("u1"))
            #expect(missing.status == 503 && missing.error?["code"] as? String == "appstore_key_missing")
            #expect(missing.json["signature"] == nil)
            let course = try await Self.signature(rig, #"{"product_id":"swift-101","offer_identifier":"o"}"#, token: rig.token("u1"))
            #expect(course.status == 400 && course.error?["code"] as? String == "not_a_subscription")
        }
    }

    @Test("Signatures count against the app user's create rate, shared with creates; a client token is not limited")
    func signaturesCountWithCreates() async throws {
        try await Self.withRig(environment: ["GATEWAY_APP_CREATE_RATE": "3"]) { rig in
            let body = #"{"product_id":"vip-month-ios","offer_identifier":"o"}"#
            _ = try await rig.createOrder("limited", product: "swift-101")
            // Invalid requests are not counted.
            for _ in 0..<3 {
                let course = try await Self.signature(rig, #"{"product_id":"swift-101","offer_identifier":"o"}"#,
                                                      token: rig.token("limited"))
                #expect(course.status == 400)
            }
            for _ in 0..<2 {
                #expect(try await Self.signature(rig, body, token: rig.token("limited")).status == 200)
            }
            let limited = try await Self.signature(rig, body, token: rig.token("limited"))
            #expect(limited.status == 429 && limited.error?["code"] as? String == "rate_limited")
            #expect((limited.error?["retry_after"] as? Int ?? 0) >= 1 && limited.json["signature"] == nil)
            // Another user has a rate of their own.
            #expect(try await Self.signature(rig, body, token: rig.token("other")).status == 200)
            let proxied = #"{"product_id":"vip-month-ios","offer_identifier":"o","user_id":"limited"}"#
            for _ in 0..<4 {
                #expect(try await Self.signature(rig, proxied, token: GatewayRig.client).status == 200)
            }
        }
    }

    @Test("The route is 404 while App Store purchases are off")
    func theRouteIs404WhileAppStorePurchasesAreOff() async throws {
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        let answer = try await rig.send(.post, "/v1/iap/offers/signature", body: #"{"product_id":"vip-month","offer_identifier":"o","user_id":"u"}"#)
        #expect(answer.status == 404 && answer.error?["code"] as? String == "not_found")
    }
}

/// The gateway's promotional offer signatures checked by outside references, in
/// scripts/appstore/offer_signature_agreement.py: PyJWT and `cryptography` verifying them with the
/// key's public half, and Apple's app-store-server-library's PromotionalOfferV2SignatureCreator
/// making the same header and claims from the same key and offer.
///
/// The Python packages come from scripts/test-tools (run by scripts/setup), pinned, in
/// .build/test-tools-venv; without them the test fails and says to run the setup.
struct OfferSignatureAgreementTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let python = root.appendingPathComponent(".build/test-tools-venv/bin/python")
    static var installed: Bool {
        let marker = root.appendingPathComponent(".build/test-tools-venv/test-tools-requirements.txt")
        return FileManager.default.isExecutableFile(atPath: python.path)
            && ((try? String(contentsOf: marker, encoding: .utf8))?.contains("app-store-server-library==") ?? false)
    }

    @Test("Apple's library, PyJWT and cryptography agree with the gateway's promotional offer signatures",
          .timeLimit(.minutes(5)))
    func applesLibraryAgreesWithTheGatewaysSignatures() async throws {
        try #require(Self.installed, "Apple's app-store-server-library is not in .build/test-tools-venv: run scripts/setup")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("offer-agreement-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var input: JSONValue = [:]
        try await OfferSignatureAPITests.withRig { rig in
            let configuration = rig.appStore.configuration
            let keyFile = directory.appendingPathComponent("AuthKey.p8")
            try Data(try #require(rig.appStore.generatedAPIKey).pkcs8PEM.utf8).write(to: keyFile)
            var signatures: [JSONValue] = []
            for (offer, transaction) in [("winback_50", "2000000000000042"), ("loyal.3-months", nil), ("winback_50", nil)] {
                var body = #"{"product_id":"vip-month-ios","offer_identifier":"\#(offer)""#
                if let transaction { body += #","transaction_id":"\#(transaction)""# }
                let answer = try await OfferSignatureAPITests.signature(rig, body + "}", token: rig.token("agreement-user"))
                #expect(answer.status == 200)
                signatures.append(["jws": .string(try #require(answer.json["signature"] as? String)), "product_id": "vip.monthly",
                                   "offer_identifier": .string(offer), "transaction_id": transaction.map(JSONValue.string) ?? .null])
            }
            input = ["key_p8": .string(keyFile.path), "key_id": .string(configuration.keyID),
                     "issuer_id": .string(configuration.issuerID), "bundle_id": .string(configuration.bundleID),
                     "signatures": .array(signatures)]
        }
        let file = directory.appendingPathComponent("input.json")
        try Data(input.bytes()).write(to: file)
        let report = try await Self.runScript(input: file, directory: directory)
        let checks = try #require(report["checks"]?.arrayValue)
        #expect(checks.count == 16)
        for check in checks {
            #expect(check["ok"] == true, "\(check["name"]?.stringValue ?? "?"): \(check["detail"]?.stringValue ?? "")")
        }
    }

    /// Runs the script with the test tools' Python, off the cooperative pool, bounded in time.
    static func runScript(input: URL, directory: URL) async throws -> JSONValue {
        let output = directory.appendingPathComponent("report.json")
        let errors = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        // A ChildProcess (posix_spawn): Foundation's Process.run() can crash the test process on Linux.
        let child = try ChildProcess(python.path, [root.appendingPathComponent("scripts/appstore/offer_signature_agreement.py").path,
                                                   input.path],
                                     environment: environment, output: output.path, errors: errors.path)
        let status = await child.wait(timeout: .seconds(120))
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        guard let report = try? JSONValue.parse(Array(text.utf8)) else {
            let stderr = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw ScriptFailure(description: "offer_signature_agreement.py printed no report (exit \(status)): \(stderr.suffix(2000))")
        }
        return report
    }

    struct ScriptFailure: Error, CustomStringConvertible { let description: String }
}
