// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import HTTPClientTestSupport
import Storage
import StoreTestSupport
import Synchronization
import WeChatPay
import WeChatPayHTTPTransport
import WeChatPaySimulator

/// The gateway with refunds, and the simulator as WeChat, reachable in process or entirely over
/// sockets on 127.0.0.1: the client talks HTTP to the gateway, the gateway HTTPS to the simulator
/// with the merchant certificate (the simulator's TLS demands one its CA signed for refunds), and
/// the simulator posts payment and refund notifies back over HTTP.
final class RefundRig: Sendable {
    enum Mode: String, CaseIterable, Sendable, CustomStringConvertible {
        case inProcess = "in-process"
        case sockets
        var description: String { rawValue }
    }

    /// Which certificate the gateway presents to the simulator (sockets only).
    enum Certificate: Sendable {
        case pem, pkcs12, rogue, none
    }

    static let client = GatewayConfiguration.demoClientToken
    static let support = GatewayConfiguration.demoSupportToken

    let mode: Mode
    let simulator: WeChatPaySimulator
    let clock: ScaledClock
    let service: OrderService
    let refunds: RefundService
    let store: TestStore
    let metrics: MetricsRegistry
    private let router: HTTPRouter
    private let servers: [HTTPServer]
    private let httpClient: HTTPClient?
    private let base: String
    private let database: TestDatabase
    private let notifyLoop: Task<Void, Never>

    /// - Parameters:
    ///   - refundsOn: false starts the gateway without a certificate (refunds answer 503).
    ///   - completeRefundsAfter: the simulator completes accepted refunds SUCCESS after these seconds.
    static func start(_ mode: Mode, store kind: StoreKind = .sqlite, certificate: Certificate = .pem, refundsOn: Bool = true,
                      completeRefundsAfter: Double? = nil, environment: [String: String] = [:]) async throws -> RefundRig {
        var env = ["GATEWAY_POLL_INTERVAL": "0.2", "GATEWAY_REFUND_QUERY_AFTER": "0"]
        env.merge(environment) { $1 }
        let configuration = try GatewayConfiguration(environment: Environment(env), demo: true)
        let database = try await TestDatabase(kind)
        let store = try await database.open()
        let clock = ScaledClock(start: Date(), scale: 1)
        let target = NotifyTarget()
        let sockets = mode == .sockets
        let httpClient = sockets ? try HTTPClient(configuration: .init(tls: .init(caFile: TestCertificates.ca))) : nil
        let sender: any NotifySender = httpClient.map { HTTPNotifySender(client: $0) }
            ?? ClosureNotifySender { body, url in await target.deliver(body, url: url) }
        let simulator = WeChatPaySimulator(
            // Short retries and a long reply timeout: on a loaded machine a notify attempt may time
            // out, and WeChat's 15 s first retry would outlast a test's patience.
            configuration: SimulatorConfiguration(appID: configuration.appID, mchID: configuration.mchID,
                                                  key: configuration.apiKey, notifyRetryIntervals: [0.5, 1, 2, 4, 8, 15],
                                                  notifyTimeout: 30, refundCompletionDelay: completeRefundsAfter),
            clock: clock, notifySender: sender)
        var servers: [HTTPServer] = []
        let transport: any WeChatPayTransport
        var identity: TLSClientIdentity?
        if let httpClient {
            simulator.setRequiresClientCertificates(true)
            var wechatRouter = HTTPRouter()
            SimulatorRoutes.registerAPI(simulator, in: &wechatRouter)
            let wechat = HTTPServer(router: wechatRouter, configuration: HTTPServerConfiguration().with {
                $0.tls = HTTPServerConfiguration.TLS(
                    certificatePEM: try! String(contentsOfFile: TestCertificates.serverCertificate, encoding: .utf8),
                    privateKeyPEM: try! String(contentsOfFile: TestCertificates.serverKey, encoding: .utf8),
                    clientCAPEM: try! String(contentsOfFile: TestCertificates.ca, encoding: .utf8))
            })
            let address = try await wechat.start()
            servers.append(wechat)
            identity = switch certificate {
            case .pem: TestCertificates.clientPEMIdentity
            case .pkcs12: TestCertificates.clientPKCS12Identity
            case .rogue: TestCertificates.rogueClientIdentity
            case .none: nil
            }
            let https = WeChatPayHTTPTransport(client: httpClient, configuration: .init(
                primaryBaseURL: "https://127.0.0.1:\(address.port)", backupBaseURL: nil, clientIdentity: identity,
                timeouts: .init(connect: .seconds(10), total: .seconds(60))))
            // No certificate at all: the request still goes out (as from a client that forgot to
            // attach one), so the simulator's refusal is what is tested, not the transport's.
            transport = identity == nil ? WithoutClientCertificate(https) : https
        } else {
            transport = SimulatorTransport(simulator: simulator)
        }
        let metrics = MetricsRegistry()
        let service = OrderService(configuration: configuration, store: store, transport: transport, metrics: metrics,
                                   now: { clock.now() })
        // Over sockets the gateway talks mutual TLS (a gateway presenting no certificate at all still
        // has refunds configured: the test is the simulator's refusal); `refundsOn: false` is a
        // gateway without a certificate.
        var refundMode = sockets ? GatewayConfiguration.RefundMode.mutualTLS(identity ?? TestCertificates.clientPEMIdentity)
            : configuration.refundMode
        if !refundsOn { refundMode = .off }
        let refunds = RefundService(orders: service, store: store, mode: refundMode)
        target.set(service)
        var router = HTTPRouter()
        GatewayAPI(service: service).register(in: &router)
        var base = ""
        if sockets {
            let gateway = HTTPServer(router: router)
            let address = try await gateway.start()
            base = "http://127.0.0.1:\(address.port)"
            service.useNotifyURL(base + "/wechat/notify")
            refunds.useNotifyURL(base + "/wechat/refund-notify")
            servers.append(gateway)
        } else {
            refunds.useNotifyURL("http://gateway.invalid/wechat/refund-notify")
        }
        return RefundRig(mode: mode, simulator: simulator, clock: clock, service: service, refunds: refunds, store: store,
                         metrics: metrics, router: router, servers: servers, httpClient: httpClient, base: base,
                         database: database)
    }

    private init(mode: Mode, simulator: WeChatPaySimulator, clock: ScaledClock, service: OrderService, refunds: RefundService,
                 store: TestStore, metrics: MetricsRegistry, router: HTTPRouter, servers: [HTTPServer],
                 httpClient: HTTPClient?, base: String, database: TestDatabase) {
        self.mode = mode
        self.simulator = simulator
        self.clock = clock
        self.service = service
        self.refunds = refunds
        self.store = store
        self.metrics = metrics
        self.router = router
        self.servers = servers
        self.httpClient = httpClient
        self.base = base
        self.database = database
        notifyLoop = Task { await simulator.run() }
    }

    func stop() async {
        notifyLoop.cancel()
        for server in servers { await server.shutdown(gracePeriod: .seconds(2)) }
        await httpClient?.shutdown()
        await store.close()
        await database.remove()
    }

    /// One request to the gateway, by whichever path this rig uses.
    func send(_ method: HTTPMethod, _ path: String, token: String? = RefundRig.client, body: String? = nil)
        async throws -> GatewayRig.Response
    {
        var headers: [String: String] = [:]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        let bytes = Array((body ?? "").utf8)
        switch mode {
        case .inProcess:
            let parts = path.split(separator: "?", maxSplits: 1)
            var request = HTTPServerRequest(method: method, path: String(parts[0]))
            if parts.count > 1 { request.query = HTTPServerQuery(parsing: parts[1]) ?? HTTPServerQuery() }
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            request.body = bytes
            let response = await router.respond(to: request)
            return GatewayRig.Response(status: response.status, body: response.body, headers: [:])
        case .sockets:
            let response = try await httpClient!.execute(HTTPClientRequest(
                method: method, url: base + path, headers: HTTPHeaders(headers.map { ($0.key, $0.value) }), body: bytes,
                timeouts: .init(connect: .seconds(60), total: .seconds(180))))
            return GatewayRig.Response(status: response.status, body: response.body, headers: [:])
        }
    }

    /// Creates an order and has WeChat take the payment; waits until the gateway settled it.
    func paidOrder(_ outTradeNo: String, amount: Int = 990) async throws {
        let created = try await send(.post, "/v1/orders", body: #"{"amount":\#(amount),"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)"}"#)
        guard created.status == 201 else { throw RigError.setup("create answered \(created.status)") }
        try simulator.pay(outTradeNo: outTradeNo)
        let paid = await Battery.eventually(timeout: 60) { (try? await self.store.order(outTradeNo))??.state == .success }
        guard paid else { throw RigError.setup("\(outTradeNo) was not settled") }
    }

    /// `POST /v1/orders/{out_trade_no}/refunds`.
    func refund(_ outTradeNo: String, amount: Int, reason: String = "bought by mistake", number: String? = nil)
        async throws -> GatewayRig.Response
    {
        let numbered = number.map { #","out_refund_no":"\#($0)""# } ?? ""
        return try await send(.post, "/v1/orders/\(outTradeNo)/refunds",
                              body: #"{"amount":\#(amount),"reason":"\#(reason)"\#(numbered)}"#)
    }

    /// Waits (bounded) until the refund is in `state` locally.
    func eventually(_ outRefundNo: String, is state: RefundState, timeout: Double = 60) async -> Bool {
        await Battery.eventually(timeout: timeout) { (try? await self.store.refund(outRefundNo))??.state == state }
    }

    /// The order's outbox events of `type`.
    func events(_ outTradeNo: String, type: String) async throws -> [OutboxEvent] {
        try await store.outboxEvents(outTradeNo).filter { $0.type == type }
    }

    /// Refund requests WeChat received (its request counter for the refund path).
    var upstreamRefundRequests: Int { simulator.counters.requests["/secapi/pay/refund"] ?? 0 }

    /// A refund notify for a stored refund as WeChat sends it, with its decrypted fields changed,
    /// encrypted with `key`.
    func refundNotify(_ outRefundNo: String, status: RefundNotification.Status = .success,
                      key: APIKey = APIKey(GatewayConfiguration.demoKey),
                      change: (inout RefundNotifyBuilder) -> Void = { _ in }) async throws -> String {
        guard let refund = try await store.refund(outRefundNo) else { throw RigError.setup("no refund \(outRefundNo)") }
        let order = try await store.order(refund.outTradeNo)
        var builder = RefundNotifyBuilder(
            merchant: MerchantIdentity(appID: GatewayConfiguration.demoAppID, mchID: GatewayConfiguration.demoMchID),
            transactionID: order?.transactionID ?? "", outTradeNo: refund.outTradeNo,
            refundID: refund.refundID ?? "50300000000000000000000000001", outRefundNo: outRefundNo,
            totalFee: refund.totalFee, refundFee: refund.amount, nonce: "forgedNonce")
        builder.refundStatus = status
        builder.successTime = status == .success ? Date() : nil
        change(&builder)
        return String(decoding: try FlatXML.encode(try builder.fields(encryptedWith: key)), as: UTF8.self)
    }
}

enum RigError: Error {
    case setup(String)
}

extension NotifyTarget {
    /// Payment notifies to the order service, refund notifies to its refund service, by URL.
    func deliver(_ body: [UInt8], url: String) async -> [UInt8]? {
        if url.hasSuffix("/wechat/refund-notify") { return await orderService?.refunds?.handleNotify(body) }
        return await deliver(body)
    }
}

/// Sends `/secapi/` requests without the client certificate they need.
struct WithoutClientCertificate: WeChatPayTransport {
    let wrapped: any WeChatPayTransport
    init(_ wrapped: any WeChatPayTransport) { self.wrapped = wrapped }

    func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        var anonymous = request
        anonymous.needsClientCertificate = false
        return try await wrapped.send(anonymous)
    }
}
