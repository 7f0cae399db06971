// SPDX-License-Identifier: Apache-2.0
import AppStore
import Crypto
import Foundation
import HTTP
import JSON
import SimulatorKit
import Synchronization

/// A faithful App Store, in memory: the App Store Server API (transaction info, history, refund
/// history, order look-up) behind real checks of the caller's ES256 token, the legacy
/// `verifyReceipt` with every status, and Server Notifications V2 on Apple's retry schedule — all
/// signed by a PKI of its own made at start, shaped like Apple's. Get Notification History and Send
/// Consumption Information (v2) answer as Apple does, and app receipts are real PKCS #7.
///
/// `handle(_:)` answers one request synchronously; the HTTP front (``AppStoreSimulatorRoutes``)
/// and the in-process ``AppStoreSimulatorTransport`` both call it, so a test runs the same body
/// with and without sockets. A control API (``purchase(_:)``, ``interruptedPurchase(_:)``,
/// ``refund(transactionID:reason:)``…) acts out what customers and Apple do, and a seeded fault
/// plan makes Apple misbehave reproducibly.
///
/// Paths: production at `/inApps/…` and `/verifyReceipt`, the sandbox at `/sandbox/inApps/…` and
/// `/sandbox/verifyReceipt`, so one port serves both base URLs.
public final class AppStoreSimulator: Sendable {
    public let configuration: AppStoreSimulatorConfiguration
    /// Simulated time: purchase dates, signedDate, the notification schedule.
    public let clock: any SimulatorClock
    /// The chain everything is signed with; trust `pki.root`.
    public let pki: SimulatorPKI
    /// A chain to a root nobody trusts, for the rogue-answer fault.
    public let roguePKI: SimulatorPKI
    /// Makes the app receipts StoreKit 1 hands the app (PKCS #7, signed by `pki`'s leaf).
    let receiptIssuer: ReceiptIssuer
    /// The Server API key the simulator made when none was configured (write it out as a `.p8`).
    public let generatedAPIKey: ES256PrivateKey?
    let apiPublicKey: ES256PublicKey
    /// Tokens are checked against real time, as Apple does, even when simulated time is scaled.
    let tokenClock: @Sendable () -> Date
    let state: Mutex<StoreState>
    let notifications: NotifyScheduler

    /// - Parameters:
    ///   - configuration: the app, the API key, notification URLs.
    ///   - clock: simulated time (default: real time).
    ///   - notificationSender: how notifications reach the merchant (HTTP, or a closure in process).
    ///   - tokenClock: the time the callers' tokens are checked against (default: the wall clock).
    /// - Throws: ``AppStoreConfigurationError`` when `configuration.apiKeyPEM` is not a P-256 key.
    public init(configuration: AppStoreSimulatorConfiguration = AppStoreSimulatorConfiguration(),
                clock: any SimulatorClock = ScaledClock(), notificationSender: any NotifySender,
                tokenClock: @escaping @Sendable () -> Date = { Date() }) throws(AppStoreConfigurationError) {
        self.configuration = configuration
        self.clock = clock
        self.tokenClock = tokenClock
        pki = SimulatorPKI()
        roguePKI = SimulatorPKI(.init(name: "Rogue CA"))
        receiptIssuer = ReceiptIssuer(pki: pki, bundleID: configuration.bundleID)
        if let pem = configuration.apiKeyPEM {
            guard let key = ES256PublicKey(pem: pem) else {
                throw AppStoreConfigurationError("the Server API key is not a P-256 public or private key in PEM")
            }
            apiPublicKey = key
            generatedAPIKey = nil
        } else {
            let key = ES256PrivateKey.generate()
            generatedAPIKey = key
            apiPublicKey = key.publicKey
        }
        var initial = StoreState(seed: configuration.seed)
        for product in configuration.subscriptionProducts { initial.subscriptionProducts[product.productID] = product }
        initial.nextTransactionNumber = max(1, configuration.firstTransactionNumber)
        state = Mutex(initial)
        let scale = max(configuration.notificationRetryScale, 1e-9)
        notifications = NotifyScheduler(
            clock: clock, sender: notificationSender,
            retryIntervals: configuration.notificationRetryIntervals.map { $0 / scale },
            timeout: configuration.notificationTimeout, seed: configuration.seed ^ 0xA99) { _ in
            // Apple counts any 200–206 answer as received, whatever its body.
            true
        }
    }

    /// Delivers notifications, and moves subscriptions along the clock (renewals, retries,
    /// expiries), until the task is cancelled.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.notifications.run() }
            group.addTask {
                while !Task.isCancelled {
                    self.catchUpSubscriptions()
                    try? await Task.sleep(for: .seconds(max(self.clock.realWait(for: 60, cap: 0.02), 0.005)))
                }
            }
        }
    }

    // MARK: - Requests

    /// Answers one request to the Server API or verifyReceipt.
    public func handle(_ request: AppStoreSimulatorRequest) -> AppStoreSimulatorResponse {
        var path = Substring(request.path)
        var environment = AppStoreEnvironment.production
        if path.hasPrefix("/sandbox/") {
            environment = .sandbox
            path = path.dropFirst("/sandbox".count)
        }
        let segments = path.split(separator: "/").map(String.init)
        catchUpSubscriptions()
        // Request a Test Notification and its status send a notification, outside the lock
        // (AppStoreSimulator+TestNotifications.swift).
        if segments.count >= 4, segments[0] == "inApps", segments[1] == "v1", segments[2] == "notifications",
           segments[3] == "test"
        {
            return testNotification(request, segments: segments, environment: environment)
        }
        let now = clock.now()
        defer { sendOutbox() }
        return state.withLock { store in
            let endpoint: String
            let route: (inout StoreState) -> AppStoreSimulatorResponse
            switch (request.method, segments.count, segments.first, segments.dropFirst().first, segments.dropFirst(2).first) {
            case (_, 1, "verifyReceipt", _, _):
                endpoint = "verifyReceipt"
                route = { self.verifyReceipt(request, environment: environment, now: now, store: &$0) }
            case ("GET", 4, "inApps", "v1", "transactions"):
                endpoint = "transactions"
                route = { self.transactionInfo(segments[3], environment: environment, now: now, store: &$0) }
            case ("GET", 4, "inApps", _, "history") where segments[1] == "v1" || segments[1] == "v2":
                endpoint = "history"
                route = { self.history(segments[3], query: request.query, environment: environment, now: now, store: &$0) }
            case ("GET", 5, "inApps", "v2", "refund") where segments[3] == "lookup":
                endpoint = "refunds"
                route = { self.refundHistory(segments[4], query: request.query, environment: environment, now: now, store: &$0) }
            case ("GET", 4, "inApps", "v1", "lookup"):
                endpoint = "lookup"
                route = { self.lookUpOrder(segments[3], environment: environment, now: now, store: &$0) }
            case ("POST", 4, "inApps", "v1", "notifications") where segments[3] == "history":
                endpoint = "notificationHistory"
                route = { self.notificationHistory(request, environment: environment, now: now, store: &$0) }
            case ("PUT", 5, "inApps", "v2", "transactions") where segments[3] == "consumption":
                endpoint = "consumption"
                route = { self.consumption(segments[4], body: request.body, environment: environment, now: now, store: &$0) }
            case ("GET", 4, "inApps", "v1", "subscriptions"):
                endpoint = "subscriptions"
                route = { self.subscriptionStatuses(segments[3], query: request.query, environment: environment, now: now, store: &$0) }
            case ("PUT", 5, "inApps", "v1", "subscriptions") where segments[3] == "extend":
                endpoint = "extend"
                route = { self.extendRenewalDate(segments[4], body: request.body, environment: environment, now: now, store: &$0) }
            default:
                store.count("not_found")
                return AppStoreSimulatorResponse(status: 404, contentType: "text/plain", body: Array("Not Found\n".utf8))
            }
            store.count("\(environment.rawValue.lowercased()) \(endpoint)")
            var faults = store.consumeFaults(for: endpoint)
            if endpoint != "verifyReceipt" {
                if let refusal = authenticate(request.headers["authorization"], store: &store) { return refusal }
            }
            if let early = store.earlyFault(&faults) { return early }
            store.signWithRogueChain = store.random.chance(faults.rogueChainRate)
            if store.signWithRogueChain { store.count("fault rogue_chain") }
            store.receiptOverride = faults.receiptStatus.flatMap { status in
                store.random.chance(faults.receiptStatusRate) ? (status, faults.receiptRetryable) : nil
            }
            var response = route(&store)
            store.signWithRogueChain = false
            store.receiptOverride = nil
            response.delay = faults.latency
            return response
        }
    }

    // MARK: - The caller's token

    /// Checks the bearer token as Apple does; an answer when it is refused (401), nil when valid.
    func authenticate(_ authorization: String?, store: inout StoreState) -> AppStoreSimulatorResponse? {
        let reason = tokenRefusal(authorization)
        guard let reason else { return nil }
        store.count("unauthorized \(reason)")
        return AppStoreSimulatorResponse(status: 401, contentType: "text/plain",
                                         body: Array("Unauthenticated\n\nRequest ID: \(store.random.alphanumerics(26)).0.0\n".utf8))
    }

    /// Why a token is refused (a short reason for the counters), or nil.
    func tokenRefusal(_ authorization: String?) -> String? {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return "no_bearer_token" }
        let parts = authorization.dropFirst("Bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64.decode(Array(parts[0].utf8), .urlUnpadded),
              let claimsBytes = Base64.decode(Array(parts[1].utf8), .urlUnpadded),
              let signature = Base64.decode(Array(parts[2].utf8), .urlUnpadded),
              let header = try? JSONValue.parse(headerBytes), let claims = try? JSONValue.parse(claimsBytes)
        else { return "malformed" }
        guard header["alg"] == "ES256" else { return "alg" }
        guard header["kid"]?.stringValue == configuration.keyID else { return "kid" }
        if let type = header["typ"], type != "JWT" { return "typ" }
        let signingInput = Array(authorization.utf8.dropFirst("Bearer ".count).prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard apiPublicKey.isValidSignature(signature, for: signingInput) else { return "signature" }
        guard claims["iss"]?.stringValue == configuration.issuerID else { return "iss" }
        guard claims["aud"]?.stringValue == "appstoreconnect-v1" else { return "aud" }
        guard claims["bid"]?.stringValue == configuration.bundleID else { return "bid" }
        let now = tokenClock().timeIntervalSince1970
        guard let expires = claims["exp"]?.intValue else { return "exp_missing" }
        guard Double(expires) > now else { return "expired" }
        // Apple's libraries omit iat (the Python one does); when present it must not be ahead.
        let issued = claims["iat"]?.intValue.map(Double.init)
        if let issued, issued > now { return "iat_in_future" }
        guard Double(expires) - (issued ?? now) <= 3600, Double(expires) - now <= 3600 else { return "exp_too_far" }
        return nil
    }

    // MARK: - Signing

    /// `payload` signed by the simulator's chain, or the rogue one while that fault is on.
    func sign(_ payload: JSONValue, store: StoreState) -> String {
        (store.signWithRogueChain ? roguePKI : pki).sign(payload: payload)
    }

    /// The transaction as Apple would sign it now.
    func signedTransaction(_ record: SimulatedTransaction, now: Date, store: StoreState) -> String {
        var transaction = record.transaction
        transaction.signedDate = now
        return sign(transaction.payload, store: store)
    }

    static func json(_ value: JSONValue, status: Int = 200) -> AppStoreSimulatorResponse {
        AppStoreSimulatorResponse(status: status, contentType: "application/json", body: value.bytes())
    }

    static func apiError(_ status: Int, _ code: Int, _ message: String) -> AppStoreSimulatorResponse {
        json(["errorCode": .int(code), "errorMessage": .string(message)], status: status)
    }
}

/// One request as the simulator sees it, over a socket or in process.
public struct AppStoreSimulatorRequest: Sendable {
    public var method: String
    /// The path without the query (`/inApps/v1/transactions/2000000100000001`, `/sandbox/verifyReceipt`).
    public var path: String
    public var query: HTTPServerQuery
    /// Header fields, names lowercased.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(method: String, path: String, query: HTTPServerQuery = HTTPServerQuery(), headers: [String: String] = [:],
                body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }
}

/// The simulator's answer, with the faults the transport acts out.
public struct AppStoreSimulatorResponse: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]
    /// Seconds to wait before answering.
    public var delay: Double = 0
    /// Never answer: over a socket, close the connection after `delay` seconds; in process, a timeout.
    public var timesOut = false

    public init(status: Int, contentType: String, body: [UInt8], headers: [String: String] = [:]) {
        self.status = status
        self.headers = headers.merging(["Content-Type": contentType]) { first, _ in first }
        self.body = body
    }
}
