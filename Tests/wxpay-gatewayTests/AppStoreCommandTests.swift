// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import ChildProcessSupport
import Crypto
import Foundation
import HTTP
import HTTPClientTestSupport
import JSON
import Testing

/// `wxpay-gateway appstore verify|token|backfill` and `simulate-appstore`, run as the built binary.
/// Serialized: Foundation's `Process.run` has crashed (in its memmove) when many processes were
/// launched at once, so this suite launches one at a time.
@Suite(.serialized)
struct AppStoreCommandTests {
    /// PATH and HOME only, taken once: the child gets a fixed environment.
    static let environment: [String: String] = {
        let current = ProcessInfo.processInfo.environment
        return ["PATH": current["PATH"] ?? "/usr/bin:/bin", "HOME": current["HOME"] ?? "/tmp"]
    }()

    static let pki = SimulatorPKI()
    static let bundleID = "com.example.courses"

    /// Runs the binary with `input` on standard input, bounded in time. It waits by polling with
    /// `Task.sleep`, never by blocking a thread: the suite's cooperative pool has one thread per
    /// core, and a blocked one stalls every other test's timers.
    static func run(_ arguments: [String], input: String = "", environment extra: [String: String] = [:]) async throws
        -> (status: Int32, stdout: String, stderr: String)
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("appstore-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = ["stdin", "stdout", "stderr"].map { directory.appendingPathComponent($0) }
        try Data(input.utf8).write(to: files[0])
        for file in files.dropFirst() { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        // A ChildProcess (posix_spawn): Foundation's Process.run() can crash the test process on Linux.
        let child = try ChildProcess(CommandProcess.executable.path, arguments, environment: Self.environment.merging(extra) { $1 },
                                     input: .file(files[0].path), output: files[1].path, errors: files[2].path)
        let status = await child.wait(timeout: .seconds(120))
        func read(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }
        return (status, read(files[1]), read(files[2]))
    }

    /// The test chain's root in a temporary PEM file, removed after `body`.
    static func withRootFile(_ body: (String) async throws -> Void) async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("appstore-root-\(UUID().uuidString).pem")
        try Data(pki.root.pem.utf8).write(to: url)
        do {
            try await body(url.path)
        } catch {
            try? FileManager.default.removeItem(at: url)
            throw error
        }
        try? FileManager.default.removeItem(at: url)
    }

    static func transaction(_ environment: AppStoreEnvironment = .sandbox) -> AppStoreTransaction {
        let now = Date(timeIntervalSince1970: 1_764_460_800)
        return AppStoreTransaction(
            transactionID: "2000000500000001", originalTransactionID: "2000000500000001", bundleID: bundleID,
            productID: "course.swift.basics", type: .nonConsumable, appAccountToken: UUID(), environment: environment,
            purchaseDate: now, signedDate: now, price: 68000, currency: "CNY")
    }

    @Test func verifyPrintsTheVerifiedTransactionAndItsEnvironment() async throws {
        try await Self.withRootFile { root in
            let jws = Self.pki.sign(payload: Self.transaction().payload)
            let run = try await Self.run(["appstore", "verify", "--root-ca", root, "--allow-untrusted-root", "--bundle-id", Self.bundleID],
                                   input: jws + "\n")
            #expect(run.status == 0, "\(run.stderr)")
            let output = try JSONValue.parse(Array(run.stdout.utf8))
            #expect(output["kind"] == "transaction")
            #expect(output["environment"] == "Sandbox")
            #expect(output["payload"]?["transactionId"] == "2000000500000001")
        }
    }

    @Test func verifyDecodesANotificationsInnerTransactionToo() async throws {
        try await Self.withRootFile { root in
            let notification = AppStoreNotification(
                notificationType: .refund, notificationUUID: "0b7c8a40-2d4b-4d0e-9f1c-6c2a5b3e8d11",
                signedDate: Date(timeIntervalSince1970: 1_764_460_800), bundleID: Self.bundleID, appAppleID: 1_234_567_890,
                environment: .production)
            let jws = Self.pki.sign(payload: notification.payload(
                signedTransactionInfo: Self.pki.sign(payload: Self.transaction(.production).payload), signedRenewalInfo: nil))
            let run = try await Self.run(["appstore", "verify", "--root-ca", root, "--allow-untrusted-root", "--bundle-id", Self.bundleID,
                                    "--environment", "Production", "--app-apple-id", "1234567890"], input: jws)
            #expect(run.status == 0, "\(run.stderr)")
            let output = try JSONValue.parse(Array(run.stdout.utf8))
            #expect(output["kind"] == "notification")
            #expect(output["payload"]?["notificationType"] == "REFUND")
            #expect(output["transaction"]?["productId"] == "course.swift.basics")
        }
    }

    @Test func aRefusedTokenExitsOneNamingTheRule() async throws {
        try await Self.withRootFile { root in
            let base = ["appstore", "verify", "--root-ca", root, "--allow-untrusted-root", "--bundle-id", Self.bundleID]
            let jws = Self.pki.sign(payload: Self.transaction().payload)
            let tampered = String(jws.dropLast(2)) + (jws.hasSuffix("AA") ? "BA" : "AA")
            let forged = try await Self.run(base, input: tampered)
            #expect(forged.status == 1)
            #expect(forged.stderr.contains("invalid_signature"))
            #expect(forged.stdout.isEmpty)
            let wrongEnvironment = try await Self.run(base + ["--environment", "Sandbox"],
                                                input: Self.pki.sign(payload: Self.transaction(.production).payload))
            #expect(wrongEnvironment.status == 1 && wrongEnvironment.stderr.contains("environment_mismatch"))
            let other = SimulatorPKI(.init(name: "Other"))
            let foreign = try await Self.run(base, input: other.sign(payload: Self.transaction().payload))
            #expect(foreign.status == 1 && foreign.stderr.contains("invalid_chain"))
            let junk = try await Self.run(base, input: String(repeating: "A", count: 70_000))
            #expect(junk.status == 1 && junk.stderr.contains("malformed"))
        }
    }

    @Test func usageAndConfigurationErrorsExitTwo() async throws {
        try await Self.withRootFile { root in
            let jws = Self.pki.sign(payload: Self.transaction().payload)
            // A root that is not Apple's, without the explicit flag.
            let untrusted = try await Self.run(["appstore", "verify", "--root-ca", root, "--bundle-id", Self.bundleID], input: jws)
            #expect(untrusted.status == 2 && untrusted.stderr.contains("Apple Root CA - G3"))
            let production = try await Self.run(["appstore", "verify", "--root-ca", root, "--allow-untrusted-root", "--bundle-id",
                                           Self.bundleID, "--environment", "Production"], input: jws)
            #expect(production.status == 2)
            #expect(try await Self.run(["appstore", "verify", "--bundle-id", Self.bundleID]).status == 2)
            #expect(try await Self.run(["appstore", "verify", "--root-ca", "/nonexistent", "--bundle-id", "b"]).status == 2)
            #expect(try await Self.run(["appstore", "frobnicate"]).status == 2)
        }
    }

    @Test func tokenPrintsAnES256JWTForTheKey() async throws {
        let key = ES256PrivateKey.generate()
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey-\(UUID().uuidString).p8")
        try Data(key.pkcs8PEM.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let run = try await Self.run(["appstore", "token", "--key-file", url.path, "--key-id", "2X9R4HXF34", "--issuer",
                                "57246542-96fe-1a63-e053-0824d011072a", "--bundle-id", Self.bundleID])
        #expect(run.status == 0, "\(run.stderr)")
        let token = run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let parts = token.split(separator: ".").map(String.init)
        try #require(parts.count == 3)
        #expect(key.publicKey.isValidSignature(Base64.decode(parts[2], .urlUnpadded)!, for: Array((parts[0] + "." + parts[1]).utf8)))
        let claims = try JSONValue.parse(Base64.decode(parts[1], .urlUnpadded)!)
        #expect(claims["aud"] == "appstoreconnect-v1" && claims["bid"] == .string(Self.bundleID))
        #expect(try JSONValue.parse(Base64.decode(parts[0], .urlUnpadded)!)["kid"] == "2X9R4HXF34")
        #expect(try await Self.run(["appstore", "token", "--key-file", "/nonexistent", "--key-id", "K", "--issuer", "I",
                              "--bundle-id", "B"]).status == 2)
    }

    /// `simulate-appstore` on a free port, its root certificate and Server API key written to a
    /// temporary folder: `body` gets its base URL, the two files, the folder and an HTTP client.
    /// The simulator must exit 0 when stopped.
    static func withSimulator(_ options: [String] = [],
                              _ body: (_ base: String, _ rootFile: String, _ keyFile: String, _ directory: URL, HTTPClient) async throws -> Void)
        async throws
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("simulate-appstore-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let rootFile = directory.appendingPathComponent("root.pem").path
        let keyFile = directory.appendingPathComponent("AuthKey.p8").path
        let child = try CommandProcess(["simulate-appstore", "--port", "0", "--root-out", rootFile, "--api-key-out", keyFile] + options,
                                       environment: [:])
        let http = try HTTPClient()
        do {
            let line = try #require(await child.line(startingWith: "listening "))
            try await body(String(line.dropFirst("listening ".count)), rootFile, keyFile, directory, http)
        } catch {
            Issue.record("simulate-appstore: \(error) \(child.stderr)")
        }
        await http.shutdown()
        #expect(await child.stop() == 0)
    }

    @Test func simulateAppStoreNumbersTransactionsFromTheFirstOneAskedFor() async throws {
        try await Self.withSimulator(["--first-transaction", "5000"]) { base, _, _, _, http in
            let bought = try await http.send(.post, base + "/appstore-simulator/purchases",
                                             body: #"{"user":"alice","productId":"course.swift.basics"}"#)
            #expect(bought.json["transactionId"] as? String == "2000000100005000")
        }
        try await Self.withSimulator(["--first-transaction", "now"]) { base, _, _, _, http in
            let bought = try await http.send(.post, base + "/appstore-simulator/purchases",
                                             body: #"{"user":"alice","productId":"course.swift.basics"}"#)
            // Milliseconds since 2020, as the demo's embedded App Store counts: past any earlier run's.
            let id = try #require((bought.json["transactionId"] as? String).flatMap(UInt64.init))
            #expect(id > 2_000_000_100_000_000 + 200_000_000_000 && id < 3_000_000_000_000_000, "\(id)")
        }
        // Beyond sixteen digits, zero, or not a number: refused as a usage error.
        for value in ["1000000000000", "0", "soon"] {
            #expect(try await Self.run(["simulate-appstore", "--first-transaction", value]).status == 64)
        }
    }

    @Test func simulateAppStoreServesItsAPIAndWritesTheRootToTrust() async throws {
        try await Self.withSimulator { base, rootFile, keyFile, _, http in
            let bought = try await http.send(.post, base + "/appstore-simulator/purchases",
                                             body: #"{"user":"alice","productId":"course.swift.basics","environment":"Sandbox"}"#)
            #expect(bought.status == 200)
            let jws = try #require(bought.json["signedTransactionInfo"] as? String)
            let verified = try await Self.run(["appstore", "verify", "--root-ca", rootFile, "--allow-untrusted-root", "--bundle-id",
                                         Self.bundleID], input: jws)
            #expect(verified.status == 0, "\(verified.stderr)")
            // The written key makes tokens the simulator's Server API accepts.
            let token = try await Self.run(["appstore", "token", "--key-file", keyFile, "--key-id", "SIMKEY0001", "--issuer",
                                      "57246542-96fe-1a63-e053-0824d011072a", "--bundle-id", Self.bundleID])
            let id = try #require(bought.json["transactionId"] as? String)
            let info = try await http.send(.get, base + "/sandbox/inApps/v1/transactions/\(id)",
                                           token: token.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(info.status == 200)
            let refused = try await http.send(.get, base + "/sandbox/inApps/v1/transactions/\(id)", token: "not.a.token")
            #expect(refused.status == 401)
        }
    }

    /// `appstore backfill --since`: a purchase whose notification never arrived (nobody listens at
    /// the notification URL) and that nobody reported is read from Get Notification History and
    /// recorded; a second run finds it handled; the progress is the gateway's own (its database).
    @Test func backfillReadsTheNotificationHistoryOnceAndKeepsWhatItRecovered() async throws {
        let nobody = "http://127.0.0.1:\(closedLoopbackPort())/appstore/notifications"
        try await Self.withSimulator(["--notification-url", nobody]) { base, rootFile, keyFile, directory, http in
            let bought = try await http.send(.post, base + "/appstore-simulator/purchases",
                                             body: #"{"user":"alice","productId":"course.swift.basics"}"#)
            #expect(bought.status == 200)
            let environment = [
                "WXPAY_APP_ID": "wxd930ea5d5a258f4f", "WXPAY_MCH_ID": "10000100", "WXPAY_API_KEY": TestMerchant.apiKey,
                "WXPAY_NOTIFY_URL": "https://pay.example/wechat/notify", "GATEWAY_CLIENT_TOKENS": "backfill-test-client-token-0001",
                "GATEWAY_DATABASE": "sqlite:" + directory.appendingPathComponent("gateway.sqlite").path,
                "APPSTORE_BUNDLE_ID": Self.bundleID, "APPSTORE_APP_APPLE_ID": "1234567890", "APPSTORE_ROOT_CA_FILE": rootFile,
                "APPSTORE_ALLOW_UNTRUSTED_ROOT": "1", "APPSTORE_ISSUER_ID": "57246542-96fe-1a63-e053-0824d011072a",
                "APPSTORE_KEY_ID": "SIMKEY0001", "APPSTORE_PRIVATE_KEY_FILE": keyFile, "APPSTORE_API_BASE": base,
                "APPSTORE_SANDBOX_API_BASE": base + "/sandbox",
                // The simulator's root, acknowledged by its fingerprint as production requires.
                "APPSTORE_UNTRUSTED_ROOT_SHA256": FileManager.default.contents(atPath: rootFile)
                    .flatMap { Certificate(pemOrDER: Array($0)) }?.sha256Fingerprint ?? "",
                // No receipt is read here: running the key without the receipt root, acknowledged.
                "APPSTORE_RECEIPT_VERIFICATION": "off",
            ]
            let since = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-3600))
            // A mistyped database path is refused (74), and nothing is created there.
            var mistyped = environment
            mistyped["GATEWAY_DATABASE"] = "sqlite:" + directory.appendingPathComponent("no-such-dir/x.sqlite").path
            let missing = try await Self.run(["appstore", "backfill", "--since", since], environment: mistyped)
            #expect(missing.status == 74 && missing.stderr.contains("no database at"), "\(missing.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("no-such-dir").path))
            // The database a gateway made (an empty file is an empty SQLite database; it is migrated on open).
            #expect(FileManager.default.createFile(atPath: directory.appendingPathComponent("gateway.sqlite").path, contents: nil))
            // A start Apple no longer keeps, or one in the future, is refused, not silently clamped.
            for (start, words) in [("2020-01-01", "more than 180 days ago"), ("2999-01-01", "in the future")] {
                let refused = try await Self.run(["appstore", "backfill", "--since", start], environment: environment)
                #expect(refused.status == 64 && refused.stderr.contains(words), "\(start): \(refused.stderr)")
            }
            let first = try await Self.run(["appstore", "backfill", "--since", since], environment: environment)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stdout.contains("environments read: Production"), "\(first.stdout)")
            #expect(first.stdout.contains("notifications 1: recovered 1, handled before 0"), "\(first.stdout)")
            let second = try await Self.run(["appstore", "backfill", "--since", since], environment: environment)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.stdout.contains("notifications 1: recovered 0, handled before 1"), "\(second.stdout)")
            let usage = try await Self.run(["appstore", "backfill", "--since", "last week"], environment: environment)
            #expect(usage.status == 64 && usage.stderr.contains("usage: wxpay-gateway appstore backfill --since DATE"))
            var unconfigured = environment
            unconfigured["APPSTORE_PRIVATE_KEY_FILE"] = nil
            unconfigured["APPSTORE_KEY_ID"] = nil
            unconfigured["APPSTORE_ISSUER_ID"] = nil
            unconfigured["APPSTORE_RECEIPT_VERIFICATION"] = nil
            let refused = try await Self.run(["appstore", "backfill", "--since", since], environment: unconfigured)
            #expect(refused.status == 2 && refused.stderr.contains("App Store Server API"), "\(refused.stderr)")
        }
    }
}
