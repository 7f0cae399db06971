// SPDX-License-Identifier: Apache-2.0
import Synchronization
import Testing
import WeChatPay

/// A fake WeChat Pay behind `InMemoryTransport`: it checks every request as WeChat would (strict
/// XML, a known path, the envelope, the signature with the request's own sign_type), records what
/// it saw, and answers with the test's closure.
final class FakeWeChatPay: Sendable {
    /// One request as the fake received it.
    struct Received: Sendable {
        var request: TransportRequest
        var api: WeChatPayAPI?
        var sandbox: Bool
        var fields: Fields
        var envelope: RequestEnvelope?
        /// Whether `sign` verified with the key the fake expects and the declared sign_type.
        var signatureVerified: Bool
    }

    typealias Responder = @Sendable (Received) throws(TransportError) -> TransportResponse

    let merchant: MerchantCredentials
    /// The key requests must be signed with (the sandbox key for sandbox calls).
    let requestKey: APIKey
    private let responder: Responder
    private let log = Mutex<[Received]>([])

    init(merchant: MerchantCredentials = TestMerchant.credentials, requestKey: APIKey? = nil, responder: @escaping Responder) {
        self.merchant = merchant
        self.requestKey = requestKey ?? merchant.key
        self.responder = responder
    }

    var received: [Received] { log.withLock { $0 } }

    var transport: InMemoryTransport {
        InMemoryTransport { request throws(TransportError) in try self.handle(request) }
    }

    func client(nonces: any NonceSource = CountingNonceSource(prefix: "T"), environment: WeChatPayEnvironment = .production)
        -> WeChatPayClient
    {
        WeChatPayClient(merchant: merchant, environment: environment, transport: transport, nonces: nonces)
    }

    private func handle(_ request: TransportRequest) throws(TransportError) -> TransportResponse {
        let route = WeChatPayAPI.route(path: request.path)
        let fields = (try? FlatXML.decode(request.body)) ?? Fields()
        let envelope = route.flatMap { try? RequestEnvelope(fields: fields, api: $0.api) }
        var verified = false
        if let envelope {
            verified = (try? Signer(key: requestKey).verify(fields, expected: envelope.signType)) != nil
        }
        let received = Received(
            request: request, api: route?.api, sandbox: route?.sandbox ?? false, fields: fields, envelope: envelope,
            signatureVerified: verified)
        log.withLock { $0.append(received) }
        return try responder(received)
    }

    /// 200 with `fields` encoded as XML.
    static func reply(_ fields: Fields, status: Int = 200) -> TransportResponse {
        do {
            return TransportResponse(status: status, body: try FlatXML.encode(fields))
        } catch {
            Issue.record("the test's reply cannot be encoded: \(error)")
            return TransportResponse(status: status, body: [])
        }
    }
}

/// The signed SUCCESS/SUCCESS reply WeChat would send the test merchant for `received` (same
/// algorithm as the request, unless `signType` says otherwise).
func signedSuccess(_ business: Fields, _ received: FakeWeChatPay.Received, key: APIKey? = nil, signType: SignType? = nil) -> Fields {
    ResponseEnvelope.success(
        business, appID: TestMerchant.credentials.appID, mchID: TestMerchant.credentials.mchID, nonceStr: "R0000000001",
        signer: Signer(key: key ?? TestMerchant.key), signType: signType ?? received.envelope?.signType ?? .hmacSHA256)
}

/// The signed SUCCESS/FAIL reply with `code` WeChat would send the test merchant.
func signedFailure(_ code: WeChatPayErrorCode, _ received: FakeWeChatPay.Received, key: APIKey? = nil) -> Fields {
    ResponseEnvelope.businessFailure(
        code, description: "描述 \(code.rawValue)", appID: TestMerchant.credentials.appID,
        mchID: TestMerchant.credentials.mchID, nonceStr: "R0000000001", signer: Signer(key: key ?? TestMerchant.key),
        signType: received.envelope?.signType ?? .hmacSHA256)
}
