// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Crypto
import Foundation
@testable import Gateway
import Testing

/// With the App Store Server API key a StoreKit 1 receipt is read locally, and only one verified to
/// the receipt root proves its reporter holds the purchase. Production fails closed, as for the G3
/// root: the key needs `APPSTORE_RECEIPT_ROOT_CA_FILE`, unless `APPSTORE_RECEIPT_VERIFICATION=off`
/// says the operator runs without it on purpose.
struct ReceiptRootConfigurationTests {
    /// Files of one simulator PKI: its root (for the JWS and, acknowledged, the receipts) and a key.
    struct Files {
        let directory: String
        let root: Certificate
        var rootFile: String { directory + "/root.pem" }
        var keyFile: String { directory + "/key.p8" }

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-receipt-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            root = SimulatorPKI().root
            try Data(root.pem.utf8).write(to: URL(fileURLWithPath: directory + "/root.pem"))
            try Data(ES256PrivateKey.generate().pkcs8PEM.utf8).write(to: URL(fileURLWithPath: directory + "/key.p8"))
        }

        func remove() { try? FileManager.default.removeItem(atPath: directory) }

        /// A production environment with the iOS app, its (acknowledged) root and, with `key`, the Server API key.
        func environment(key: Bool = true) -> [String: String] {
            var environment = ConfigurationTests.production.merging([
                "APPSTORE_BUNDLE_ID": "com.example.courses", "APPSTORE_APP_APPLE_ID": "1234567890",
                "APPSTORE_ROOT_CA_FILE": rootFile, "APPSTORE_ALLOW_UNTRUSTED_ROOT": "1",
                "APPSTORE_UNTRUSTED_ROOT_SHA256": root.sha256Fingerprint,
            ]) { $1 }
            if key {
                environment["APPSTORE_ISSUER_ID"] = "57246542-96fe-1a63-e053-0824d011072a"
                environment["APPSTORE_KEY_ID"] = "SIMKEY0001"
                environment["APPSTORE_PRIVATE_KEY_FILE"] = keyFile
            }
            return environment
        }
    }

    @Test("A root file that is no certificate, or cannot be read, is said to be so; only another root than Apple's points at APPSTORE_ALLOW_UNTRUSTED_ROOT")
    func aRootFileThatIsNoCertificateIsNotATrustQuestion() throws {
        let files = try Files()
        defer { files.remove() }
        let notACertificate = files.directory + "/notes.txt"
        try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: notACertificate))
        let cases: [(file: String, allow: Bool, says: String, hint: Bool)] = [
            (notACertificate, true, "holds no PEM or DER certificate", false),
            (files.directory + "/missing.pem", true, "a readable file holding Apple Root CA - G3", false),
            (files.rootFile, false, "is not Apple Root CA - G3", true),
        ]
        for (file, allow, says, hint) in cases {
            var environment = files.environment(key: false)
            environment["APPSTORE_ROOT_CA_FILE"] = file
            environment["APPSTORE_ALLOW_UNTRUSTED_ROOT"] = allow ? "1" : nil
            environment["APPSTORE_UNTRUSTED_ROOT_SHA256"] = allow ? files.root.sha256Fingerprint : nil
            do {
                _ = try GatewayConfiguration(environment: Environment(environment), demo: false)
                Issue.record("\(file) was accepted")
            } catch {
                let problem = try #require(error.problems.first { $0.variable == "APPSTORE_ROOT_CA_FILE" })
                #expect(problem.expected.contains(says), "\(problem.expected)")
                #expect(problem.expected.contains("APPSTORE_ALLOW_UNTRUSTED_ROOT") == hint, "\(problem.expected)")
            }
        }
    }

    @Test("The Server API key without a receipt root refuses a production start, saying where Apple Root CA comes from and its fingerprint")
    func theKeyWithoutAReceiptRootIsRefused() throws {
        let files = try Files()
        defer { files.remove() }
        var environment = files.environment()
        environment["WXPAY_API_KEY"] = nil   // every problem at once: the merchant's key and the receipt root
        do {
            _ = try GatewayConfiguration(environment: Environment(environment), demo: false)
            Issue.record("the key without a receipt root was accepted")
        } catch {
            #expect(error.missing == ["WXPAY_API_KEY"])
            let problem = try #require(error.problems.first { $0.variable == "APPSTORE_RECEIPT_ROOT_CA_FILE" })
            #expect(problem.kind == .conflict)
            let message = error.description
            #expect(message.contains("AppleIncRootCertificate.cer") && message.contains("https://www.apple.com/certificateauthority/"))
            #expect(message.contains(TrustedRoots.appleRootCAFingerprint))
            #expect(message.contains("APPSTORE_RECEIPT_VERIFICATION=off"))
        }
        // doctor, as serve, refuses it; reconcile, which reads no receipt, does not (nor do backup and
        // restore, which read the database alone).
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration(environment: Environment(files.environment()), demo: false, command: .doctor)
        }
        _ = try GatewayConfiguration(environment: Environment(files.environment()), demo: false, command: .reconcile)
        _ = try GatewayConfiguration.database(in: Environment(files.environment()))
    }

    @Test("APPSTORE_RECEIPT_VERIFICATION=off acknowledges the key without a receipt root; with a root it starts verifying receipts")
    func offAcknowledgesRunningWithoutTheRoot() throws {
        let files = try Files()
        defer { files.remove() }
        var off = files.environment()
        off["APPSTORE_RECEIPT_VERIFICATION"] = "off"
        let acknowledged = try GatewayConfiguration(environment: Environment(off), demo: false)
        #expect(!acknowledged.appStore.receiptVerification && acknowledged.appStore.receiptRoots == nil)
        #expect(acknowledged.appStore.serverAPICredentials != nil)

        var verified = files.environment()
        verified["APPSTORE_RECEIPT_ROOT_CA_FILE"] = files.rootFile
        verified["APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256"] = files.root.sha256Fingerprint
        let configuration = try GatewayConfiguration(environment: Environment(verified), demo: false)
        #expect(configuration.appStore.receiptVerification && configuration.appStore.receiptRoots != nil)

        // Without the key receipts go to verifyReceipt: nothing to require, nothing to turn off.
        _ = try GatewayConfiguration(environment: Environment(files.environment(key: false)), demo: false)
    }

    @Test("APPSTORE_RECEIPT_VERIFICATION=off is refused beside a receipt root, without the Server API key, and in demo mode")
    func offThatWouldMeanNothingIsRefused() throws {
        let files = try Files()
        defer { files.remove() }
        var withRoot = files.environment()
        withRoot["APPSTORE_RECEIPT_VERIFICATION"] = "off"
        withRoot["APPSTORE_RECEIPT_ROOT_CA_FILE"] = files.rootFile
        withRoot["APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256"] = files.root.sha256Fingerprint
        var withoutKey = files.environment(key: false)
        withoutKey["APPSTORE_RECEIPT_VERIFICATION"] = "off"
        for (environment, words) in [(withRoot, "APPSTORE_RECEIPT_ROOT_CA_FILE is set"), (withoutKey, "verifyReceipt")] {
            do {
                _ = try GatewayConfiguration(environment: Environment(environment), demo: false)
                Issue.record("accepted: \(words)")
            } catch {
                #expect(error.variables == ["APPSTORE_RECEIPT_VERIFICATION"], "\(error)")
                #expect(error.description.contains(words), "\(error)")
            }
        }
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration(environment: Environment(["APPSTORE_RECEIPT_VERIFICATION": "off"]), demo: true)
        }
        var malformed = files.environment()
        malformed["APPSTORE_RECEIPT_VERIFICATION"] = "sometimes"
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration(environment: Environment(malformed), demo: false) }
    }
}
