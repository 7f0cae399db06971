// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import ChildProcessSupport
import Crypto
import Foundation
import JSON
import Testing

/// The Server API's bearer token: its claims read by Foundation, its signature checked by
/// OpenSSL's command line, and the simulator refusing every token Apple refuses.
struct ServerAPITokenTests {
    static let issuedAt = Date(timeIntervalSince1970: 1_764_460_800)

    static func parts(_ token: String) throws -> (header: [String: Any], claims: [String: Any], signingInput: String, signature: [UInt8]) {
        let segments = token.split(separator: ".").map(String.init)
        try #require(segments.count == 3)
        func decode(_ text: String) throws -> Data {
            var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while base64.count % 4 != 0 { base64 += "=" }
            return try #require(Data(base64Encoded: base64))
        }
        let header = try #require(try JSONSerialization.jsonObject(with: try decode(segments[0])) as? [String: Any])
        let claims = try #require(try JSONSerialization.jsonObject(with: try decode(segments[1])) as? [String: Any])
        return (header, claims, segments[0] + "." + segments[1], Array(try decode(segments[2])))
    }

    @Test func theTokenCarriesApplesClaimsAndExpiresFiveMinutesAfterIssue() throws {
        let key = ES256PrivateKey.generate()
        let credentials = ServerAPICredentials(key: key, keyID: "2X9R4HXF34", issuerID: "57246542-96fe-1a63-e053-0824d011072a",
                                               bundleID: "com.example.courses")
        let (header, claims, _, signature) = try Self.parts(credentials.token(issuedAt: Self.issuedAt.addingTimeInterval(0.9)))
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == "2X9R4HXF34")
        #expect(header["typ"] as? String == "JWT")
        #expect(claims["iss"] as? String == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
        #expect(claims["bid"] as? String == "com.example.courses")
        #expect((claims["iat"] as? NSNumber)?.int64Value == 1_764_460_800)
        #expect((claims["exp"] as? NSNumber)?.int64Value == Int64(1_764_461_100))  // iat + 300
        #expect(signature.count == 64)  // raw r‖s, not DER
    }

    @Test func opensslsCommandLineVerifiesTheSignature() async throws {
        let key = ES256PrivateKey.generate()
        let credentials = ServerAPICredentials(key: key, keyID: "K", issuerID: "I", bundleID: "B")
        let token = credentials.token(issuedAt: Self.issuedAt)
        let (_, _, signingInput, signature) = try Self.parts(token)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("es256-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let publicKey = directory.appendingPathComponent("public.pem")
        let input = directory.appendingPathComponent("input")
        let der = directory.appendingPathComponent("signature.der")
        try Data(key.publicKeyPEM.utf8).write(to: publicKey)
        try Data(signingInput.utf8).write(to: input)
        // The test's own DER encoding of r‖s, independent of the module's converter.
        try Data(Self.derSignature(signature)).write(to: der)
        #expect(try await Self.openssl(["dgst", "-sha256", "-verify", publicKey.path, "-signature", der.path, input.path]) == 0)
        // And a changed claim fails.
        try Data((signingInput + "x").utf8).write(to: input)
        #expect(try await Self.openssl(["dgst", "-sha256", "-verify", publicKey.path, "-signature", der.path, input.path]) != 0)
        // The key is a PKCS#8 .p8 openssl reads back as P-256.
        let p8 = directory.appendingPathComponent("AuthKey.p8")
        try Data(key.pkcs8PEM.utf8).write(to: p8)
        #expect(key.pkcs8PEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try await Self.openssl(["pkey", "-in", p8.path, "-noout"]) == 0)
        #expect(try ES256PrivateKey(pem: key.pkcs8PEM).publicKeyPEM == key.publicKeyPEM)
    }

    /// SEQUENCE { INTEGER r, INTEGER s } with minimal, positive integers.
    static func derSignature(_ raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }

    /// Polls instead of blocking a thread of the suite's small cooperative pool.
    static func openssl(_ arguments: [String]) async throws -> Int32 {
        // A ChildProcess (posix_spawn): Foundation's Process.run() can crash the test process on Linux.
        try await ChildProcess.run("/usr/bin/env", ["openssl"] + arguments, environment: ProcessInfo.processInfo.environment,
                                   timeout: .seconds(60)).status
    }

    // MARK: - The simulator's checks

    /// A token with the given header and claims, signed by the simulator's generated key.
    static func token(_ harness: AppStoreHarness, header: JSONValue? = nil, claims: [String: JSONValue] = [:],
                      removing: [String] = [], key: ES256PrivateKey? = nil) -> String {
        let now = Int(Date().timeIntervalSince1970)
        var all: [String: JSONValue] = [
            "iss": .string(harness.simulator.configuration.issuerID), "iat": .int(now), "exp": .int(now + 300),
            "aud": "appstoreconnect-v1", "bid": .string(AppStoreHarness.bundleID),
        ]
        for (name, value) in claims { all[name] = value }
        for name in removing { all[name] = nil }
        let header = header ?? ["alg": "ES256", "kid": .string(harness.simulator.configuration.keyID), "typ": "JWT"]
        return JWSSigner.sign(headerBytes: header.bytes(), payloadBytes: JSONValue.object(all).bytes(),
                              with: key ?? harness.simulator.generatedAPIKey!)
    }

    static func status(_ harness: AppStoreHarness, _ token: String, id: String) -> Int {
        harness.simulator.handle(AppStoreSimulatorRequest(
            method: "GET", path: "/inApps/v1/transactions/\(id)", headers: ["Authorization": "Bearer \(token)"])).status
    }

    @Test func theSimulatorRefusesWhatAppleRefuses() throws {
        let harness = try AppStoreHarness()
        let id = try harness.buy().transactionID
        let now = Int(Date().timeIntervalSince1970)
        #expect(Self.status(harness, Self.token(harness), id: id) == 200)
        // Apple's own Python library sends no iat at all.
        #expect(Self.status(harness, Self.token(harness, removing: ["iat"]), id: id) == 200)
        let refused: [(String, String)] = [
            ("aud", Self.token(harness, claims: ["aud": "appstoreconnect-v2"])),
            ("bid", Self.token(harness, claims: ["bid": "com.example.other"])),
            ("iss", Self.token(harness, claims: ["iss": "someone"])),
            ("exp_too_far", Self.token(harness, claims: ["exp": .int(now + 3700)])),
            ("exp_too_far", Self.token(harness, claims: ["iat": .int(now - 10), "exp": .int(now + 3595)])),
            ("expired", Self.token(harness, claims: ["exp": .int(now - 1)])),
            ("exp_missing", Self.token(harness, removing: ["exp"])),
            ("iat_in_future", Self.token(harness, claims: ["iat": .int(now + 30), "exp": .int(now + 330)])),
            ("kid", Self.token(harness, header: ["alg": "ES256", "kid": "OTHERKEY00", "typ": "JWT"])),
            ("alg", Self.token(harness, header: ["alg": "none", "kid": .string(harness.simulator.configuration.keyID)])),
            ("signature", Self.token(harness, key: ES256PrivateKey.generate())),
            ("malformed", "not.a.jwt"),
        ]
        for (reason, token) in refused {
            #expect(Self.status(harness, token, id: id) == 401, "\(reason)")
        }
        let counters = harness.simulator.counters
        for (reason, _) in refused {
            #expect((counters["unauthorized \(reason)"] ?? 0) >= 1, "\(reason)")
        }
        let missing = harness.simulator.handle(AppStoreSimulatorRequest(method: "GET", path: "/inApps/v1/transactions/\(id)"))
        #expect(missing.status == 401)
    }
}
