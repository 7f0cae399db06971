// SPDX-License-Identifier: Apache-2.0
import AppStoreSimulator
import Foundation
import Gateway
import GatewayConsole
import Glibc
import HTTP
import Lifecycle
import Observability
import SimulatorKit
import StorageCore
import WeChatPay
import WeChatPayHTTPTransport
import WeChatPaySimulator
import WeChatPayV3

/// `wxpay-gateway serve [--demo]`: the gateway, configured from the environment (see the README's
/// table). Production unless `--demo` asks for demo mode: SQLite plus the embedded WeChat Pay
/// simulator, on loopback only. A start that is not exactly one of the two is refused (exit 2).
enum ServeCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.allSatisfy({ $0 == "--demo" }) else {
            FileHandle.standardError.write(Data(
                "usage: wxpay-gateway serve [--demo]; configure it with the environment (see README)\n".utf8))
            return ExitStatus.usage
        }
        // Trapped from here, not from when the services are made: a stop or a reload asked for
        // while the gateway starts (opening the store, downloading certificates) must not end the
        // process by the signals' default action. A stop then comes as soon as it has started.
        let terminations = UnixSignals([SIGTERM, SIGINT])
        let hangUps = UnixSignals([SIGHUP])
        let demo = !arguments.isEmpty
        let resources: GatewayResources
        switch await GatewayResources.open(for: "serve", demo: demo) {
        case .success(let opened): resources = opened
        case .failure(let failure): return failure.status
        }
        let (configuration, store, client, logger) = (resources.configuration, resources.store, resources.client,
                                                      resources.logger)
        CrashPoint.arm(configuration.crashPoints)
        if !configuration.crashPoints.isEmpty {
            logger.warning("crash points armed (fault-injection build)", ["points": configuration.crashPoints
                .sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")])
        }

        let metrics = MetricsRegistry()
        var simulator: WeChatPaySimulator?
        var wechat: WeChatConnection?
        let transport: any WeChatPayTransport
        // Demo mode's one clock: the gateway and both embedded simulators keep the same time, so
        // moving it (either simulator's `clock/advance`) renews subscriptions, expires orders and
        // reads Apple's notification history on one calendar; a restart carries on from there.
        var demoClock: ScaledClock?
        if let path = configuration.demoClockPath {
            let reading = DemoClockFile.read(path)
            demoClock = DemoClockFile.clock(path: path, reading: reading) {
                logger.warning("demo mode's clock was moved but could not be kept for the next start", ["file": path])
            }
            switch reading {
            case .ahead(let seconds) where seconds >= 1:
                logger.warning("demo mode's clock carries on ahead of the wall clock, where clock/advance left it",
                               ["seconds_ahead": String(Int(seconds)), "file": path])
            case .unreadable:
                logger.warning("demo mode's clock file is not a file of 0 to \(Int(DemoClockFile.maximumOffset)) seconds; "
                               + "the clock starts at the wall clock (dates already written ahead of it stay as they are)",
                               ["file": path])
            default:
                break
            }
        }
        if configuration.demo, let demoClock {
            let embedded = WeChatPaySimulator(
                // A fresh seed per run: the simulator forgets its orders on restart, and the ids it
                // hands out must not repeat those already in the demo database.
                configuration: SimulatorConfiguration(appID: configuration.appID, mchID: configuration.mchID,
                                                      key: APIKey(GatewayConfiguration.demoKey), seed: UInt64.random(in: 1...UInt64.max),
                                                      v3: demoV3Simulator(configuration),
                                                      otherAppIDs: configuration.apps.all.map(\.appID)),
                clock: demoClock, notifySender: HTTPNotifySender(client: client))
            simulator = embedded
            transport = SimulatorTransport(simulator: embedded)
        } else {
            do {
                wechat = try WeChatConnection.open(configuration, sharedClient: client)
            } catch {
                FileHandle.standardError.write(Data("serve: cannot start the HTTP client for WeChat: \(error)\n".utf8))
                await resources.close()
                return ExitStatus.internal
            }
            transport = wechat!.transport
        }
        let now: @Sendable () -> Date
        var tokenClock: (@Sendable () -> Date)?
        if let demoClock {
            now = { demoClock.now() }
            // App tokens are minted by the wall clock (the banner's, `wxpay-gateway app-token`'s):
            // a moved demo clock must not expire them.
            tokenClock = { Date() }
        } else {
            now = TestClock.now(offsetFile: configuration.testClockFile)
        }
        let context = GatewayContext(configuration: configuration, store: store, transport: transport, metrics: metrics,
                                     logger: logger, now: now, tokenClock: tokenClock)
        if configuration.testClockFile != nil {
            logger.warning("the clock follows GATEWAY_TEST_CLOCK_FILE (fault-injection build)", [:])
        }
        // Whose the database is and what its sold products grant (ServeCommand+Bindings.swift).
        if let refusal = await bindDatabase(configuration, context: context) {
            FileHandle.standardError.write(Data((refusal.message + "\n").utf8))
            await resources.close()
            return refusal.status
        }
        // iOS purchases (ServeCommand+AppStore.swift): off, the App Store, or demo mode's simulator.
        let appStore: AppStoreConnection?
        do {
            appStore = try AppStoreConnection.open(configuration, catalog: context.catalog, client: client, metrics: metrics,
                                                   demoClock: demoClock)
        } catch {
            FileHandle.standardError.write(Data("serve: App Store purchases cannot start: \(error)\n".utf8))
            await resources.close()
            return ExitStatus.configuration
        }
        if !configuration.demo, let fingerprint = configuration.appStore.untrustedRootFingerprint {
            // Acknowledged at start (GatewayConfiguration.untrustedRootChecks), and still said once.
            logger.warning("App Store purchases are verified against a root that is not Apple Root CA - G3: whoever holds "
                           + "its key can sign purchases this gateway credits", ["root_sha256": fingerprint])
        }
        if !configuration.demo, configuration.appStore.serverAPICredentials != nil, !configuration.appStore.receiptVerification {
            // Acknowledged with APPSTORE_RECEIPT_VERIFICATION=off (GatewayConfiguration.receiptVerificationChecks).
            logger.warning("StoreKit 1 receipts are read without verifying their signature (APPSTORE_RECEIPT_VERIFICATION=off): "
                           + "a token-less or interrupted purchase reported with one credits nobody and waits for support "
                           + "(transaction_unclaimed); set APPSTORE_RECEIPT_ROOT_CA_FILE to Apple Root CA to verify them")
        }
        if !configuration.demo, let fingerprint = configuration.appStore.untrustedReceiptRootFingerprint {
            logger.warning("App receipts are verified against a root that is not Apple Root CA: whoever holds its key can "
                           + "sign receipts this gateway takes as a device's evidence", ["root_sha256": fingerprint])
        }
        // Every flow, composed once (GatewayServices). Refunds (ServeCommand+Refunds.swift): the
        // routes answer 503 while the mode is off.
        let services = GatewayServices(context, appStore: appStore?.clients)
        // Which version speaks what, said once: what goes through v3 for want of v2's key or certificate.
        for line in configuration.apiVersionsInWords { logger.notice("WeChat Pay: " + line) }
        // Going back from v3 with its variables removed strands what v3 still has in flight: said
        // at every start until they are set again or nothing of v3 is left in flight.
        if context.v3 == nil, let stranded = (try? await context.store.counts())?.inFlightByAPIVersion["v3"], stranded > 0 {
            let remedy = configuration.demo
                ? "demo mode is started with WXPAY_API_VERSION=v3 again"
                : "WXPAY_API_V3_KEY, WXPAY_MERCHANT_PRIVATE_KEY and the WeChat Pay public key or platform certificate are set again"
            logger.warning("orders or refunds created with WeChat Pay API v3 are still in flight, and API v3 is not configured: "
                           + "their notifies are refused, nothing asks WeChat Pay about them, and closing, refunding or rechecking "
                           + "them answers 503 api_version_not_configured, until " + remedy, ["in_flight": String(stranded)])
        }
        let certificateWatch = announceRefunds(services.refunds.mode, v3: context.v3 != nil, metrics: metrics, logger: logger)
        // The support console on top of them (ServeCommand+Console.swift); SIGHUP re-reads what
        // can change without a restart (the catalog file, the console's users).
        let reloads = ReloadHooks(metrics: metrics)
        guard let (console, consoleBanner) = await startConsole(configuration, services: services, reloads: reloads,
                                                                logger: logger)
        else {
            await resources.close()
            return ExitStatus.configuration
        }
        // The public address and, with GATEWAY_ADMIN_LISTEN, the operators' (ServeCommand+Listeners.swift).
        let routers = Listeners.routers(GatewayAPI(services: services, logger: logger), console: console,
                                        configuration: configuration)
        var router = routers.public
        if let simulator { SimulatorRoutes.registerControl(simulator, in: &router) }
        if let simulator = appStore?.simulator { AppStoreSimulatorRoutes.registerControl(simulator, in: &router) }

        let connections: Int
        do {
            connections = try maxConnections(configured: configuration.maxConnections)
        } catch {
            FileHandle.standardError.write(Data(
                (GatewayResources.refusal(error, command: "serve", demo: demo) + "\n").utf8))
            await resources.close()
            return ExitStatus.configuration
        }
        let listeners: Listeners
        do {
            listeners = try await Listeners.start(public: router, admin: routers.admin, configuration: configuration,
                                                  connections: connections)
        } catch {
            FileHandle.standardError.write(Data("serve: \(error)\n".utf8))
            await resources.close()
            return ExitStatus.unavailable
        }
        let base = listeners.base
        // Demo mode has no public URL: the simulator posts its notifies to the address bound.
        if configuration.demo {
            context.callbacks.use(base: base)
            appStore?.listening(at: base)
        }
        context.catalog.addReloadHooks(to: reloads, logger: logger, binding: context.store, now: context.now)
        // Started in this order, stopped in the reverse: the simulators stop sending, the listeners
        // drain, then the background work finishes its call in hand, all before the store closes.
        // SIGTERM and SIGINT go to the group, SIGHUP to `ReloadOnHangUp`, trapped since the first line.
        var running: [any Service] = certificateWatch.map { [$0] } ?? []
        running += background(services, client: client, logger: logger)
        if let iap = services.iap, iap.clients.serverAPI != nil { running.append(DailyAppStoreRefundCheck(iap: iap)) }
        running.append(ReloadOnHangUp(reloads, hangUps: hangUps))
        running.append(listeners.serving)
        if let simulator { running.append(BackgroundLoop(description: "WeChat Pay simulator's notifies") { await simulator.run() }) }
        if let simulator = appStore?.simulator {
            running.append(BackgroundLoop(description: "App Store simulator's notifications") { await simulator.run() })
        }
        let group = ServiceGroup(services: running, terminationSignals: terminations, logger: logger)

        let adminLine = listeners.admin == nil ? "" : "admin (metrics, health, console) on \(listeners.adminBase)\n"
        FileHandle.standardOutput.write(Data((banner(configuration, base: base) + adminLine
                                              + consoleBanner.line(base: listeners.adminBase)).utf8))
        logger.notice("listening", ["address": base, "admin": listeners.adminBase, "demo": String(configuration.demo),
                                    "database": configuration.databaseDescription])
        SystemdNotify.send("READY=1", socket: ProcessInfo.processInfo.environment["NOTIFY_SOCKET"])
        var status: Int32 = 0
        do {
            try await group.run()
        } catch {
            // The group logged which service stopped; the rest have stopped too.
            status = ExitStatus.internal
        }
        await wechat?.close()
        await resources.close()
        return status
    }

    /// What runs behind the listeners: the reconciler, the fulfilment dispatcher and the daily bill
    /// job, each as configured.
    private static func background(_ services: GatewayServices, client: HTTPClient, logger: Logger) -> [any Service] {
        let configuration = services.configuration
        var running: [any Service] = []
        if configuration.reconcileInterval > 0 {
            running.append(Reconciler(services: services))
        } else {
            logger.notice("reconciler off (GATEWAY_RECONCILE_INTERVAL=0)")
        }
        if let webhook = FulfilmentDispatcher.Configuration(configuration.fulfilment) {
            running.append(FulfilmentDispatcher(
                store: services.context.store, configuration: webhook, transport: HTTPFulfilmentTransport(client: client),
                metrics: services.metrics, logger: logger,
                entitlements: EntitlementEvents(store: services.context.store, catalog: services.context.catalog),
                // The clock the events were written by: demo mode's moves with `clock/advance`,
                // and an event dated by it would wait for the wall clock to catch up. The
                // signature's timestamp is the receiver's to check against its own clock.
                now: services.context.now, signingClock: { Date() }))
        } else {
            logger.notice("fulfilment dispatcher off: GATEWAY_FULFILMENT_URL is not set; order.paid events stay in the outbox")
        }
        if configuration.billReconcile { running.append(DailyBillReconciliation(services: services)) }
        if let refresh = PlatformCertificateRefresh(services.context) { running.append(refresh) }
        return running
    }

    /// GATEWAY_MAX_CONNECTIONS (default 16,384): every `wait` long-poll holds a connection, so the
    /// limit is what bounds how many apps can poll at once. The soft RLIMIT_NOFILE is raised to
    /// fit it plus 256 descriptors for the database, the client and the logs. A configured limit
    /// the hard limit cannot fit is refused; the default shrinks to fit instead, so demo mode
    /// still starts on a machine with a small hard limit.
    static func maxConnections(configured: Int?) throws(ConfigurationError) -> Int {
        let wanted = configured ?? 16384
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
            throw ConfigurationError([ConfigurationProblem(
                "GATEWAY_MAX_CONNECTIONS", .conflict,
                expected: "at most the open-file limit minus \(reserve) (ulimit -n is \(limit.rlim_cur))")])
        }
        return Int(limit.rlim_cur) - reserve
    }

    /// Demo mode with WXPAY_API_VERSION=v3: the embedded simulator speaks v3 in public-key mode with
    /// the keys the configuration made at start (the merchant certificate it checks requests
    /// against, the private half of the WeChat Pay public key it signs with).
    static func demoV3Simulator(_ configuration: GatewayConfiguration) -> V3SimulatorConfiguration? {
        guard let demo = configuration.v3.demo, let publicKey = demo.credentials.publicKey else { return nil }
        return V3SimulatorConfiguration(apiV3Key: demo.credentials.apiV3Key, merchantCertificate: demo.merchantCertificate,
                                        publicKeyID: publicKey.id, wechatpayKey: demo.wechatpayKey)
    }

    /// The first lines printed: the address, and in demo mode that it is demo mode and how to try it.
    static func banner(_ configuration: GatewayConfiguration, base: String) -> String {
        guard configuration.demo else {
            let api = configuration.v3.apiVersion == .v3 ? "API v3" : "\(configuration.signType)"
            return "wxpay-gateway listening on \(base) (merchant \(configuration.mchID), new orders: \(api))\n"
        }
        let token = configuration.clientTokens.first ?? ""
        let support = configuration.supportTokens.first ?? ""
        return """
            wxpay-gateway DEMO MODE: the embedded WeChat Pay simulator plays WeChat (API \(configuration.v3.apiVersion.rawValue)); no real money moves.
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
            \(appBanner(configuration, base: base))\(iosBanner(configuration, base: base))
            """
    }
}
