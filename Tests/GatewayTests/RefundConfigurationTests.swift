// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import HTTPClientTestSupport
import Testing

struct RefundConfigurationTests {
    /// A complete production start with the test merchant (whose mch_id is the test PKCS#12's password).
    static let production = [
        "WXPAY_MCH_ID": "10000100", "WXPAY_APP_ID": "wx8888888888888888", "WXPAY_API_KEY": "0123456789abcdef0123456789abcdef",
        "WXPAY_NOTIFY_URL": "https://pay.example.com/wechat/notify", "GATEWAY_CLIENT_TOKENS": "client-token-1",
    ]

    static func configuration(_ extra: [String: String], demo: Bool = false) throws(ConfigurationError) -> GatewayConfiguration {
        try GatewayConfiguration(environment: Environment(production.merging(extra) { $1 }), demo: demo)
    }

    static func problems(_ extra: [String: String]) -> [ConfigurationProblem] {
        do {
            _ = try configuration(extra)
            return []
        } catch {
            return error.problems
        }
    }

    static let notifyURL = ["WXPAY_REFUND_NOTIFY_URL": "https://pay.example.com/wechat/refund-notify"]

    @Test func demoModeRefundsThroughTheSimulatorAndDerivesItsNotifyURL() throws {
        let demo = try GatewayConfiguration(environment: Environment(["GATEWAY_LISTEN": "127.0.0.1:9090"]), demo: true)
        #expect(demo.refundMode == .embedded)
        #expect(demo.refundNotifyURL == "http://127.0.0.1:9090/wechat/refund-notify")
        #expect(demo.refunds.queryAfter == 60)
        // A certificate variable with --demo is half a production start: refused like every WXPAY_*.
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration(environment: Environment(["WXPAY_CLIENT_CERT": TestCertificates.clientCertificate]),
                                     demo: true)
        }
    }

    @Test func withoutACertificateAProductionGatewayStartsWithRefundsOff() throws {
        let configuration = try Self.configuration([:])
        #expect(configuration.refundMode(fileExists: { _ in false }) == .off)
        // The default PEM pair counts once both files are there.
        #expect(configuration.refundMode(fileExists: { _ in true })
            == .mutualTLS(.pem(certificateFile: "certs/apiclient_cert.pem", keyFile: "certs/apiclient_key.pem")))
    }

    @Test func aPEMPairOrAPKCS12WithTheMchIDAsItsPasswordTurnsRefundsOn() throws {
        let pem = try Self.configuration(Self.notifyURL.merging([
            "WXPAY_CLIENT_CERT": TestCertificates.clientCertificate, "WXPAY_CLIENT_KEY": TestCertificates.clientKey,
            "WXPAY_API_CA_FILE": TestCertificates.ca, "GATEWAY_REFUND_QUERY_AFTER": "30",
        ]) { $1 })
        #expect(pem.refundMode == .mutualTLS(TestCertificates.clientPEMIdentity))
        #expect(pem.refunds.caFile == TestCertificates.ca && pem.refunds.queryAfter == 30)
        #expect(pem.refundNotifyURL == "https://pay.example.com/wechat/refund-notify")
        let p12 = try Self.configuration(Self.notifyURL.merging(["WXPAY_CLIENT_P12": TestCertificates.clientPKCS12]) { $1 })
        #expect(p12.refundMode == .mutualTLS(.pkcs12(file: TestCertificates.clientPKCS12, password: "10000100")))
    }

    @Test func everyRefundProblemIsNamedAtOnceWithoutAPassword() {
        let problems = Self.problems([
            "WXPAY_CLIENT_P12": TestCertificates.clientPKCS12, "WXPAY_CLIENT_P12_PASSWORD": "not-the-password",
            "WXPAY_API_CA_FILE": "/nonexistent/ca.pem", "GATEWAY_REFUND_QUERY_AFTER": "soon",
        ])
        #expect(Set(problems.map(\.variable)) == ["WXPAY_API_CA_FILE", "GATEWAY_REFUND_QUERY_AFTER", "WXPAY_CLIENT_P12",
                                                  "WXPAY_REFUND_NOTIFY_URL"])
        #expect(problems.first { $0.variable == "WXPAY_CLIENT_P12" }?.expected.contains("PKCS#12") == true)
        #expect(!problems.description.contains("not-the-password"))
    }

    @Test(arguments: [
        (["WXPAY_CLIENT_CERT": TestCertificates.clientCertificate], "WXPAY_CLIENT_KEY"),
        (["WXPAY_CLIENT_KEY": TestCertificates.clientKey], "WXPAY_CLIENT_CERT"),
        (["WXPAY_CLIENT_P12": TestCertificates.clientPKCS12, "WXPAY_CLIENT_CERT": TestCertificates.clientCertificate,
          "WXPAY_CLIENT_KEY": TestCertificates.clientKey], "WXPAY_CLIENT_P12"),
        (["WXPAY_CLIENT_CERT": TestCertificates.clientCertificate, "WXPAY_CLIENT_KEY": TestCertificates.rogueClientKey],
         "WXPAY_CLIENT_CERT"),
        (["WXPAY_CLIENT_CERT": "/nonexistent/apiclient_cert.pem", "WXPAY_CLIENT_KEY": TestCertificates.clientKey],
         "WXPAY_CLIENT_CERT"),
    ])
    func anIncompleteMismatchedOrMissingCertificateStopsTheStart(variables: [String: String], named: String) {
        let problems = Self.problems(Self.notifyURL.merging(variables) { $1 })
        #expect(problems.map(\.variable) == [named])
    }

    @Test func theRefundVariablesAreKnownSoAMisspeltOneIsNamed() {
        let warnings = GatewayConfiguration.warnings(for: Environment(["WXPAY_CLIENT_CRET": "x"]))
        #expect(warnings.contains { $0.contains("did you mean WXPAY_CLIENT_CERT?") })
        #expect(GatewayConfiguration.warnings(for: Environment(Self.notifyURL)).isEmpty)
    }
}
