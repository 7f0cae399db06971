// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreHTTPTransport
import AppStoreSimulator
import Foundation
import Gateway
import HTTP
import Observability
import SimulatorKit
import StorageCore
import Synchronization

/// How `serve` reaches the App Store: in production the Server API and verifyReceipt over HTTPS
/// (APPSTORE_*), in demo mode the embedded App Store simulator in process, whose notifications
/// come to this gateway's `/appstore/notifications` over HTTP once it listens.
struct AppStoreConnection {
    let clients: AppStoreClients
    /// Demo mode's simulator: its control panel is mounted, its notification loop run.
    let simulator: AppStoreSimulator?
    private let notificationBase: LockedBase

    /// Nil while App Store purchases are off (APPSTORE_BUNDLE_ID unset): the iOS routes are 404.
    /// - Parameters:
    ///   - catalog: what the demo's simulated App Store charges (re-read on SIGHUP).
    ///   - demoClock: demo mode's one clock, which the simulated App Store keeps too.
    static func open(_ configuration: GatewayConfiguration, catalog: CatalogSource, client: HTTPClient,
                     metrics: MetricsRegistry, demoClock: ScaledClock? = nil) throws(AppStoreConfigurationError) -> AppStoreConnection? {
        guard configuration.appStore.isEnabled else { return nil }
        let base = LockedBase()
        guard configuration.demo else {
            // A report waits at most about 10 s for Apple: three tries of at most 3 s each.
            let transport = MeasuredAppStoreTransport(
                AppStoreHTTPTransport(client: client, timeouts: .init(connect: .seconds(2), total: .seconds(3))),
                metrics: metrics)
            let clients = try AppStoreClients.production(configuration.appStore, transport: transport, clock: SystemAppStoreClock())
            return AppStoreConnection(clients: clients, simulator: nil, notificationBase: base)
        }
        let placeholder = "http://gateway.demo/appstore/notifications"
        let http = HTTPNotifySender(client: client, contentType: "application/json")
        // The simulated App Store charges what the catalog (re-read on SIGHUP) says, in CNY.
        var simulatorConfiguration = AppStoreSimulatorConfiguration(
        bundleID: AppStoreConfiguration.demoBundleID, appAppleID: AppStoreConfiguration.demoAppAppleID,
        productionNotificationURL: placeholder, sandboxNotificationURL: placeholder,
        // Apple retries after hours; the demo after seconds.
        notificationRetryScale: 3600, seed: UInt64.random(in: 1...UInt64.max),
        priceOf: { appleProductID in
            catalog.catalog.product(appleProductID: appleProductID).map { (Int64($0.amount) * 10, "CNY") }
        })
        // Ids after every one an earlier run on this database may have issued (milliseconds since
        // 2020: a restart never meets an id the ledger holds).
        simulatorConfiguration.firstTransactionNumber = UInt64(max(1, (Date().timeIntervalSince1970 - 1_577_836_800) * 1000))
        let simulator = try AppStoreSimulator(
            configuration: simulatorConfiguration, clock: demoClock ?? ScaledClock(),
            notificationSender: ClosureNotifySender { body, _ in
                guard let target = base.value else { return nil }
                return await http.post(body, to: target + "/appstore/notifications", timeout: 5)
            })
        simulator.configureSubscriptionProducts(Self.subscriptionProducts(of: catalog.catalog))
        guard let key = simulator.generatedAPIKey else { throw AppStoreConfigurationError("the simulator made no API key") }
        let clients = try AppStoreClients(
            bundleID: simulator.configuration.bundleID, appAppleID: simulator.configuration.appAppleID,
            roots: try TrustedRoots([simulator.pki.root], allowUntrustedRoot: true),
            receiptRoots: try TrustedRoots([simulator.pki.root], allowUntrustedRoot: true, apple: .appleRootCA), acceptSandbox: true,
            credentials: ServerAPICredentials(key: key, keyID: simulator.configuration.keyID,
                                              issuerID: simulator.configuration.issuerID, bundleID: simulator.configuration.bundleID),
            apiBases: (AppStoreSimulatorTransport.productionBaseURL, AppStoreSimulatorTransport.sandboxBaseURL),
            receiptURLs: (AppStoreSimulatorTransport.productionBaseURL + "/verifyReceipt",
                          AppStoreSimulatorTransport.sandboxBaseURL + "/verifyReceipt"),
            transport: MeasuredAppStoreTransport(AppStoreSimulatorTransport(simulator: simulator), metrics: metrics),
            clock: SystemAppStoreClock())
        return AppStoreConnection(clients: clients, simulator: simulator, notificationBase: base)
    }

    /// The catalog's iOS memberships as the demo's App Store sells them: auto-renewable
    /// subscriptions of one group, the longer period the higher level (level 1 is the highest), so
    /// a change from monthly to yearly is an upgrade. Read at start; a catalog reloaded by SIGHUP
    /// prices them anew but does not add or remove subscription products.
    static func subscriptionProducts(of catalog: Catalog) -> [AppStoreSubscriptionProduct] {
        let memberships = catalog.products.compactMap { product -> (String, MembershipPeriod)? in
            guard case .membership(let period) = product.kind, let appleProductID = product.appleProductID else { return nil }
            return (appleProductID, period)
        }
        let longestFirst = memberships.sorted { ($0.1.months * 31 + $0.1.days, $1.0) > ($1.1.months * 31 + $1.1.days, $0.0) }
        return longestFirst.enumerated().map { level, product in
            AppStoreSubscriptionProduct(productID: product.0, groupIdentifier: demoSubscriptionGroup, period: product.1.text,
                                        level: level + 1)
        }
    }

    /// The demo's one subscription group.
    static let demoSubscriptionGroup = "21000001"

    /// Demo mode: where the simulator's notifications go, once the server knows its address.
    func listening(at base: String) {
        notificationBase.set(base)
    }

    /// The bound address, shared with the simulator's sender.
    final class LockedBase: Sendable {
        private let storage = Mutex<String?>(nil)
        var value: String? { storage.withLock { $0 } }
        func set(_ base: String) { storage.withLock { $0 = base } }
    }
}

extension ServeCommand {
    /// Demo mode's lines for the iOS app: an iOS order for the demo user, a purchase in the
    /// simulated App Store with the order's token, and the report StoreKit 2's app makes.
    static func iosBanner(_ configuration: GatewayConfiguration, base: String) -> String {
        guard configuration.demo, configuration.appStore.isEnabled, let secret = configuration.app.tokenSecrets.first,
              let product = configuration.app.catalog.products.first(where: { $0.active && $0.appleProductID != nil }),
              let appleProductID = product.appleProductID
        else { return "" }
        let token = AppTokenMinter(secret: secret).token(subject: AppConfiguration.demoUser, now: Date(),
                                                          ttl: AppTokenVerifier.maximumLifetime)
        let membership = configuration.app.catalog.products.first {
            guard case .membership = $0.kind else { return false }
            return $0.active && $0.appleProductID != nil
        }
        let subscription = membership.flatMap { product in product.appleProductID.map { apple in
            "  # a membership is an auto-renewable subscription (\(product.id)): the same with \"product_id\":\"\(product.id)\", then\n"
                + #"  # "productId":"\#(apple)","type":"Auto-Renewable Subscription"; it renews on the simulator's clock"#
                + "\n  curl -s \(base)/v1/users/\(AppConfiguration.demoUser)/entitlements -H \"$A\"\n"
        } } ?? ""
        return """
            the iOS app (the embedded App Store simulator plays the App Store; its control panel is /appstore-simulator/):
              A='Authorization: Bearer \(token)'
              curl -s -X POST \(base)/v1/iap/orders -H "$A" -d '{"product_id":"\(product.id)","out_trade_no":"demo-ios-0001"}'
              # buy with the order's app_account_token, then report the signed transaction StoreKit 2 gives the app:
              curl -s -X POST \(base)/appstore-simulator/purchases -d '{"user":"demo-apple-id","productId":"\(appleProductID)","appAccountToken":"<app_account_token>"}'
              curl -s -X POST \(base)/v1/iap/transactions -H "$A" -d '{"signed_transaction":"<signedTransactionInfo>"}'
            \(subscription)
            """
    }
}
