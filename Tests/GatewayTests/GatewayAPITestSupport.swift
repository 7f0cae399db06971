// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
@testable import Gateway
@testable import GatewayConsole
import HTTP
import HTTPClientTestSupport
import Observability
import StorageCore
import StoreTestSupport
import Synchronization
import WeChatPay
import WeChatPayHTTPTransport
import WeChatPaySimulator
import WeChatPayV3

/// The one gateway rig: every flow composed as `serve` composes them (`GatewayServices`, and the
/// console when asked), on a fresh database of either store kind (a SQLite file in a temp
/// directory, or a PostgreSQL schema of its own), with the simulator as WeChat. Reachable in
/// process (the router answers directly, the simulator's notifies are handed to the flows in
/// memory) or over real sockets on 127.0.0.1 (the gateway and the notify path both go through
/// HTTP). Service-level tests call the flows directly (`services`, `create`, `order`).
final class GatewayRig: Sendable {
    enum Mode: String, CaseIterable, Sendable, CustomStringConvertible {
        case inProcess = "in-process"
        case sockets
        var description: String { rawValue }
    }

    struct Response: Sendable {
        var status: Int
        var body: [UInt8]
        var headers: [String: String]
        /// Every Set-Cookie header, in order (`headers` keeps one value per name).
        var setCookies: [String] = []
        var json: [String: Any] { GatewayRig.object(body) }
        var error: [String: Any]? { json["error"] as? [String: Any] }
    }

    static let client = GatewayConfiguration.demoClientToken
    static let support = GatewayConfiguration.demoSupportToken

    /// What the gateway is composed of beyond its orders: how refunds reach WeChat, the App Store's
    /// clients (iOS purchases on), the support console's user file.
    struct Composition: Sendable {
        /// Default: the configuration's (demo mode: the embedded simulator).
        var refundMode: GatewayConfiguration.RefundMode?
        var appStore: AppStoreClients?
        var recovery: AppStoreRecoveryPolicy?
        /// A user file: the console is on.
        var consoleUsers: String?
        var consolePace = LoginPace()
        /// The merchant's apps in place of demo mode's one of each kind.
        var apps: WeChatApps?
    }

    let mode: Mode
    let simulator: WeChatPaySimulator
    let clock: ScaledClock
    let services: GatewayServices
    let console: Console?
    let store: TestStore
    private let router: HTTPRouter
    /// The gateway's server (`.sockets`), and WeChat's (`.mutualTLS`).
    private let servers: [HTTPServer]
    private let httpClient: HTTPClient?
    /// The gateway's address in `.sockets` mode ("" in process).
    let base: String
    /// The rig's database (a SQLite file or a PostgreSQL schema), removed by `stop`.
    let database: TestDatabase
    private let notifyLoop: Task<Void, Never>

    /// How the gateway reaches WeChat (the simulator).
    enum WeChatLink: Sendable {
        /// In process (the simulator's own transport), in either mode.
        case inProcess
        /// Over HTTPS on 127.0.0.1 (`.sockets` only): the simulator requires a client certificate its
        /// CA signed for `/secapi/` calls, and the gateway presents `identity`. With none at all the
        /// request still goes out (as from a client that forgot to attach one), so what is tested is
        /// the simulator's refusal, not the transport's.
        case mutualTLS(TLSClientIdentity?)
        /// Over plain HTTP on 127.0.0.1 (`.sockets` only), v2 and v3 alike: the libcurl transport
        /// production uses, against the simulator's HTTP routes.
        case http
    }

    /// `environment`: more configuration variables (demo mode's defaults otherwise, app tokens and
    /// the demo catalog included).
    /// - Parameters:
    ///   - signType: the merchant's algorithm (demo mode takes no `WXPAY_*` variable; the tests'
    ///     merchant signs with either).
    ///   - clockScale: simulated seconds per real second (0 freezes the clock, so only
    ///     `clock.advance` moves it: for tests whose outcome must not depend on the machine's speed).
    static func start(_ mode: Mode, store kind: StoreKind = .sqlite, signType: SignType? = nil, pollInterval: Double = 0.2,
                      environment: [String: String] = [:], clockScale: Double = 1, logger: Logger = .disabled,
                      wechat: WeChatLink = .inProcess, composition: Composition = Composition(), v3: V3Setup? = nil,
                      simulator tune: (inout SimulatorConfiguration) -> Void = { _ in }) async throws -> GatewayRig {
        try await start(mode, database: try await TestDatabase(kind), signType: signType, pollInterval: pollInterval,
                        environment: environment, clockScale: clockScale, logger: logger, wechat: wechat,
                        composition: composition, v3: v3, simulator: tune)
    }

    /// A rig on a given database (which `stop` removes). `tune` changes the simulator's settings;
    /// `v3` makes both sides speak API v3 too (V3RigSupport.swift).
    static func start(_ mode: Mode, database: TestDatabase, signType: SignType? = nil, pollInterval: Double = 0.2,
                      environment: [String: String] = [:], clockScale: Double = 1, logger: Logger = .disabled,
                      wechat: WeChatLink = .inProcess, composition: Composition = Composition(), v3: V3Setup? = nil,
                      simulator tune: (inout SimulatorConfiguration) -> Void = { _ in }) async throws -> GatewayRig {
        var variables = environment
        variables["GATEWAY_POLL_INTERVAL"] = String(pollInterval)
        var configuration = try GatewayConfiguration(environment: Environment(variables), demo: true)
        if let signType { configuration.signType = signType }
        if let apps = composition.apps { configuration.apps = apps }
        let store = try await database.open()
        // Simulated time runs with real time (unless frozen), so prepay lifetimes and close windows
        // can be crossed with `clock.advance` while the gateway's own clock follows the simulator's.
        let clock = ScaledClock(start: Date(), scale: clockScale)
        let target = NotifyTarget()
        var tls = false
        if case .mutualTLS = wechat {
            precondition(mode == .sockets, "WeChat over HTTPS needs the sockets mode")
            tls = true
        }
        if case .http = wechat { precondition(mode == .sockets, "WeChat over HTTP needs the sockets mode") }
        let httpClient = mode == .sockets
            ? try HTTPClient(configuration: tls ? .init(tls: .init(caFile: TestCertificates.ca)) : .init()) : nil
        let sender: any NotifySender = httpClient.map { HTTPNotifySender(client: $0) }
            ?? ClosureNotifySender(withHeaders: { body, headers, url in await target.deliver(body, headers: headers, url: url) })
        var simulatorConfiguration = SimulatorConfiguration(appID: configuration.appID, mchID: configuration.mchID,
                                                            key: APIKey(GatewayConfiguration.demoKey),
                                                            otherAppIDs: configuration.apps.all.map(\.appID))
        if let v3 { simulatorConfiguration.v3 = v3.simulator }
        tune(&simulatorConfiguration)
        let simulator = WeChatPaySimulator(configuration: simulatorConfiguration, clock: clock, notifySender: sender)
        if let v3 {
            configuration.v3.apiVersion = v3.newOrders
            configuration.v3.credentials = v3.credentials(trusting: simulator.v3PlatformCertificates)
            // A v3-only merchant: WeChat still knows the v2 key, the gateway does not.
            if !v3.v2Key { configuration.apiKey = nil }
        }
        var servers: [HTTPServer] = []
        let transport: any WeChatPayTransport
        switch wechat {
        case .inProcess:
            transport = SimulatorTransport(simulator: simulator)
        case .mutualTLS(let identity):
            simulator.setRequiresClientCertificates(true)
            var wechatRouter = HTTPRouter()
            SimulatorRoutes.registerAPI(simulator, in: &wechatRouter)
            let wechatServer = HTTPServer(router: wechatRouter, configuration: HTTPServerConfiguration.patient.with {
                $0.tls = HTTPServerConfiguration.TLS(
                    certificatePEM: try! String(contentsOfFile: TestCertificates.serverCertificate, encoding: .utf8),
                    privateKeyPEM: try! String(contentsOfFile: TestCertificates.serverKey, encoding: .utf8),
                    clientCAPEM: try! String(contentsOfFile: TestCertificates.ca, encoding: .utf8))
            })
            let address = try await wechatServer.start()
            servers.append(wechatServer)
            let https = WeChatPayHTTPTransport(client: httpClient!, configuration: .init(
                primaryBaseURL: "https://127.0.0.1:\(address.port)", backupBaseURL: nil, clientIdentity: identity,
                timeouts: .init(connect: .seconds(10), total: .seconds(60))))
            transport = identity == nil ? WithoutClientCertificate(https) : https
        case .http:
            var wechatRouter = HTTPRouter()
            SimulatorRoutes.registerAPI(simulator, in: &wechatRouter)
            SimulatorRoutes.registerV3API(simulator, in: &wechatRouter)
            let wechatServer = HTTPServer(router: wechatRouter, configuration: .patient)
            let address = try await wechatServer.start()
            servers.append(wechatServer)
            transport = WeChatPayHTTPTransport(client: httpClient!, configuration: .init(
                primaryBaseURL: "http://127.0.0.1:\(address.port)", backupBaseURL: nil,
                timeouts: .init(connect: .seconds(60), total: .seconds(120))))
        }
        let services = GatewayServices(
            GatewayContext(configuration: configuration, store: store, transport: transport, refundMode: composition.refundMode,
                           logger: logger, now: { clock.now() }),
            appStore: composition.appStore, recovery: composition.recovery)
        let console = try composition.consoleUsers.map { path in
            Console(services: services, users: try ConsoleUserDirectory(path: path), pace: composition.consolePace)
        }
        target.set(services)
        var router = HTTPRouter()
        GatewayAPI(services: services).register(in: &router)
        Console.register(console, in: &router)
        SimulatorRoutes.registerControl(simulator, in: &router)
        var base = ""
        if mode == .sockets {
            let gateway = HTTPServer(router: router, configuration: .patient)
            let address = try await gateway.start()
            base = "http://127.0.0.1:\(address.port)"
            services.context.callbacks.use(base: base)
            servers.append(gateway)
        }
        return GatewayRig(mode: mode, simulator: simulator, clock: clock, services: services, console: console, store: store,
                          router: router, servers: servers, httpClient: httpClient, base: base, database: database)
    }

    private init(mode: Mode, simulator: WeChatPaySimulator, clock: ScaledClock, services: GatewayServices, console: Console?,
                 store: TestStore, router: HTTPRouter, servers: [HTTPServer], httpClient: HTTPClient?,
                 base: String, database: TestDatabase) {
        self.mode = mode
        self.simulator = simulator
        self.clock = clock
        self.services = services
        self.console = console
        self.store = store
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

    var metrics: MetricsRegistry { services.metrics }

    /// Creates an order through the create flow with a JSON body.
    func create(_ json: String) async throws(APIError) -> (created: Bool, body: [String: Any]) {
        let result = try await services.creation.create(try CreateOrderInput(json: Array(json.utf8)))
        return (result.created, Self.object(result.json))
    }

    /// The order as `GET` shows it, after waiting up to `wait` seconds for a final state.
    func order(_ outTradeNo: String, wait: Double = 0) async throws(APIError) -> [String: Any] {
        Self.object(try await services.queries.order(outTradeNo, wait: wait))
    }

    static func object(_ bytes: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
    }

    /// One request to the gateway, by whichever path this rig uses.
    func send(_ method: HTTPMethod, _ path: String, token: String? = GatewayRig.client, body: String? = nil,
              headers: [String: String] = [:]) async throws -> Response {
        try await send(method, path, token: token, bytes: Array((body ?? "").utf8), headers: headers)
    }

    /// One request with a body of any bytes (not necessarily UTF-8).
    func send(_ method: HTTPMethod, _ path: String, token: String? = GatewayRig.client, bytes: [UInt8],
              headers: [String: String] = [:]) async throws -> Response {
        var allHeaders = headers
        if let token { allHeaders["Authorization"] = "Bearer \(token)" }
        switch mode {
        case .inProcess:
            let parts = path.split(separator: "?", maxSplits: 1)
            // The peer a socket would show: this machine.
            var request = HTTPServerRequest(method: method, path: String(parts[0]),
                                            remoteAddress: HTTPServerSocketAddress(host: "127.0.0.1", port: 40000))
            request.query = parts.count > 1 ? (HTTPServerQuery(parsing: parts[1]) ?? HTTPServerQuery()) : HTTPServerQuery()
            for (name, value) in allHeaders { request.headers.add(name: name, value: value) }
            request.body = bytes
            let response = await router.respond(to: request)
            var flat: [String: String] = [:]
            for field in response.headers { flat[field.name] = field.value }
            return Response(status: response.status, body: response.body, headers: flat,
                            setCookies: response.headers.values(for: "Set-Cookie"))
        case .sockets:
            // Minutes, not seconds: with the whole suite running beside four other sessions (load
            // 50-90 on two cores) correct requests took over 40 s. A wait is at most 30 s.
            let response = try await httpClient!.execute(HTTPClientRequest(
                method: method, url: base + path, headers: HTTPHeaders(allHeaders.map { ($0.key, $0.value) }),
                body: bytes, timeouts: .init(connect: .seconds(60), total: .seconds(180))))
            var flat: [String: String] = [:]
            for field in response.headers { flat[field.name] = field.value }
            return Response(status: response.status, body: response.body, headers: flat,
                            setCookies: response.headers.values(for: "Set-Cookie"))
        }
    }

    /// Creates an order and returns its JSON.
    func createOrder(_ outTradeNo: String, amount: Int = 990) async throws -> Response {
        try await send(.post, "/v1/orders", body: #"{"amount":\#(amount),"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)","user_id":"u-42"}"#)
    }

    /// A payment notify for `outTradeNo` as WeChat would sign it, with changes applied.
    func forgedNotify(_ outTradeNo: String, amount: Int, key: APIKey = APIKey(GatewayConfiguration.demoKey),
                      signType: SignType = .hmacSHA256, nonce: String = "forged", result: PaymentNotifyBuilder.ResultCode = .success,
                      timeEnd: Date = Date(), change: (inout Fields) -> Void = { _ in }) -> String {
        var builder = PaymentNotifyBuilder(
            merchant: MerchantIdentity(appID: GatewayConfiguration.demoAppID, mchID: GatewayConfiguration.demoMchID),
            outTradeNo: outTradeNo, transactionID: "4200000000202611300000000001", totalFee: amount, timeEnd: timeEnd,
            nonce: nonce)
        builder.openid = "oForged"
        builder.result = result
        var fields = builder.fields(signedWith: Signer(key: key), signType: signType, declaresSignType: false)
        change(&fields)
        return String(decoding: (try? FlatXML.encode(fields)) ?? [], as: UTF8.self)
    }
}

extension NotifyTarget {
    /// Payment notifies to the order flows, refund notifies to the refund flow, v2's and v3's, by
    /// URL; a v3 reply other than 2xx is no acknowledgement (nil), as over HTTP.
    func deliver(_ body: [UInt8], headers: [String: String], url: String) async -> [UInt8]? {
        if url.hasSuffix("/wechat/v3/notify") || url.hasSuffix("/wechat/v3/refund-notify") {
            guard let services else { return nil }
            let reply = url.hasSuffix("/wechat/v3/notify") ? await services.notifies.handleV3Notify(headers: headers, body: body)
                : await services.refunds.handleV3Notify(headers: headers, body: body)
            return V3NotifyReply.acknowledges(status: reply.status) ? reply.body : nil
        }
        if url.hasSuffix("/wechat/refund-notify") { return await services?.refunds.handleNotify(body) }
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
