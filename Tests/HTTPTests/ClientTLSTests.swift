// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import HTTPClientTestSupport
import Testing

struct ClientTLSTests {
    private let trustingTestCA = HTTPClient.Configuration(tls: .init(caFile: TestCertificates.ca))

    @Test func httpsWithTheCustomCARoundTrips() async throws {
        try await withPythonTestServer(.https) { server in
            try await withHTTPClient(trustingTestCA) { client in
                let response = try await client.execute(HTTPClientRequest(method: .post, url: server.url("/echo"), body: [7, 8, 9]))
                #expect(response.status == 200)
                #expect(response.body == [7, 8, 9])
                // The certificate also names localhost.
                let byName = try await client.execute(HTTPClientRequest(url: "https://localhost:\(server.port)/bytes/1"))
                #expect(byName.status == 200)
            }
        }
    }

    @Test func aServerSignedByAnUntrustedCAIsATLSFailureThatWasNotDelivered() async throws {
        try await withPythonTestServer(.https) { server in
            // System trust store: the test CA is unknown. Patient timeouts: the refusal must come
            // from the certificate, not from a handshake that a loaded machine made slow.
            let patient = HTTPClient.Configuration(timeouts: .init(connect: .seconds(60), total: .seconds(90)))
            try await withHTTPClient(patient) { client in
                let error = await failure { try await client.execute(HTTPClientRequest(url: server.url("/echo"))) }
                #expect(error == .tlsFailure)
                #expect(error?.mayHaveBeenDelivered == false)
                let answered = try await server.answeredRequests()
                #expect(answered == 0)
            }
        }
    }

    @Test func mutualTLSWithAPEMPairIsAccepted() async throws {
        try await withPythonTestServer(.https(clientCertificates: .required)) { server in
            try await withHTTPClient(trustingTestCA) { client in
                let request = HTTPClientRequest(url: server.url("/client-cert"), clientIdentity: TestCertificates.clientPEMIdentity)
                let response = try await client.execute(request)
                #expect(response.status == 200)
                #expect(response.text == TestCertificates.clientCommonName)
            }
        }
    }

    @Test func mutualTLSWithPKCS12AndItsPasswordIsAccepted() async throws {
        try await withPythonTestServer(.https(clientCertificates: .required)) { server in
            try await withHTTPClient(trustingTestCA) { client in
                let request = HTTPClientRequest(url: server.url("/client-cert"), clientIdentity: TestCertificates.clientPKCS12Identity)
                let response = try await client.execute(request)
                #expect(response.status == 200)
                #expect(response.text == TestCertificates.clientCommonName)
            }
        }
    }

    @Test func mutualTLSWithALegacyEncryptedPKCS12IsAccepted() async throws {
        // RC2-40 needs OpenSSL 3's legacy provider, which the client loads for PKCS#12 identities.
        let legacy = try await TestCertificates.makeLegacyPKCS12()
        defer { try? FileManager.default.removeItem(atPath: legacy) }
        try await withPythonTestServer(.https(clientCertificates: .required)) { server in
            try await withHTTPClient(trustingTestCA) { client in
                let identity = TLSClientIdentity.pkcs12(file: legacy, password: TestCertificates.clientPKCS12Password)
                let response = try await client.execute(HTTPClientRequest(url: server.url("/client-cert"), clientIdentity: identity))
                #expect(response.status == 200)
                #expect(response.text == TestCertificates.clientCommonName)
            }
        }
    }

    @Test func aMissingClientCertificateIsRefusedWithATLSError() async throws {
        try await withPythonTestServer(.https(clientCertificates: .required)) { server in
            try await withHTTPClient(trustingTestCA) { client in
                let error = await failure { try await client.execute(HTTPClientRequest(url: server.url("/client-cert"))) }
                #expect(error == .tlsFailure)
            }
        }
    }

    @Test func aClientCertificateFromAnUntrustedCAIsRefusedWithATLSError() async throws {
        try await withPythonTestServer(.https(clientCertificates: .required)) { server in
            try await withHTTPClient(trustingTestCA) { client in
                let request = HTTPClientRequest(url: server.url("/client-cert"), clientIdentity: TestCertificates.rogueClientIdentity)
                let error = await failure { try await client.execute(request) }
                #expect(error == .tlsFailure)
            }
        }
    }

    @Test func aWrongPKCS12PasswordFailsLocallyAndNeverAppearsInTheError() async throws {
        try await withPythonTestServer(.https(clientCertificates: .required)) { server in
            try await withHTTPClient(trustingTestCA) { client in
                let secret = "wrong-password-4711"
                let identity = TLSClientIdentity.pkcs12(file: TestCertificates.clientPKCS12, password: secret)
                let error = try #require(await failure {
                    try await client.execute(HTTPClientRequest(url: server.url("/client-cert"), clientIdentity: identity))
                })
                #expect(error == .tlsConfigurationUnusable)
                #expect(error.mayHaveBeenDelivered == false)
                for text in [error.description, String(reflecting: error), "\(identity)", String(reflecting: identity)] {
                    #expect(!text.contains(secret))
                }
            }
        }
    }

    @Test func aMissingCertificateFileFailsLocallyBeforeTheRequestIsSent() async throws {
        try await withPythonTestServer(.https(clientCertificates: .optional)) { server in
            try await withHTTPClient(trustingTestCA) { client in
                let identity = TLSClientIdentity.pem(certificateFile: "/nonexistent/cert.pem", keyFile: "/nonexistent/key.pem")
                let request = HTTPClientRequest(url: server.url("/client-cert"), clientIdentity: identity)
                let error = await failure { try await client.execute(request) }
                #expect(error == .tlsConfigurationUnusable)
                #expect(error?.mayHaveBeenDelivered == false)
                let answered = try await server.answeredRequests()
                #expect(answered == 0)
            }
        }
    }

    @Test func aKeptAliveConnectionWithoutACertificateIsNotReusedForARequestThatNeedsOne() async throws {
        // WeChat serves /pay/ and /secapi/ on one host; a pooled client once sent refunds over a
        // connection opened without the certificate (WxJava PR #3741).
        try await withPythonTestServer(.https(clientCertificates: .optional)) { server in
            try await withHTTPClient(trustingTestCA) { client in
                let anonymous = try await client.execute(HTTPClientRequest(url: server.url("/client-cert")))
                #expect(anonymous.status == 403)
                let identified = try await client.execute(
                    HTTPClientRequest(url: server.url("/client-cert"), clientIdentity: TestCertificates.clientPKCS12Identity))
                #expect(identified.status == 200)
                #expect(identified.openedNewConnection)
                let anonymousAgain = try await client.execute(HTTPClientRequest(url: server.url("/client-cert")))
                #expect(anonymousAgain.status == 403)
                #expect(!anonymousAgain.openedNewConnection)
            }
        }
    }

    @Test func anIdentityDescribesItselfWithoutItsPassword() {
        let pkcs12 = TLSClientIdentity.pkcs12(file: "/etc/wxpay/apiclient_cert.p12", password: "1900000109")
        let pem = TLSClientIdentity.pem(certificateFile: "c.pem", keyFile: "k.pem", keyPassword: "hunter2")
        #expect("\(pkcs12)" == "TLSClientIdentity(pkcs12: /etc/wxpay/apiclient_cert.p12, password: ***)")
        #expect(!String(reflecting: pkcs12).contains("1900000109"))
        #expect(!"\(pem)".contains("hunter2"))
        #expect("\(pem)".contains("***"))
        var dumped = ""
        dump(HTTPClientRequest(url: "https://example.invalid/", clientIdentity: pkcs12), to: &dumped)
        #expect(!dumped.contains("1900000109"))
        #expect(dumped.contains("apiclient_cert.p12"))
    }
}
