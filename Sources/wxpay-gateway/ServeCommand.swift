// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Gateway
import HTTP
import Storage
import WeChatPay
import WeChatPayHTTPTransport
import WeChatPaySimulator

/// `wxpay-gateway serve`: the gateway, configured from the environment (see the README's table).
/// With no WXPAY_MCH_ID it runs in demo mode: SQLite plus the embedded WeChat Pay simulator.
enum ServeCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.isEmpty else {
            FileHandle.standardError.write(Data("serve: takes no arguments; configure it with the environment (see README)\n".utf8))
            return 64
        }
        let resources: GatewayResources
        switch await GatewayResources.open(for: "serve") {
        case .success(let opened): resources = opened
        case .failure(let failure): return failure.status
        }
        let (configuration, store, client) = (resources.configuration, resources.store, resources.client)

        let logger = Logger(label: "wxpay-gateway", level: logLevel(), handler: JSONLinesLogHandler())

        let metrics = MetricsRegistry()
        guard let refunds = refundConfiguration(configuration, metrics: metrics, logger: logger) else {
            await resources.close()
            return 78
        }
        var simulator: WeChatPaySimulator?
        var wechat: WeChatConnection?
        let transport: any WeChatPayTransport
        if configuration.demo {
            let embedded = WeChatPaySimulator(
                // A fresh seed per run: the simulator forgets its orders on restart, and the ids it
                // hands out must not repeat those already in the demo database.
                configuration: SimulatorConfiguration(appID: configuration.appID, mchID: configuration.mchID,
                                                      key: configuration.apiKey, seed: UInt64.random(in: 1...UInt64.max)),
                notifySender: HTTPNotifySender(client: client))
            simulator = embedded
            transport = SimulatorTransport(simulator: embedded)
        } else {
            do {
                wechat = try WeChatConnection.open(configuration, refunds: refunds, sharedClient: client)
            } catch {
                FileHandle.standardError.write(Data("serve: cannot start the HTTP client for WeChat: \(error)\n".utf8))
                await resources.close()
                return 70
            }
            transport = wechat!.transport
        }
        let service = OrderService(configuration: configuration, store: store, transport: transport, metrics: metrics,
                                   logger: logger)
        let refundService = RefundService(orders: service, store: store, configuration: refunds)
        var router = HTTPRouter()
        GatewayAPI(service: service, logger: logger).register(in: &router)
        if let simulator { SimulatorRoutes.registerControl(simulator, in: &router) }

        let connections: Int
        do {
            connections = try maxConnections()
        } catch {
            FileHandle.standardError.write(Data("serve: configuration error: \(error)\n".utf8))
            return 78
        }
        let server = HTTPServer(router: router, configuration: HTTPServerConfiguration().with {
            $0.host = configuration.listenHost
            $0.port = UInt16(configuration.listenPort)
            $0.connectionLimit = connections
        })
        let address: HTTPServerSocketAddress
        do {
            address = try await server.start()
        } catch {
            FileHandle.standardError.write(Data("serve: cannot listen on \(configuration.listenHost):\(configuration.listenPort): \(error)\n".utf8))
            await resources.close()
            return 69
        }
        let base = "http://\(address)"
        if ProcessInfo.processInfo.environment["WXPAY_NOTIFY_URL"] == nil {
            service.useNotifyURL("\(base)/wechat/notify")
        }
        if ProcessInfo.processInfo.environment["WXPAY_REFUND_NOTIFY_URL"] == nil {
            refundService.useNotifyURL("\(base)/wechat/refund-notify")
        }
        FileHandle.standardOutput.write(Data(banner(configuration, base: base).utf8))
        logger.notice("listening", ["address": base, "demo": String(configuration.demo)])

        let notifyLoop = simulator.map { simulator in Task { await simulator.run() } }
        let services = startRecovery(configuration, service: service, store: store, client: client, metrics: metrics,
                                     logger: logger)
        let signal = await Signals.waitForTermination()
        logger.notice("shutting down", ["signal": String(signal)])
        notifyLoop?.cancel()
        await server.shutdown(gracePeriod: .seconds(10))
        // The recovery services finish their current call and stop before the store closes.
        for task in services.reversed() { task.cancel() }
        for task in services.reversed() { await task.value }
        await wechat?.close()
        await resources.close()
        return 0
    }

    /// The reconciler, the fulfilment dispatcher and the daily bill job, started once the server
    /// listens; each runs until its task is cancelled.
    private static func startRecovery(_ configuration: GatewayConfiguration, service: OrderService, store: any OrderStore,
                                      client: HTTPClient, metrics: MetricsRegistry, logger: Logger) -> [Task<Void, Never>] {
        var services: [Task<Void, Never>] = []
        if configuration.reconcileInterval > 0 {
            let reconciler = Reconciler(service: service)
            services.append(Task { await reconciler.run() })
        } else {
            logger.notice("reconciler off (GATEWAY_RECONCILE_INTERVAL=0)")
        }
        if let url = configuration.fulfilmentURL, let secret = configuration.fulfilmentSecret {
            let dispatcher = FulfilmentDispatcher(
                store: store, configuration: .init(url: url, secret: secret), transport: HTTPFulfilmentTransport(client: client),
                metrics: metrics, logger: logger)
            services.append(Task { await dispatcher.run() })
        } else {
            logger.notice("fulfilment dispatcher off: GATEWAY_FULFILMENT_URL is not set; order.paid events stay in the outbox")
        }
        if configuration.billReconcile {
            let daily = DailyBillReconciliation(service: service)
            services.append(Task { await daily.run() })
        }
        return services
    }

    /// GATEWAY_MAX_CONNECTIONS (default 16,384): every `wait` long-poll holds a connection, so the
    /// limit is what bounds how many apps can poll at once. The soft RLIMIT_NOFILE is raised to
    /// fit it plus 256 descriptors for the database, the client and the logs. A configured limit
    /// the hard limit cannot fit is an error; the default shrinks to fit instead, so demo mode
    /// still starts on a machine with a small hard limit.
    static func maxConnections() throws -> Int {
        let configured = ProcessInfo.processInfo.environment["GATEWAY_MAX_CONNECTIONS"]
        guard let wanted = Int(configured ?? "16384"), (16...1_000_000).contains(wanted) else {
            throw ConfigurationError(variable: "GATEWAY_MAX_CONNECTIONS", expected: "a number from 16 to 1000000")
        }
        let reserve = 256
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        getrlimit(resource, &limit)
        let needed = rlim_t(wanted + reserve)
        if limit.rlim_cur < needed {
            limit.rlim_cur = min(needed, limit.rlim_max)
            setrlimit(resource, &limit)
            getrlimit(resource, &limit)
        }
        if limit.rlim_cur >= needed { return wanted }
        guard configured == nil, limit.rlim_cur > rlim_t(reserve + 16) else {
            throw ConfigurationError(variable: "GATEWAY_MAX_CONNECTIONS",
                                     expected: "at most the open-file limit minus \(reserve) (ulimit -n is \(limit.rlim_cur))")
        }
        return Int(limit.rlim_cur) - reserve
    }

    private static func logLevel() -> Logger.Level {
        switch ProcessInfo.processInfo.environment["GATEWAY_LOG_LEVEL"]?.lowercased() {
        case "debug": .debug
        case "notice": .notice
        case "warning": .warning
        case "error": .error
        default: .info
        }
    }

    /// The first lines printed: the address, and in demo mode that it is demo mode and how to try it.
    static func banner(_ configuration: GatewayConfiguration, base: String) -> String {
        guard configuration.demo else {
            return "wxpay-gateway listening on \(base) (merchant \(configuration.mchID), \(configuration.signType))\n"
        }
        let token = configuration.clientTokens.first ?? ""
        let support = configuration.supportTokens.first ?? ""
        return """
            wxpay-gateway DEMO MODE: the embedded WeChat Pay simulator plays WeChat; no real money moves.
            listening on \(base)   client token: \(token)   support token: \(support)
            try it:
              curl -s -X POST \(base)/v1/orders -H 'Authorization: Bearer \(token)' \\
                   -d '{"amount":990,"description":"Swift course","client_ip":"203.0.113.7","out_trade_no":"demo-0001"}'
              curl -s -X POST \(base)/simulator/orders/demo-0001/pay
              curl -s '\(base)/v1/orders/demo-0001?wait=10' -H 'Authorization: Bearer \(token)'
              curl -s '\(base)/v1/support/orders?out_trade_no=demo-0001' -H 'Authorization: Bearer \(support)'
              curl -s -X POST \(base)/v1/orders/demo-0001/refunds -H 'Authorization: Bearer \(token)' \\
                   -d '{"amount":300,"reason":"bought by mistake","out_refund_no":"demo-r1"}'
              curl -s -X POST \(base)/simulator/refunds/demo-r1/complete -d '{"status":"SUCCESS"}'

            """
    }
}
