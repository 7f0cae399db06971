// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import HTTP
import Testing
import WeChatPayV3

/// `wxpay-gateway simulate` with the v3 options, as a child process.
struct SimulateV3CommandTests {
    static let apiV3Key = "a7cde1ZJB1kG2e7VfTs3jQzaWizur8Gb"

    /// The merchant's key and certificate and WeChat's key, written where the command reads them.
    struct Files {
        let directory: URL
        let merchantKey = RSAPrivateKey.generate()
        let wechatpayKey = RSAPrivateKey.generate()
        let certificate: Certificate

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("simulate-v3-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            certificate = try #require(CertificateIssuer.issue(.init(commonName: "1900000109", organization: "Tenpay.com", country: "CN"),
                                                               key: merchantKey.key, issuer: nil, issuerKey: merchantKey.key, serial: 0x6B3E,
                                                               validity: Date(timeIntervalSinceNow: -86400)...Date(timeIntervalSinceNow: 86400),
                                                               kind: .leaf))
            try Data(certificate.pem.utf8).write(to: directory.appendingPathComponent("apiclient_cert.pem"))
            try Data(wechatpayKey.key.pkcs8PEM.utf8).write(to: directory.appendingPathComponent("wechatpay.pem"))
        }

        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    @Test("simulate refuses a v3 key of the wrong length, v3 options without --api-v3-key and an id without PUB_KEY_ID_, naming the problem")
    func refusals() async throws {
        let files = try Files()
        defer { files.remove() }
        for (arguments, words) in [
            (["--api-v3-key", "short", "--merchant-cert", files.path("apiclient_cert.pem")], "--api-v3-key must be 32 ASCII characters"),
            (["--merchant-cert", files.path("apiclient_cert.pem")], "the v3 options need --api-v3-key"),
            (["--api-v3-key", Self.apiV3Key, "--merchant-cert", files.path("apiclient_cert.pem"), "--public-key-id", "0114",
              "--wechatpay-key", files.path("wechatpay.pem")], "the public key id must start PUB_KEY_ID_"),
            (["--api-v3-key", Self.apiV3Key, "--merchant-cert", files.path("wechatpay.pem")], "--merchant-cert is not a readable"),
            (["--api-v3-key", Self.apiV3Key, "--merchant-cert", files.path("apiclient_cert.pem")], "neither public-key mode nor platform"),
        ] {
            let process = try CommandProcess(["simulate", "--port", "0"] + arguments, environment: [:])
            #expect(await process.exitStatus() == 64, "\(arguments)")
            #expect(process.stderr.contains(words), "\(process.stderr)")
            #expect(!process.stderr.contains(Self.apiV3Key))
        }
    }

    @Test("simulate with the v3 options answers signed requests signed with the given WeChat Pay key, in public-key and certificate mode")
    func servesV3() async throws {
        let files = try Files()
        defer { files.remove() }
        let client = try HTTPClient()
        for platformCertificates in [false, true] {
            let process = try CommandProcess(["simulate", "--port", "0", "--app-id", "wxd678efh567hg6787", "--mch-id", "1900000109",
                                              "--api-v3-key", Self.apiV3Key, "--merchant-cert", files.path("apiclient_cert.pem"),
                                              "--public-key-id", "PUB_KEY_ID_0119000001092024", "--wechatpay-key", files.path("wechatpay.pem")]
                                             + (platformCertificates ? ["--platform-certs"] : []), environment: [:])
            let line = try #require(await process.line(startingWith: "listening "), "\(process.stderr)")
            let base = String(line.split(separator: " ")[1])
            let signer = MerchantSigner(mchID: "1900000109", serialNumber: try #require(files.certificate.serialNumberHex), key: files.merchantKey)
            func send(_ request: V3Request) async throws -> HTTPClientResponse {
                let headers = signer.headers(for: request, timestamp: Int64(Date().timeIntervalSince1970), nonce: UUID().uuidString,
                                             wechatpaySerial: "PUB_KEY_ID_0119000001092024")
                return try await client.execute(HTTPClientRequest(method: request.method == "GET" ? .get : .post, url: base + request.url,
                                                                  headers: HTTPHeaders(headers.map { ($0.key, $0.value) }), body: request.body,
                                                                  timeouts: HTTPClient.Timeouts(connect: .seconds(60), total: .seconds(120))))
            }
            let order = try PrepayRequest(appID: "wxd678efh567hg6787", mchID: "1900000109", description: "课程", outTradeNo: "cli0000001",
                                             notifyURL: "http://127.0.0.1:1/notify", total: 100).request()
            let answer = try await send(order)
            #expect(answer.status == 200)
            var headers: [String: String] = [:]
            for field in answer.headers { headers[field.name] = field.value }
            let verifier = V3Verifier(publicKey: try WeChatPayPublicKey(id: "PUB_KEY_ID_0119000001092024", key: files.wechatpayKey.publicKey))
            try verifier.verify(headers: headers, body: answer.body, now: Date())
            let certificates = try await send(PlatformCertificateDownload.request)
            #expect(certificates.status == (platformCertificates ? 200 : 404))
            #expect(await process.stop() == 0)
        }
        await client.shutdown()
    }
}
