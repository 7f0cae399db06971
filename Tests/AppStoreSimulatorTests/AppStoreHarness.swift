// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
import JSON
import SimulatorHarnessSupport
import SimulatorKit
import Synchronization

/// A simulator on a frozen clock, with clients wired to it in process, a verifier that trusts its
/// root, and an inbox for the notifications it sends.
struct AppStoreHarness: NotifyLoopHarness {
    static let bundleID = "com.example.courses"
    static let appAppleID: Int64 = 1_234_567_890

    let clock: ScaledClock
    let simulator: AppStoreSimulator
    let inbox: NotificationInbox
    let verifier: SignedDataVerifier
    let waits = RecordingClock()

    /// - Parameter reply: the status the merchant answers each notification with.
    init(sharedSecret: String? = nil, retryScale: Double = 3600,
         reply: @escaping @Sendable (Int) -> Int = { _ in 200 }) throws {
        clock = ScaledClock(start: Date(timeIntervalSince1970: 1_764_460_800), scale: 0)
        let inbox = NotificationInbox()
        self.inbox = inbox
        simulator = try AppStoreSimulator(
            configuration: AppStoreSimulatorConfiguration(
                bundleID: Self.bundleID, appAppleID: Self.appAppleID, sharedSecret: sharedSecret,
                productionNotificationURL: "https://merchant.example/appstore/notifications",
                sandboxNotificationURL: "https://merchant.example/appstore/notifications?sandbox",
                notificationRetryScale: retryScale, seed: 7),
            clock: clock,
            notificationSender: ClosureNotifySender { body, url in
                let number = inbox.append(body: body, url: url)
                let status = reply(number)
                return (200...206).contains(status) ? [] : nil
            })
        verifier = try SignedDataVerifier(roots: TrustedRoots([simulator.pki.root], allowUntrustedRoot: true),
                                          bundleID: Self.bundleID, environment: nil, appAppleID: Self.appAppleID)
    }

    var credentials: ServerAPICredentials {
        ServerAPICredentials(key: simulator.generatedAPIKey!, keyID: simulator.configuration.keyID,
                             issuerID: simulator.configuration.issuerID, bundleID: Self.bundleID)
    }

    func apiClient(retry: AppStoreRetryPolicy = AppStoreRetryPolicy(), sandboxFallback: Bool = true,
                   credentials: ServerAPICredentials? = nil) -> AppStoreServerAPIClient {
        AppStoreServerAPIClient(
            credentials: credentials ?? self.credentials,
            configuration: .init(productionBaseURL: AppStoreSimulatorTransport.productionBaseURL,
                                 sandboxBaseURL: AppStoreSimulatorTransport.sandboxBaseURL, sandboxFallback: sandboxFallback,
                                 retry: retry),
            transport: AppStoreSimulatorTransport(simulator: simulator), clock: waits)
    }

    func receiptClient(sharedSecret: String? = nil, firstEnvironment: AppStoreEnvironment = .production,
                       allowsSandbox: Bool = true, retry: AppStoreRetryPolicy = AppStoreRetryPolicy()) -> ReceiptClient {
        ReceiptClient(
            configuration: .init(bundleID: Self.bundleID, sharedSecret: sharedSecret,
                                 productionURL: AppStoreSimulatorTransport.productionBaseURL + "/verifyReceipt",
                                 sandboxURL: AppStoreSimulatorTransport.sandboxBaseURL + "/verifyReceipt",
                                 allowsSandbox: allowsSandbox, firstEnvironment: firstEnvironment, retry: retry),
            transport: AppStoreSimulatorTransport(simulator: simulator), clock: waits)
    }

    @discardableResult
    func buy(_ user: String = "alice", product: String = "course.swift.basics", type: String = "Non-Consumable",
             token: UUID? = UUID(), environment: AppStoreEnvironment = .production) throws -> PurchaseReceipt {
        try simulator.purchase(SimulatedPurchase(user: user, productID: product, type: type, appAccountToken: token,
                                                 environment: environment))
    }

    var notifyLoop: @Sendable () async -> Void { { [simulator] in await simulator.run() } }
}

/// Records every wait the clients ask for, without waiting; `now` is real time, as tokens need.
final class RecordingClock: AppStoreClock {
    private let recorded = Mutex<[Duration]>([])
    func now() -> Date { Date() }
    func sleep(for duration: Duration) async throws { recorded.withLock { $0.append(duration) } }
    var sleeps: [Duration] { recorded.withLock { $0 } }
}

/// What the merchant's notification endpoint received, in arrival order.
final class NotificationInbox: Sendable {
    private let items = Mutex<[(body: [UInt8], url: String)]>([])

    /// Appends and returns the arrival's number (1 for the first).
    func append(body: [UInt8], url: String) -> Int {
        items.withLock {
            $0.append((body, url))
            return $0.count
        }
    }

    var count: Int { items.withLock { $0.count } }
    var urls: [String] { items.withLock { $0.map(\.url) } }

    /// The `signedPayload` of each arrival.
    var signedPayloads: [String] {
        items.withLock { $0.compactMap { (try? JSONValue.parse($0.body))?["signedPayload"]?.stringValue } }
    }
}
