// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import HTTP
import HTTPClientTestSupport
import Testing

/// `wxpay-gateway doctor` against the simulators run as processes (WeChat over HTTPS demanding
/// the merchant certificate, the App Store sending its test notification to a receiver of this
/// test), first as configured right, then with each fault planted: every fault fails its own line
/// and only its own, and the exit status says so.
@Suite(.serialized)
struct DoctorCommandTests {
    /// What receives the App Store's notifications: answers 200, like a gateway.
    static func receiver() async throws -> (HTTPServer, String) {
        var router = HTTPRouter()
        router.addImmediate(.post, "/appstore/notifications") { _ in .json(#"{"status":"ok"}"#) }
        let server = HTTPServer(router: router)
        let address = try await server.start()
        return (server, "http://\(address)/appstore/notifications")
    }

    /// Runs doctor with exactly `environment`: its status and its lines by check name.
    static func doctor(_ environment: [String: String]) async throws -> (status: Int32?, lines: [String: String], output: String) {
        let process = try CommandProcess(["doctor"], environment: environment)
        let status = await process.exitStatus(within: 120)
        let output = process.stdout
        await process.stop()
        var lines: [String: String] = [:]
        for line in output.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let head = line[..<colon].split(separator: " ", omittingEmptySubsequences: true)
            guard head.count >= 2 else { continue }
            lines[head.dropFirst().joined(separator: " ")] = String(head[0])
        }
        return (status, lines, output)
    }

    static let checks = ["wechat primary host", "wechat backup host", "api key", "client certificate", "app store key",
                         "app store root", "app store receipt root", "database", "catalog"]

    @Test(.timeLimit(.minutes(10)))
    func doctorPassesAConfigurationThatWorksAndFailsExactlyTheCheckOfEachPlantedFault() async throws {
        let (receiver, notificationURL) = try await Self.receiver()
        let upstreams = try await SimulatedUpstreams.start(notificationURL: notificationURL)
        let directory = try Operations.temporaryDirectory("wxpay-doctor")
        do {
            // No client token, no listen address: doctor needs only what it checks.
            let good = upstreams.environment(public: "https://pay.example.com")
                .merging(["GATEWAY_DATABASE": "sqlite:\(directory)/gateway.sqlite"]) { $1 }
            let healthy = try await Self.doctor(good)
            #expect(healthy.status == 0, "\(healthy.output)")
            for check in Self.checks where check != "catalog" {
                #expect(healthy.lines[check] == "ok", "\(check): \(healthy.output)")
            }
            #expect(healthy.lines["catalog"] == "skip")
            #expect(healthy.output.contains("doctor: 8 passed, 0 failed, 4 skipped"), "the catalog and API v3's three are skipped")
            // The simulator's root, acknowledged: said as serve says it at start.
            #expect(healthy.output.contains("app store root: signed transactions and notifications are verified to a root that is "
                                            + "not Apple Root CA - G3"), "\(healthy.output)")
            #expect(healthy.output.contains("app store receipt root: receipts are verified to a root that is not Apple Root CA"),
                    "\(healthy.output)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/gateway.sqlite"), "doctor created the database")

            func planted(_ fault: [String: String], fails check: String, saying words: String) async throws {
                let run = try await Self.doctor(good.merging(fault) { $1 })
                #expect(run.status == 1, "\(fault): \(run.output)")
                #expect(run.lines[check] == "FAIL", "\(fault) should fail \(check): \(run.output)")
                #expect(run.output.contains(words), "\(fault): \(run.output)")
                for other in Self.checks where other != check && other != "catalog" && !(check == "api key" && other == "client certificate") {
                    #expect(run.lines[other] == "ok", "\(fault) should not fail \(other): \(run.output)")
                }
            }
            // A wrong key: WeChat answers 签名错误 instead of a signed ORDERNOTEXIST (the
            // certificate's refundquery is refused the same way, so it cannot pass either).
            try await planted(["WXPAY_API_KEY": "0123456789abcdef0123456789abcdef"], fails: "api key", saying: "签名错误")
            // The backup host unreachable.
            let refused = RefusedLoopbackPort()
            try await planted(["WXPAY_API_BACKUP_BASE": refused.baseURL], fails: "wechat backup host", saying: "cannot be reached")
            // A certificate WeChat's front end does not trust.
            try await planted(["WXPAY_CLIENT_CERT": TestCertificates.rogueClientCertificate,
                               "WXPAY_CLIENT_KEY": TestCertificates.rogueClientKey],
                              fails: "client certificate", saying: "refused the certificate")
            // A certificate that expires within 30 days.
            let expiring = try await TestCertificates.makeClientCertificate(validForDays: 10)
            defer { try? FileManager.default.removeItem(atPath: expiring) }
            try await planted(["WXPAY_CLIENT_CERT": expiring], fails: "client certificate", saying: "expires within 30 days")
            // A Server API key id the App Store does not know: 401.
            try await planted(["APPSTORE_KEY_ID": "WRONGKEY99"], fails: "app store key", saying: "refused the key (401)")
            // The Server API key without the receipt root: refused as serve refuses it, saying where the root is.
            var rootless = good
            rootless["APPSTORE_RECEIPT_ROOT_CA_FILE"] = nil
            rootless["APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256"] = nil
            let refusedRoot = try await Self.doctor(rootless)
            #expect(refusedRoot.status == 2, "\(refusedRoot.output)")
            #expect(refusedRoot.output.contains("FAIL  configuration: APPSTORE_RECEIPT_ROOT_CA_FILE")
                        && refusedRoot.output.contains("AppleIncRootCertificate.cer"), "\(refusedRoot.output)")
            // Turned off on purpose: doctor says so on its own line and passes the rest.
            rootless["APPSTORE_RECEIPT_VERIFICATION"] = "off"
            let off = try await Self.doctor(rootless)
            #expect(off.status == 0, "\(off.output)")
            #expect(off.lines["app store receipt root"] == "skip", "\(off.output)")
            #expect(off.output.contains("APPSTORE_RECEIPT_VERIFICATION=off: StoreKit 1 receipts are read unverified"), "\(off.output)")
            // A database migrated by a newer version of the gateway.
            let newer = directory + "/newer.sqlite"
            let made = try await Operations.tool("sqlite3", [newer, "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at INTEGER); INSERT INTO schema_migrations VALUES (99, 'future', 0);"])
            #expect(made.status == 0)
            try await planted(["GATEWAY_DATABASE": "sqlite:" + newer], fails: "database", saying: "newer than this program's")
            // A database file with a second name (a hard link): its WAL cannot be found from the other.
            let named = directory + "/named.sqlite"
            #expect(try await Operations.tool("sqlite3", [named, "CREATE TABLE t (x INTEGER);"]).status == 0)
            #expect(link(named, directory + "/second-name.sqlite") == 0)
            try await planted(["GATEWAY_DATABASE": "sqlite:" + named], fails: "database", saying: "has 2 names (hard links)")

            // The test notification's URL does not answer: the key works, the notification never arrives.
            await receiver.shutdown()
            let unreachable = try await Self.doctor(good)
            #expect(unreachable.status == 1)
            #expect(unreachable.lines["app store key"] == "FAIL", "\(unreachable.output)")
            #expect(unreachable.output.contains("the test notification did not arrive")
                    || unreachable.output.contains("no attempt"), "\(unreachable.output)")

            // A catalog that does not validate refuses the configuration, named, with exit 2.
            try #"{"products":[{"id":"x","amount":-1}]}"#.write(toFile: directory + "/catalog.json", atomically: true, encoding: .utf8)
            let catalog = try await Self.doctor(good.merging(["GATEWAY_CATALOG": directory + "/catalog.json"]) { $1 })
            #expect(catalog.status == 2, "\(catalog.output)")
            #expect(catalog.output.contains("FAIL  configuration: GATEWAY_CATALOG"), "\(catalog.output)")
            // Without the merchant it is refused naming what is missing, but never the client tokens.
            // One of them given under a misspelt name: said with the name it was likely meant as.
            let bare = try await Self.doctor(["GATEWAY_DATABASE": "sqlite:\(directory)/gateway.sqlite", "WXPAY_MHC_ID": "10000100"])
            #expect(bare.status == 2)
            #expect(bare.output.contains("WXPAY_API_KEY") && !bare.output.contains("GATEWAY_CLIENT_TOKENS"), "\(bare.output)")
            #expect(bare.output.contains("warn  configuration: WXPAY_MHC_ID is set but is not a variable the gateway knows; "
                                         + "it has no effect (did you mean WXPAY_MCH_ID?)"), "\(bare.output)")
        } catch {
            Issue.record("\(error)")
        }
        await receiver.shutdown()
        await upstreams.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    @Test func reconcileNeedsNoClientTokens() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-rec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The database a gateway made (empty: migrated on open); `reconcile` never makes one.
        #expect(FileManager.default.createFile(atPath: directory.appendingPathComponent("g.sqlite").path, contents: nil))
        let process = try CommandProcess(["reconcile", "--date", "2026-11-29"], environment: [
            "WXPAY_APP_ID": "wxd930ea5d5a258f4f", "WXPAY_MCH_ID": "10000100", "WXPAY_API_KEY": TestMerchant.apiKey,
            "WXPAY_API_BASE": RefusedLoopbackPort().baseURL, "WXPAY_API_BACKUP_BASE": RefusedLoopbackPort().baseURL,
            "GATEWAY_DATABASE": "sqlite:" + directory.appendingPathComponent("g.sqlite").path,
        ])
        let status = await process.exitStatus(within: 120)
        // It gets as far as asking WeChat for the bill (refused here): no configuration refusal.
        #expect(status == 69, "\(process.stderr)")
        #expect(!process.stderr.contains("GATEWAY_CLIENT_TOKENS") && !process.stderr.contains("WXPAY_NOTIFY_URL"), "\(process.stderr)")
        await process.stop()
    }
}
