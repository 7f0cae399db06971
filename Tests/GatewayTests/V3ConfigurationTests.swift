// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
@testable import Gateway
import Testing
import WeChatPayV3

/// API v3's variables: a consistent set starts (either key mode, or both), and every inconsistency
/// is named in the one refusal, never quoting a key.
struct V3ConfigurationTests {
    /// The merchant's and WeChat's keys written as an operator would have them.
    struct Files {
        let directory: URL
        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("v3-config-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let keys = V3Setup.keys
            try write("apiclient_key.pem", keys.merchantKey.key.pkcs8PEM)
            try write("apiclient_cert.pem", keys.certificate.pem)
            try write("pub_key.pem", keys.wechatpayKey.key.publicKeyPEM)
            try write("other_key.pem", RSAPrivateKey.generate().key.pkcs8PEM)
            try write("rsa3072_pub.pem", RSAPrivateKey.generate(bits: 3072).key.publicKeyPEM)
            try write("not_a_key.pem", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
            try write("exponent_1.pem", Self.publicKeyPEM(exponent: 1))
            let now = Date()
            let platformKey = RSAPrivateKey.generate()
            let platform = CertificateIssuer.issue(.init(commonName: "Tenpay.com", organization: "Tenpay.com", country: "CN"),
                                                   key: platformKey.key, issuer: nil, issuerKey: platformKey.key, serial: 0x3A5E,
                                                   validity: (now - 86400)...(now + 86400 * 365), kind: .leaf)!
            try write("platform.pem", platform.pem)
            let expired = CertificateIssuer.issue(.init(commonName: "Tenpay.com", organization: "Tenpay.com", country: "CN"),
                                                  key: platformKey.key, issuer: nil, issuerKey: platformKey.key, serial: 0x3A5F,
                                                  validity: (now - 86400 * 10)...(now - 86400), kind: .leaf)!
            try write("expired.pem", expired.pem)
        }

        func write(_ name: String, _ text: String) throws { try Data(text.utf8).write(to: directory.appendingPathComponent(name)) }

        /// An RSA-2048 public key (PKCS#1 PEM) with the exponent given, which no generator makes:
        /// a fixed odd modulus, written as DER by hand.
        static func publicKeyPEM(exponent: Int64) -> String {
            let modulus: [UInt8] = [0x00, 0xC5] + [UInt8](repeating: 0x5A, count: 254) + [0x01]
            let base64 = Array(Base64.encode(DER.sequence([DER.element(0x02, modulus), DER.integer(exponent)]), .standardPadded))
            let lines = stride(from: 0, to: base64.count, by: 64).map { String(base64[$0..<min($0 + 64, base64.count)]) }
            return "-----BEGIN RSA PUBLIC KEY-----\n" + lines.joined(separator: "\n") + "\n-----END RSA PUBLIC KEY-----\n"
        }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    static func environment(_ files: Files) -> [String: String] {
        ConfigurationTests.production.merging([
            "WXPAY_API_VERSION": "v3", "WXPAY_API_V3_KEY": V3Setup.apiV3Key,
            "WXPAY_MERCHANT_PRIVATE_KEY": files.path("apiclient_key.pem"), "WXPAY_MERCHANT_CERT": files.path("apiclient_cert.pem"),
            "WXPAY_PUBLIC_KEY_FILE": files.path("pub_key.pem"), "WXPAY_PUBLIC_KEY_ID": V3Setup.publicKeyID,
            "WXPAY_REFUND_NOTIFY_URL": "https://pay.example.com/wechat/v3/refund-notify",
        ]) { $1 }
    }

    @Test("a consistent v3 configuration starts, in public-key mode, certificate mode and both, the serial read from the certificate")
    func consistentStarts() throws {
        let files = try Files()
        defer { files.remove() }
        let publicKey = try GatewayConfiguration(environment: Environment(Self.environment(files)), demo: false)
        #expect(publicKey.v3.apiVersion == .v3)
        let credentials = try #require(publicKey.v3.credentials)
        #expect(credentials.merchantSerial == V3Setup.keys.serial)
        #expect(credentials.publicKey?.id == V3Setup.publicKeyID && !credentials.usesCertificates)
        var certificates = Self.environment(files)
        certificates["WXPAY_PUBLIC_KEY_FILE"] = nil
        certificates["WXPAY_PUBLIC_KEY_ID"] = nil
        certificates["WXPAY_PLATFORM_CERT_FILE"] = files.path("platform.pem")
        certificates["WXPAY_MERCHANT_CERT"] = nil
        certificates["WXPAY_MERCHANT_SERIAL"] = V3Setup.keys.serial.lowercased()
        let certificateMode = try GatewayConfiguration(environment: Environment(certificates), demo: false)
        #expect(certificateMode.v3.credentials?.usesCertificates == true && certificateMode.v3.credentials?.publicKey == nil)
        #expect(certificateMode.v3.credentials?.merchantSerial == V3Setup.keys.serial)
        let both = try GatewayConfiguration(environment: Environment(Self.environment(files).merging(
            ["WXPAY_PLATFORM_CERT_FILE": files.path("platform.pem")]) { $1 }), demo: false)
        #expect(both.v3.credentials?.usesCertificates == true && both.v3.credentials?.publicKey != nil)
        // v2 stays the default, with or without v3's keys.
        var v2 = Self.environment(files)
        v2["WXPAY_API_VERSION"] = nil
        #expect(try GatewayConfiguration(environment: Environment(v2), demo: false).v3.apiVersion == .v2)
        #expect(try GatewayConfiguration(environment: Environment(ConfigurationTests.production), demo: false).v3.credentials == nil)
    }

    @Test("under WXPAY_API_VERSION=v3 the v2 key is optional and its absence is said; under v2 it stays required")
    func v2KeyOptionalUnderV3() throws {
        let files = try Files()
        defer { files.remove() }
        var v3Only = Self.environment(files)
        v3Only["WXPAY_API_KEY"] = nil
        for command in [GatewayConfiguration.Command.serve, .doctor, .reconcile] {
            let configuration = try GatewayConfiguration(environment: Environment(v3Only), demo: false, command: command)
            #expect(configuration.apiKey == nil)
            #expect(configuration.v3.credentials != nil)
        }
        let words = try GatewayConfiguration(environment: Environment(v3Only), demo: false).apiVersionsInWords
        #expect(words.first == "new orders: API v3")
        #expect(words.contains { $0.contains("no v2 key (WXPAY_API_KEY)") && $0.contains("through API v3") && $0.contains("refused") })
        // The key kept, no merchant certificate: only refunds of v2 orders go through v3.
        let kept = try GatewayConfiguration(environment: Environment(Self.environment(files)), demo: false)
        #expect(kept.apiKey != nil)
        #expect(kept.apiVersionsInWords.contains("no v2 client certificate (WXPAY_CLIENT_CERT and WXPAY_CLIENT_KEY, or WXPAY_CLIENT_P12): refunds of orders created with API v2 go through API v3"))
        // Given, it must still be well formed.
        v3Only["WXPAY_API_KEY"] = "short"
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration(environment: Environment(v3Only), demo: false) }
        // New orders on v2 (explicitly or by default): the key is required, with or without v3's keys.
        for version in ["v2", nil] {
            var v2 = Self.environment(files)
            v2["WXPAY_API_KEY"] = nil
            v2["WXPAY_API_VERSION"] = version
            do {
                _ = try GatewayConfiguration(environment: Environment(v2), demo: false)
                Issue.record("a v2 configuration without WXPAY_API_KEY started")
            } catch {
                #expect(error.missing == ["WXPAY_API_KEY"])
            }
        }
    }

    @Test("a v3 key of the wrong length, a private key that is not the certificate's and a public key that is not RSA-2048 are named in one refusal")
    func inconsistentKeysAreRefusedTogether() throws {
        let files = try Files()
        defer { files.remove() }
        var environment = Self.environment(files)
        environment["WXPAY_API_V3_KEY"] = "tooShortSecret0123456789"
        environment["WXPAY_MERCHANT_PRIVATE_KEY"] = files.path("other_key.pem")
        environment["WXPAY_PUBLIC_KEY_FILE"] = files.path("rsa3072_pub.pem")
        environment["WXPAY_MERCHANT_SERIAL"] = "ABCDEF"
        do {
            _ = try GatewayConfiguration(environment: Environment(environment), demo: false)
            Issue.record("inconsistent v3 keys were accepted")
        } catch {
            let text = error.description
            #expect(error.variables.contains("WXPAY_API_V3_KEY"), "\(text)")
            #expect(text.contains("WXPAY_MERCHANT_PRIVATE_KEY: does not match the certificate WXPAY_MERCHANT_CERT"), "\(text)")
            #expect(text.contains("WXPAY_PUBLIC_KEY_FILE: not an RSA-2048 public key"), "\(text)")
            #expect(text.contains("WXPAY_MERCHANT_SERIAL: is not the serial of WXPAY_MERCHANT_CERT"), "\(text)")
            #expect(!text.contains("tooShortSecret"), "a key is never quoted")
        }
    }

    @Test("half-given v3 settings are refused naming what is missing, and a broken or expired file is named",
          arguments: [
              (["WXPAY_PUBLIC_KEY_ID": nil], "WXPAY_PUBLIC_KEY_ID: required with WXPAY_PUBLIC_KEY_FILE"),
              (["WXPAY_API_V3_KEY": nil], "WXPAY_API_V3_KEY: required with WXPAY_API_VERSION=v3"),
              (["WXPAY_MERCHANT_CERT": nil], "WXPAY_MERCHANT_SERIAL: required with WXPAY_API_VERSION=v3"),
              (["WXPAY_PUBLIC_KEY_FILE": nil, "WXPAY_PUBLIC_KEY_ID": nil], "WXPAY_PUBLIC_KEY_FILE: required with WXPAY_API_VERSION=v3"),
              (["WXPAY_REFUND_NOTIFY_URL": nil], "WXPAY_REFUND_NOTIFY_URL: required with WXPAY_API_VERSION=v3"),
              (["WXPAY_PUBLIC_KEY_FILE": "not_a_key.pem"], "WXPAY_PUBLIC_KEY_FILE: not an RSA-2048 public key"),
              (["WXPAY_PUBLIC_KEY_FILE": "exponent_1.pem"], "WXPAY_PUBLIC_KEY_FILE: an RSA-2048 public key whose exponent is not odd"),
              (["WXPAY_PLATFORM_CERT_FILE": "expired.pem"], "WXPAY_PLATFORM_CERT_FILE: the platform certificate is not valid now"),
              (["WXPAY_PUBLIC_KEY_ID": "0112300001092024"], "WXPAY_PUBLIC_KEY_ID: expected"),
              (["WXPAY_API_VERSION": "v4"], "WXPAY_API_VERSION: expected v2 or v3"),
          ] as [([String: String?], String)])
    func halfGiven(change: [String: String?], words: String) throws {
        let files = try Files()
        defer { files.remove() }
        var environment = Self.environment(files)
        for (name, value) in change { environment[name] = value.map { $0.hasSuffix(".pem") ? files.path($0) : $0 } }
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration(environment: Environment(environment), demo: false) }
        do {
            _ = try GatewayConfiguration(environment: Environment(environment), demo: false)
        } catch {
            #expect(error.description.contains(words), "\(error.description)")
        }
    }

    @Test("demo mode takes WXPAY_API_VERSION=v3 and makes its own keys; any other WXPAY_ variable is still refused with --demo")
    func demoV3() throws {
        let demo = try GatewayConfiguration(environment: Environment(["WXPAY_API_VERSION": "v3"]), demo: true)
        #expect(demo.v3.apiVersion == .v3)
        #expect(demo.v3.credentials?.publicKey?.id == GatewayConfiguration.demoPublicKeyID)
        #expect(demo.v3.demo?.merchantCertificate.matches(demo.v3.credentials!.merchantKey.key) == true)
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration(environment: Environment(["WXPAY_API_VERSION": "v3", "WXPAY_API_V3_KEY": V3Setup.apiV3Key]), demo: true)
        }
    }

    @Test("a configured notify URL gives the other API version's route by its path")
    func notifyURLsPerVersion() throws {
        var environment = ConfigurationTests.production
        environment["WXPAY_NOTIFY_URL"] = "https://pay.example.com/wechat/v3/notify"
        environment["WXPAY_REFUND_NOTIFY_URL"] = "https://pay.example.com/wechat/refund-notify"
        let urls = CallbackURLs(try GatewayConfiguration(environment: Environment(environment), demo: false))
        #expect(urls.payment(for: "v2") == "https://pay.example.com/wechat/notify")
        #expect(urls.payment(for: "v3") == "https://pay.example.com/wechat/v3/notify")
        #expect(urls.refund(for: "v3") == "https://pay.example.com/wechat/v3/refund-notify")
        #expect(urls.refund(for: "v2") == "https://pay.example.com/wechat/refund-notify")
        environment["WXPAY_NOTIFY_URL"] = "https://pay.example.com/hooks/wechat"
        #expect(CallbackURLs(try GatewayConfiguration(environment: Environment(environment), demo: false)).payment(for: "v3")
                == "https://pay.example.com/hooks/wechat")
    }
}
