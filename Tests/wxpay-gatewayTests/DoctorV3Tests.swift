// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import StorageCore
import StoreTestSupport
import Testing
import WeChatPayV3

/// `wxpay-gateway doctor`'s API v3 checks against `wxpay-gateway simulate` speaking v3, as child
/// processes: passing as configured, and each planted fault failing its own line.
@Suite(.serialized)
struct DoctorV3Tests {
    static let apiV3Key = "a7cde1ZJB1kG2e7VfTs3jQzaWizur8Gb"
    static let publicKeyID = "PUB_KEY_ID_0110000100202612040000000002"
    static let v3Checks = ["v3 keys", "wechat v3 signature", "wechat v3 public key"]

    struct Simulator {
        let process: CommandProcess
        let base: String
    }

    static func simulate(_ files: SimulateV3CommandTests.Files, platformCertificates: Bool) async throws -> Simulator {
        let process = try CommandProcess(["simulate", "--port", "0", "--app-id", "wxd930ea5d5a258f4f", "--mch-id", "10000100",
                                          "--key", TestMerchant.apiKey, "--api-v3-key", apiV3Key,
                                          "--merchant-cert", files.path("apiclient_cert.pem"), "--public-key-id", publicKeyID,
                                          "--wechatpay-key", files.path("wechatpay.pem")] + (platformCertificates ? ["--platform-certs"] : []),
                                         environment: [:])
        let line = try #require(await process.line(startingWith: "listening ", within: 120), "\(process.stderr)")
        return Simulator(process: process, base: String(line.split(separator: " ")[1]))
    }

    static func environment(_ files: SimulateV3CommandTests.Files, base: String, directory: String) -> [String: String] {
        ["WXPAY_APP_ID": "wxd930ea5d5a258f4f", "WXPAY_MCH_ID": "10000100", "WXPAY_API_KEY": TestMerchant.apiKey,
         "WXPAY_NOTIFY_URL": "https://pay.example.com/wechat/v3/notify", "WXPAY_REFUND_NOTIFY_URL": "https://pay.example.com/wechat/v3/refund-notify",
         "WXPAY_API_BASE": base, "WXPAY_API_BACKUP_BASE": base, "GATEWAY_DATABASE": "sqlite:\(directory)/gateway.sqlite",
         "WXPAY_API_VERSION": "v3", "WXPAY_API_V3_KEY": apiV3Key, "WXPAY_MERCHANT_PRIVATE_KEY": files.path("apiclient_key.pem"),
         "WXPAY_MERCHANT_CERT": files.path("apiclient_cert.pem"), "WXPAY_PUBLIC_KEY_FILE": files.path("pub_key.pem"),
         "WXPAY_PUBLIC_KEY_ID": publicKeyID]
    }

    @Test("doctor passes a working v3 configuration and fails exactly the v3 check of each planted fault", .timeLimit(.minutes(10)))
    func plantedFaults() async throws {
        let files = try SimulateV3CommandTests.Files()
        defer { files.remove() }
        try Data(files.merchantKey.key.pkcs8PEM.utf8).write(to: files.directory.appendingPathComponent("apiclient_key.pem"))
        try Data(files.wechatpayKey.key.publicKeyPEM.utf8).write(to: files.directory.appendingPathComponent("pub_key.pem"))
        try Data(RSAPrivateKey.generate().key.publicKeyPEM.utf8).write(to: files.directory.appendingPathComponent("other_pub.pem"))
        try Data(RSAPrivateKey.generate().key.pkcs8PEM.utf8).write(to: files.directory.appendingPathComponent("other_key.pem"))
        let both = try await Self.simulate(files, platformCertificates: true)
        let good = Self.environment(files, base: both.base, directory: files.directory.path)

        let healthy = try await DoctorCommandTests.doctor(good)
        for check in Self.v3Checks { #expect(healthy.lines[check] == "ok", "\(check): \(healthy.output)") }
        #expect(healthy.output.contains("ORDER_NOT_EXIST"), "\(healthy.output)")

        func planted(_ fault: [String: String?], fails check: String, saying words: String) async throws {
            var environment = good
            for (name, value) in fault { environment[name] = value }
            let run = try await DoctorCommandTests.doctor(environment)
            #expect(run.status == 1, "\(fault): \(run.output)")
            #expect(run.lines[check] == "FAIL", "\(fault) should fail \(check): \(run.output)")
            #expect(run.output.contains(words), "\(fault): \(run.output)")
            #expect(run.lines["v3 keys"] == "ok", "\(fault): \(run.output)")
        }
        // A serial WeChat does not know for the key: 401 SIGN_ERROR.
        try await planted(["WXPAY_MERCHANT_CERT": nil, "WXPAY_MERCHANT_SERIAL": "0123ABCD"], fails: "wechat v3 signature",
                          saying: "SIGN_ERROR")
        // A public key that is not WeChat's: its signed answer does not verify.
        try await planted(["WXPAY_PUBLIC_KEY_FILE": files.path("other_pub.pem")], fails: "wechat v3 public key", saying: "does not verify")
        // A private key that is not the certificate's: the configuration is refused, naming it.
        let mismatched = try await DoctorCommandTests.doctor(good.merging(["WXPAY_MERCHANT_PRIVATE_KEY": files.path("other_key.pem")]) { $1 })
        #expect(mismatched.status == 2)
        #expect(mismatched.output.contains("FAIL  configuration: WXPAY_MERCHANT_PRIVATE_KEY: does not match the certificate"),
                "\(mismatched.output)")
        await both.process.stop()

        // Public-key mode only: no platform certificates to fetch, so the public key cannot be checked without paying.
        let publicKeyOnly = try await Self.simulate(files, platformCertificates: false)
        let run = try await DoctorCommandTests.doctor(Self.environment(files, base: publicKeyOnly.base, directory: files.directory.path))
        #expect(run.lines["wechat v3 signature"] == "ok", "\(run.output)")
        #expect(run.lines["wechat v3 public key"] == "skip", "\(run.output)")
        await publicKeyOnly.process.stop()

        // Without v3 the three checks are skipped.
        var v2 = Self.environment(files, base: publicKeyOnly.base, directory: files.directory.path)
        for name in v2.keys where name.hasPrefix("WXPAY_") && !["WXPAY_APP_ID", "WXPAY_MCH_ID", "WXPAY_API_KEY", "WXPAY_NOTIFY_URL",
                                                                 "WXPAY_API_BASE", "WXPAY_API_BACKUP_BASE"].contains(name) {
            v2[name] = nil
        }
        let skipped = try await DoctorCommandTests.doctor(v2)
        for check in Self.v3Checks { #expect(skipped.lines[check] == "skip", "\(check): \(skipped.output)") }
    }

    @Test("under v3 without the v2 key doctor asks nothing in v2 and says how many v2 orders still open will be finished through v3",
          .timeLimit(.minutes(10)))
    func withoutTheV2Key() async throws {
        let files = try SimulateV3CommandTests.Files()
        defer { files.remove() }
        try Data(files.merchantKey.key.pkcs8PEM.utf8).write(to: files.directory.appendingPathComponent("apiclient_key.pem"))
        try Data(files.wechatpayKey.key.publicKeyPEM.utf8).write(to: files.directory.appendingPathComponent("pub_key.pem"))
        // A database a v2 gateway left: two v2 orders still open, one paid.
        let database = try await TestDatabase(.sqlite)
        await (try database.open()).close()
        for (number, state) in [("doctor-v2-open-1", "NOTPAY"), ("doctor-v2-open-2", "USERPAYING"), ("doctor-v2-paid", "SUCCESS")] {
            let inserted = await database.execute(
                "INSERT INTO orders (out_trade_no, amount, description, client_ip, sign_type, time_expire, expires_at, created_at, "
                    + "state, parameters_digest, updated_at) VALUES ('\(number)', 990, 'course', '203.0.113.7', 'HMAC-SHA256', "
                    + "'20261205000000', 0, 0, '\(state)', 'digest', 0)")
            #expect(inserted)
        }
        let simulator = try await Self.simulate(files, platformCertificates: false)
        var environment = Self.environment(files, base: simulator.base, directory: files.directory.path)
        environment["WXPAY_API_KEY"] = nil
        environment["GATEWAY_DATABASE"] = "sqlite:" + database.location
        let run = try await DoctorCommandTests.doctor(environment)
        await simulator.process.stop()
        await database.remove()
        #expect(run.status == 0, "\(run.output)")
        #expect(run.lines["api key"] == "skip", "\(run.output)")
        #expect(run.output.contains("2 orders created with API v2 are still open; they are finished through API v3"), "\(run.output)")
        #expect(run.lines["wechat primary host"] == "ok" && run.output.contains("answers (v3 query)"), "\(run.output)")
        #expect(run.lines["client certificate"] == "skip" && run.output.contains("refunds go through API v3"), "\(run.output)")
        #expect(run.lines["wechat v3 signature"] == "ok", "\(run.output)")
    }
}
