// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import HTTPClientTestSupport
import Testing

/// `wxpay-gateway serve` with the merchant certificate, as an operator starts it: a certificate
/// whose key is not its own stops the start; a good one refunds over mutual TLS against a
/// `wxpay-gateway simulate` process that demands it, and its expiry is a metric.
@Suite(.serialized)
struct ServeRefundsStartTests {
    static let clientToken = "refund-start-client-token"

    static func production(port: Int, wechat: String, _ extra: [String: String]) -> [String: String] {
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-refund-start-\(UUID().uuidString)")
        return [
            "WXPAY_APP_ID": "wxd930ea5d5a258f4f", "WXPAY_MCH_ID": "10000100", "WXPAY_API_KEY": TestMerchant.apiKey,
            "WXPAY_NOTIFY_URL": "http://127.0.0.1:\(port)/wechat/notify",
            "WXPAY_REFUND_NOTIFY_URL": "http://127.0.0.1:\(port)/wechat/refund-notify",
            "WXPAY_API_BASE": wechat, "WXPAY_API_BACKUP_BASE": wechat, "GATEWAY_CLIENT_TOKENS": Self.clientToken,
            "GATEWAY_LISTEN": "127.0.0.1:\(port)", "GATEWAY_DATABASE": "sqlite:" + database.appendingPathComponent("g.sqlite").path,
            "GATEWAY_RECONCILE_INTERVAL": "0",
        ].merging(extra) { $1 }
    }

    @Test func aCertificateWhoseKeyIsAnotherOnesStopsTheStartNamingTheVariable() async throws {
        let gateway = try CommandProcess(["serve"], environment: Self.production(port: 0, wechat: "https://127.0.0.1:9", [
            "WXPAY_CLIENT_CERT": TestCertificates.clientCertificate, "WXPAY_CLIENT_KEY": TestCertificates.rogueClientKey,
        ]))
        #expect(await gateway.exitStatus() == 2)
        #expect(gateway.stderr.contains("WXPAY_CLIENT_CERT: the private key does not belong to the client certificate"))
        await gateway.stop()
        let wrongPassword = try CommandProcess(["serve"], environment: Self.production(port: 0, wechat: "https://127.0.0.1:9", [
            "WXPAY_CLIENT_P12": TestCertificates.clientPKCS12, "WXPAY_CLIENT_P12_PASSWORD": "not-the-password",
        ]))
        #expect(await wrongPassword.exitStatus() == 2)
        #expect(wrongPassword.stderr.contains("WXPAY_CLIENT_P12: the PKCS#12 file cannot be read"))
        #expect(!wrongPassword.stderr.contains("not-the-password"))
        await wrongPassword.stop()
    }

    @Test func aProductionStartWithTheCertificateRefundsOverMutualTLSAndShowsItsExpiry() async throws {
        let client = try HTTPClient(configuration: .init(tls: .init(caFile: TestCertificates.ca)))
        let simulator = try CommandProcess(["simulate", "--port", "0", "--key", TestMerchant.apiKey, "--refund-delay", "0.5",
                                            "--tls-cert", TestCertificates.serverCertificate,
                                            "--tls-key", TestCertificates.serverKey, "--client-ca", TestCertificates.ca],
                                           environment: [:])
        let started = StartedGateway()
        defer { Task { await started.gateway?.stop(); await simulator.stop(); await client.shutdown() } }
        let simulatorLine = try #require(await simulator.line(startingWith: "listening "), "stderr: \(simulator.stderr)")
        let wechat = String(simulatorLine.split(separator: " ")[1])
        #expect(wechat.hasPrefix("https://"))
        let running = try #require(await started.start { port in Self.production(port: port, wechat: wechat, [
            "WXPAY_CLIENT_CERT": TestCertificates.clientCertificate, "WXPAY_CLIENT_KEY": TestCertificates.clientKey,
            "WXPAY_API_CA_FILE": TestCertificates.ca,
        ]) }, "the production gateway did not start")
        let base = started.base
        #expect(running.stderr.contains("refunds on"))
        let metrics = try await client.send(.get, base + "/metrics").body
        let expiry = try #require(metrics.split(separator: "\n").first { $0.hasPrefix("wxpay_client_cert_expiry_seconds ") })
        // The test certificate is made for ten years: far from the 30-day warning.
        #expect((Double(expiry.split(separator: " ")[1]) ?? 0) > 30 * 86400)
        #expect(!running.stderr.contains("expires within 30 days"))

        #expect(try await client.createAndPay("start-refund-1", base: base, wechat: wechat, token: Self.clientToken) == "SUCCESS")
        let refund = try await client.send(.post, base + "/v1/orders/start-refund-1/refunds", token: Self.clientToken,
                                           body: #"{"amount":300,"reason":"bought by mistake","out_refund_no":"start-refund-r1"}"#)
        #expect(refund.status == 201, "\(refund.body)")
        #expect(refund.json["state"] as? String == "PROCESSING")
        #expect((refund.json["refund_id"] as? String)?.hasPrefix("5030") == true, "WeChat accepted it over mutual TLS")
        // WeChat completes it half a second later; its encrypted notify settles it.
        let done = try await client.send(.get, base + "/v1/refunds/start-refund-r1?wait=30", token: Self.clientToken)
        #expect(done.json["state"] as? String == "SUCCESS")
        let order = try await client.send(.get, base + "/v1/orders/start-refund-1", token: Self.clientToken)
        #expect(order.json["state"] as? String == "REFUND" && order.json["refunded_amount"] as? Int == 300)
        #expect(await running.stop() == 0)
    }

    /// WeChat's merchant certificates last a few years and must be renewed in the merchant platform:
    /// from 30 days before it expires, the start says so (and again once a day), and the gauge
    /// shows the seconds left. The start itself goes on: payments do not need the certificate.
    @Test func aCertificateThatExpiresWithinThirtyDaysIsWarnedAboutAtTheStart() async throws {
        let certificate = try await TestCertificates.makeClientCertificate(validForDays: 10)
        defer { try? FileManager.default.removeItem(atPath: certificate) }
        let client = try HTTPClient()
        let started = StartedGateway()
        defer { Task { await started.gateway?.stop(); await client.shutdown() } }
        let running = try #require(await started.start { port in Self.production(port: port, wechat: "https://127.0.0.1:9", [
            "WXPAY_CLIENT_CERT": certificate, "WXPAY_CLIENT_KEY": TestCertificates.clientKey,
        ]) }, "the production gateway did not start")
        #expect(running.stderr.contains("refunds on"))
        #expect(running.stderr.contains("the merchant certificate (WXPAY_CLIENT_CERT, v2 refunds) expires within 30 days"), "stderr: \(running.stderr)")
        let metrics = try await client.send(.get, started.base + "/metrics").body
        let expiry = try #require(metrics.split(separator: "\n").first { $0.hasPrefix("wxpay_client_cert_expiry_seconds ") })
        let seconds = Double(expiry.split(separator: " ")[1]) ?? 0
        #expect(seconds > 9 * 86400 && seconds <= 10 * 86400)
        #expect(await running.stop() == 0)
    }
}
