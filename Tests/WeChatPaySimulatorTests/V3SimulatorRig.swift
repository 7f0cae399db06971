// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import HTTP
import Synchronization
import WeChatPayV3
@testable import WeChatPaySimulator

/// A v3 simulator on 127.0.0.1 (API and control panel), the merchant's keys, and a notify receiver
/// on its own port that records each attempt's headers and body and answers as the merchant would:
/// 204 when WeChatPayV3 opens the notify, 400 otherwise.
final class V3SimulatorRig: Sendable {
    enum Mode: String, Sendable, CaseIterable { case publicKey, certificates, both }

    static let apiV3Key = "a7cde1ZJB1kG2e7VfTs3jQzaWizur8Gb"
    static let publicKeyID = "PUB_KEY_ID_0119000001092024"

    let simulator: WeChatPaySimulator
    let merchantKey: RSAPrivateKey
    let merchantCertificate: Certificate
    let wechatpayKey: RSAPrivateKey
    let server: HTTPServer
    let receiver: HTTPServer
    let client: HTTPClient
    let base: String
    let notifyURL: String
    let inbox = Inbox()
    func setOpener(_ opener: V3NotifyOpener) { inbox.opener.withLock { $0 = opener } }

    /// What the notify receiver shares with the test.
    final class Inbox: Sendable {
        let opener = Mutex<V3NotifyOpener?>(nil)
        let received = Mutex<[(headers: [String: String], body: [UInt8], outcome: String)]>([])
    }
    let loop: Task<Void, Never>

    static func start(_ mode: Mode, clock: ScaledClock = ScaledClock()) async throws -> V3SimulatorRig {
        let merchantKey = RSAPrivateKey.generate()
        let now = Date()
        let certificate = CertificateIssuer.issue(.init(commonName: "1900000109", organization: "Tenpay.com", country: "CN"),
                                                  key: merchantKey.key, issuer: nil, issuerKey: merchantKey.key, serial: 0x5157_F09E,
                                                  validity: (now - 86400)...(now + 86400 * 365), kind: .leaf)!
        let wechatpayKey = RSAPrivateKey.generate()
        let v3 = V3SimulatorConfiguration(
            apiV3Key: try APIv3Key(apiV3Key), merchantCertificate: certificate,
            publicKeyID: mode == .certificates ? nil : publicKeyID, wechatpayKey: mode == .certificates ? nil : wechatpayKey,
            platformCertificates: mode != .publicKey)
        let client = try HTTPClient()
        let simulator = WeChatPaySimulator(configuration: SimulatorConfiguration(appID: "wxd678efh567hg6787", mchID: "1900000109",
                                                                                 notifyRetryIntervals: [1, 1, 1, 1, 1], notifyTimeout: 60, v3: v3),
                                           clock: clock, notifySender: HTTPNotifySender(client: client))
        return try await V3SimulatorRig(simulator: simulator, merchantKey: merchantKey, certificate: certificate,
                                        wechatpayKey: wechatpayKey, client: client)
    }

    private init(simulator: WeChatPaySimulator, merchantKey: RSAPrivateKey, certificate: Certificate, wechatpayKey: RSAPrivateKey,
                 client: HTTPClient) async throws {
        self.simulator = simulator
        self.merchantKey = merchantKey
        merchantCertificate = certificate
        self.wechatpayKey = wechatpayKey
        self.client = client
        var router = HTTPRouter()
        SimulatorRoutes.registerV3API(simulator, in: &router)
        SimulatorRoutes.registerControl(simulator, in: &router)
        server = HTTPServer(router: router)
        base = "http://127.0.0.1:\(try await server.start().port)"
        var notifyRouter = HTTPRouter()
        let inbox = self.inbox
        notifyRouter.add(.post, "/notify") { request in
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name] = field.value }
            let outcome: String
            if let opener = inbox.opener.withLock({ $0 }) {
                do throws(WeChatPayV3Error) {
                    _ = try opener.open(headers: headers, body: request.body, now: Date())
                    outcome = "opened"
                } catch {
                    outcome = error.code.rawValue
                }
            } else {
                outcome = "no_opener"
            }
            inbox.received.withLock { $0.append((headers, request.body, outcome)) }
            return outcome == "opened" ? HTTPServerResponse(status: 204) : HTTPServerResponse(status: 400, body: V3NotifyReply.failed(status: 400, message: "refused").body)
        }
        receiver = HTTPServer(router: notifyRouter)
        notifyURL = "http://127.0.0.1:\(try await receiver.start().port)/notify"
        loop = Task { await simulator.run() }
    }

    func stop() async {
        loop.cancel()
        await server.shutdown(gracePeriod: .seconds(2))
        await receiver.shutdown(gracePeriod: .seconds(2))
        await client.shutdown()
    }

    /// Deadlines for a starved machine (the suite runs beside other builds): never a measure of speed.
    static let generous = HTTPClient.Timeouts(connect: .seconds(60), total: .seconds(120))

    var signer: MerchantSigner {
        MerchantSigner(mchID: "1900000109", serialNumber: merchantCertificate.serialNumberHex!, key: merchantKey)
    }

    var publicKey: WeChatPayPublicKey { try! WeChatPayPublicKey(id: Self.publicKeyID, key: wechatpayKey.publicKey) }

    /// Sends a signed request; the raw answer.
    func send(_ request: V3Request, serial: String? = nil, signer: MerchantSigner? = nil) async throws -> HTTPClientResponse {
        let headers = (signer ?? self.signer).headers(for: request, timestamp: Int64(Date().timeIntervalSince1970),
                                                      nonce: RandomBytes.take(16).map { String($0, radix: 16) }.joined(),
                                                      wechatpaySerial: serial)
        return try await client.execute(HTTPClientRequest(method: request.method == "GET" ? .get : .post, url: base + request.url,
                                                          headers: HTTPHeaders(headers.map { ($0.key, $0.value) }), body: request.body,
                                                          timeouts: Self.generous))
    }

    func control(_ path: String, method: HTTPMethod = .post, body: String = "{}") async throws -> HTTPClientResponse {
        try await client.execute(HTTPClientRequest(method: method, url: base + path, headers: ["Content-Type": "application/json"],
                                                   body: Array(body.utf8), timeouts: Self.generous))
    }

    /// Waits (bounded) until `count` notify attempts have arrived.
    func waitForNotifies(_ count: Int) async throws -> [(headers: [String: String], body: [UInt8], outcome: String)] {
        let deadline = ContinuousClock.now + .seconds(180)
        while inbox.received.withLock({ $0.count }) < count && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        return inbox.received.withLock { $0 }
    }
}

extension HTTPClientResponse {
    var headerDictionary: [String: String] {
        var result: [String: String] = [:]
        for field in headers { result[field.name] = field.value }
        return result
    }
}
