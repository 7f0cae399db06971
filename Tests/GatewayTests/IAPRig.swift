// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreHTTPTransport
import AppStoreSimulator
import Foundation
@testable import Gateway
import HTTP
import HTTPClientTestSupport
import Observability
import SimulatorKit
import StorageCore
import StoreTestSupport

/// The gateway (a `GatewayRig`: API, service, SQLite store, the WeChat simulator) with iOS
/// purchases on, against the App Store simulator — in process (the simulator as the clients'
/// transport, notifications handed over in memory), or over real sockets: the gateway on
/// 127.0.0.1, the simulator's Server API and verifyReceipt on a port of their own reached with the
/// libcurl transport, and its notifications POSTed to the gateway's `/appstore/notifications`.
final class IAPRig: Sendable {
    let gateway: GatewayRig
    let appStore: AppStoreSimulator
    let iap: IAPService
    private let appStoreServer: HTTPServer?
    private let httpClient: HTTPClient?
    private let notificationLoop: Task<Void, Never>

    var mode: GatewayRig.Mode { gateway.mode }
    var store: TestStore { gateway.store }
    static let product = "swift-101"
    static let appleProduct = "com.example.courses.swift101"

    /// - Parameters:
    ///   - acceptSandbox: APPSTORE_ACCEPT_SANDBOX.
    ///   - serverAPI: whether the In-App Purchase key is configured.
    ///   - verifiedReceipts: whether a receipt root is configured (APPSTORE_RECEIPT_ROOT_CA_FILE).
    ///   - store: the gateway's store.
    ///   - recovery: the notification history's and consumption requests' settings.
    ///   - environment: more configuration variables (GATEWAY_APP_REPORT_RATE, say).
    ///   - pollInterval: how often a held wait asks WeChat (GATEWAY_POLL_INTERVAL).
    ///   - consoleUsers: a user file: the support console is on.
    static func start(_ mode: GatewayRig.Mode, store: StoreKind = .sqlite, acceptSandbox: Bool = true,
                      serverAPI: Bool = true, verifiedReceipts: Bool = true, recovery: AppStoreRecoveryPolicy = AppStoreRecoveryPolicy(),
                      environment: [String: String] = [:], pollInterval: Double = 0.2, consoleUsers: String? = nil)
        async throws -> IAPRig
    {
        let target = NotificationTarget()
        let httpClient = mode == .sockets ? try HTTPClient() : nil
        // The gateway's address is known once it listens, after the App Store's clients are made:
        // the simulator's notifications go wherever `target` says by then.
        let sender: any NotifySender = httpClient.map { client in
            let http = HTTPNotifySender(client: client, contentType: "application/json")
            return ClosureNotifySender { body, _ in
                guard let base = target.base else { return nil }
                return await http.post(body, to: base + "/appstore/notifications", timeout: 30)
            }
        } ?? ClosureNotifySender { body, _ in await target.deliver(body) }
        let url = "http://gateway.invalid/appstore/notifications"
        let appStore = try AppStoreSimulator(
            configuration: AppStoreSimulatorConfiguration(productionNotificationURL: url, sandboxNotificationURL: url,
                                                          notificationRetryScale: 3600),
            clock: ScaledClock(start: Date(), scale: 1), notificationSender: sender)
        var appStoreServer: HTTPServer?
        let transport: any AppStoreTransport
        var bases = (production: AppStoreSimulatorTransport.productionBaseURL, sandbox: AppStoreSimulatorTransport.sandboxBaseURL)
        if let httpClient {
            var router = HTTPRouter()
            AppStoreSimulatorRoutes.registerAPI(appStore, in: &router)
            let server = HTTPServer(router: router, configuration: .patient)
            let address = try await server.start()
            bases = ("http://127.0.0.1:\(address.port)", "http://127.0.0.1:\(address.port)/sandbox")
            transport = AppStoreHTTPTransport(client: httpClient, timeouts: .init(connect: .seconds(5), total: .seconds(20)))
            appStoreServer = server
        } else {
            transport = AppStoreSimulatorTransport(simulator: appStore)
        }
        guard let key = appStore.generatedAPIKey else { throw RigError.unexpected(0, Array("no simulator key".utf8)) }
        let clients = try AppStoreClients(
            bundleID: appStore.configuration.bundleID, appAppleID: appStore.configuration.appAppleID,
            roots: try TrustedRoots([appStore.pki.root], allowUntrustedRoot: true),
            receiptRoots: verifiedReceipts ? try TrustedRoots([appStore.pki.root], allowUntrustedRoot: true, apple: .appleRootCA) : nil,
            acceptSandbox: acceptSandbox,
            credentials: serverAPI ? ServerAPICredentials(key: key, keyID: appStore.configuration.keyID,
                                                          issuerID: appStore.configuration.issuerID,
                                                          bundleID: appStore.configuration.bundleID) : nil,
            apiBases: bases, receiptURLs: (bases.production + "/verifyReceipt", bases.sandbox + "/verifyReceipt"),
            transport: transport, clock: SystemAppStoreClock(),
            // A loaded machine: the deadline is for Apple's slowness, not the test's.
            deadline: .seconds(60))
        var composition = GatewayRig.Composition(appStore: clients, recovery: recovery)
        composition.consoleUsers = consoleUsers
        let gateway = try await GatewayRig.start(mode, store: store, pollInterval: pollInterval, environment: environment,
                                                 composition: composition)
        let iap = gateway.services.iap!
        target.set(iap, base: gateway.base)
        return IAPRig(gateway: gateway, appStore: appStore, iap: iap, appStoreServer: appStoreServer, httpClient: httpClient)
    }

    private init(gateway: GatewayRig, appStore: AppStoreSimulator, iap: IAPService, appStoreServer: HTTPServer?,
                 httpClient: HTTPClient?) {
        self.gateway = gateway
        self.appStore = appStore
        self.iap = iap
        self.appStoreServer = appStoreServer
        self.httpClient = httpClient
        notificationLoop = Task { await appStore.run() }
    }

    func stop() async {
        notificationLoop.cancel()
        await appStoreServer?.shutdown(gracePeriod: .seconds(2))
        await httpClient?.shutdown()
        await gateway.stop()
    }

    // MARK: - The app's side

    /// An app token for `user`, valid at the gateway's (possibly advanced) time.
    func token(_ user: String) -> String {
        TestTokens.minted(user, now: gateway.clock.now())
    }

    /// `POST /v1/iap/orders` with an app token; returns the order's JSON.
    func createOrder(_ user: String, product: String = IAPRig.product, outTradeNo: String? = nil) async throws -> [String: Any] {
        var body = #"{"product_id":"\#(product)""#
        if let outTradeNo { body += #","out_trade_no":"\#(outTradeNo)""# }
        let response = try await gateway.send(.post, "/v1/iap/orders", token: token(user), body: body + "}")
        guard response.status == 201 || response.status == 200 else { throw RigError.unexpected(response.status, response.body) }
        return response.json
    }

    /// The customer buys in the App Store, with the order's token (or none: StoreKit 1, a lost one).
    func buy(_ appleAccount: String, token: String?, product: String = IAPRig.appleProduct,
             environment: AppStoreEnvironment = .production, type: String = "Non-Consumable") throws -> PurchaseReceipt {
        try appStore.purchase(SimulatedPurchase(user: appleAccount, productID: product, type: type,
                                                appAccountToken: token.flatMap(UUID.init(uuidString:)), environment: environment))
    }

    /// `POST /v1/iap/transactions` as the app reports (app token of `user`).
    func report(_ user: String, _ fields: [String: String]) async throws -> GatewayRig.Response {
        let body = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        return try await gateway.send(.post, "/v1/iap/transactions", token: token(user), body: String(decoding: body, as: UTF8.self))
    }

    /// The order, as the store keeps it.
    func order(_ outTradeNo: String) async throws -> OrderRecord? { try await store.order(outTradeNo) }

    /// A reconciler sweep now, for orders with no news for `after` seconds. The gateway's clock runs
    /// in real time here, and a sweeper starts no check once its lease (0.9 × interval) has run out:
    /// a long interval keeps a loaded machine from skipping the very order the test looks at.
    func sweep(after: Double = 0) async -> SweepReport {
        await Reconciler(services: gateway.services, configuration: .init(interval: 30, after: after, concurrency: 4, rate: 1000)).sweep()
    }

    /// The customer buys at a price of their own (milli-units of `currency`).
    func buy(_ appleAccount: String, token: String?, product: String, price: Int64, currency: String,
             type: String = "Non-Consumable") throws -> PurchaseReceipt {
        try appStore.purchase(SimulatedPurchase(user: appleAccount, productID: product, type: type,
                                                appAccountToken: token.flatMap(UUID.init(uuidString:)), price: price,
                                                currency: currency))
    }

    /// The value of one metric series in the gateway's exposition (0 when absent).
    func metric(_ series: String) -> Double {
        for line in gateway.services.metrics.exposition().split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.split(separator: " ").last ?? "") ?? 0
        }
        return 0
    }

    enum RigError: Error {
        case unexpected(Int, [UInt8])
    }
}

/// The gateway end of notifications (set once the gateway exists): its iOS flow in process, its
/// address over sockets.
private final class NotificationTarget: Sendable {
    private let iap = LockedBox<IAPService?>(nil)
    private let address = LockedBox<String?>(nil)

    func set(_ service: IAPService, base: String) {
        iap.update { $0 = service }
        address.update { $0 = base }
    }

    var base: String? { address.value }

    func deliver(_ body: [UInt8]) async -> [UInt8]? {
        guard let service = iap.value else { return nil }
        let (status, answer) = await service.handleNotification(body)
        return (200..<207).contains(status) ? answer : nil
    }
}
