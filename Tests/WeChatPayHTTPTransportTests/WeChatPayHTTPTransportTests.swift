// SPDX-License-Identifier: Apache-2.0
import HTTP
import HTTPClientTestSupport
import Synchronization
import Testing
import WeChatPay
import WeChatPayHTTPTransport

/// A clock that tests move forward by hand, so three minutes pass instantly.
private final class ManualClock: Sendable {
    private let start = ContinuousClock.now
    private let offset = Mutex<Duration>(.zero)

    func now() -> ContinuousClock.Instant { start + offset.withLock { $0 } }
    func advance(by duration: Duration) { offset.withLock { $0 += duration } }
}

/// The adapter over real sockets on 127.0.0.1: hosts, headers, failover, client certificates and
/// error mapping.
struct WeChatPayHTTPTransportTests {
    private let xml = Array("<xml><appid><![CDATA[wx2421b1c4370ec43b]]></appid></xml>".utf8)

    @Test func aRequestIsPostedAsXMLToThePathOnThePrimaryHost() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                // A trailing slash on the base URL must not double the path's.
                let transport = WeChatPayHTTPTransport(
                    client: client, configuration: .init(primaryBaseURL: server.baseURL + "/", backupBaseURL: nil))
                let response = try await transport.send(TransportRequest(path: "/inspect/pay/orderquery", body: xml))
                #expect(response.status == 200)
                let expected = Array("POST /inspect/pay/orderquery text/xml; charset=utf-8\n".utf8) + xml
                #expect(response.body == expected)
            }
        }
    }

    @Test func errorStatusesArriveAsResponsesForThePipelineToJudge() async throws {
        try await withPythonTestServer { server in
            try await withHTTPClient { client in
                let transport = WeChatPayHTTPTransport(client: client, configuration: .init(primaryBaseURL: server.baseURL))
                let response = try await transport.send(TransportRequest(path: "/status/503", body: xml))
                #expect(response.status == 503)
                #expect(transport.currentHost == .primary)
            }
        }
    }

    @Test func repeatedConnectFailuresMoveToTheBackupAndThreeMinutesLaterBackToThePrimary() async throws {
        try await withPythonTestServer { backup in
            try await withHTTPClient(.init(timeouts: .init(connect: .seconds(2), total: .seconds(5)))) { client in
                let clock = ManualClock()
                let primary = RefusedLoopbackPort()
                defer { withExtendedLifetime(primary) {} }
                let transport = WeChatPayHTTPTransport(
                    client: client,
                    configuration: .init(primaryBaseURL: primary.baseURL, backupBaseURL: backup.baseURL),
                    now: { clock.now() })
                let request = TransportRequest(path: "/pay/orderquery", body: xml)
                let refused = TransportError(kind: .connect, mayHaveBeenDelivered: false)

                for _ in 0..<3 {
                    await #expect(throws: refused) { try await transport.send(request) }
                }
                #expect(transport.currentHost == .backup)
                let viaBackup = try await transport.send(request)
                #expect(viaBackup.status == 200)
                #expect(viaBackup.body == xml)

                clock.advance(by: .seconds(179))
                #expect(try await transport.send(request).status == 200)

                clock.advance(by: .seconds(2))
                #expect(transport.currentHost == .primary)
                await #expect(throws: refused) { try await transport.send(request) }

                let answeredByBackup = try await backup.answeredRequests()
                #expect(answeredByBackup == 2)
            }
        }
    }

    @Test func anUnresolvablePrimaryMovesToTheBackupAfterThreeDNSFailures() async throws {
        try await withPythonTestServer { backup in
            try await withHTTPClient { client in
                let transport = WeChatPayHTTPTransport(
                    client: client,
                    configuration: .init(primaryBaseURL: "http://nonexistent.invalid", backupBaseURL: backup.baseURL))
                let request = TransportRequest(path: "/pay/closeorder", body: xml)
                for _ in 0..<3 {
                    await #expect(throws: TransportError(kind: .dns, mayHaveBeenDelivered: false)) { try await transport.send(request) }
                }
                let response = try await transport.send(request)
                #expect(response.status == 200)
            }
        }
    }

    @Test func slowAnswersDoNotCauseFailoverAndMayHaveBeenDelivered() async throws {
        try await withPythonTestServer(.silent) { server in
            try await withHTTPClient { client in
                let backup = RefusedLoopbackPort()
                defer { withExtendedLifetime(backup) {} }
                let transport = WeChatPayHTTPTransport(
                    client: client,
                    configuration: .init(primaryBaseURL: server.baseURL, backupBaseURL: backup.baseURL,
                                         timeouts: .init(connect: .seconds(2), total: .milliseconds(400))))
                for _ in 0..<4 {
                    await #expect(throws: TransportError(kind: .timeout, mayHaveBeenDelivered: true)) {
                        try await transport.send(TransportRequest(path: "/pay/unifiedorder", body: xml))
                    }
                }
                #expect(transport.currentHost == .primary)
            }
        }
    }

    @Test func aSecapiRequestPresentsTheMerchantCertificate() async throws {
        try await withPythonTestServer(.https(clientCertificates: .optional)) { server in
            try await withHTTPClient(.init(tls: .init(caFile: TestCertificates.ca))) { client in
                let transport = WeChatPayHTTPTransport(
                    client: client,
                    configuration: .init(primaryBaseURL: server.baseURL, clientIdentity: TestCertificates.clientPKCS12Identity))
                let withCertificate = try await transport.send(TransportRequest(path: "/client-cert", body: xml, needsClientCertificate: true))
                #expect(withCertificate.status == 200)
                #expect(String(decoding: withCertificate.body, as: UTF8.self) == TestCertificates.clientCommonName)
                // Ordinary endpoints go without it, even right after a /secapi/ call.
                let without = try await transport.send(TransportRequest(path: "/client-cert", body: xml))
                #expect(without.status == 403)
            }
        }
    }

    @Test func aRefusedClientCertificateIsATLSError() async throws {
        try await withPythonTestServer(.https(clientCertificates: .required)) { server in
            try await withHTTPClient(.init(tls: .init(caFile: TestCertificates.ca))) { client in
                let transport = WeChatPayHTTPTransport(
                    client: client,
                    configuration: .init(primaryBaseURL: server.baseURL, backupBaseURL: nil,
                                         clientIdentity: TestCertificates.rogueClientIdentity))
                let error = await #expect(throws: TransportError.self) {
                    try await transport.send(TransportRequest(path: "/secapi/pay/refund", body: xml, needsClientCertificate: true))
                }
                #expect(error?.kind == .tls)
            }
        }
    }

    @Test func aSecapiRequestWithoutAConfiguredCertificateIsNotSent() async throws {
        try await withPythonTestServer(.https(clientCertificates: .optional)) { server in
            try await withHTTPClient(.init(tls: .init(caFile: TestCertificates.ca))) { client in
                let transport = WeChatPayHTTPTransport(client: client, configuration: .init(primaryBaseURL: server.baseURL))
                await #expect(throws: TransportError(kind: .tls, mayHaveBeenDelivered: false)) {
                    try await transport.send(TransportRequest(path: "/secapi/pay/refund", body: xml, needsClientCertificate: true))
                }
                let answered = try await server.answeredRequests()
                #expect(answered == 0)
            }
        }
    }
}
