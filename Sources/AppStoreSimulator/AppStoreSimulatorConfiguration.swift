// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Who the simulated App Store believes the app is, how it authenticates the Server API's callers,
/// and where it sends notifications.
public struct AppStoreSimulatorConfiguration: Sendable {
    public var bundleID: String
    /// The app's numeric Apple id (`appAppleId` in notifications and history).
    public var appAppleID: Int64
    /// The Server API key's id (`kid`) and issuer (`iss`) the caller's tokens must name.
    public var keyID: String
    public var issuerID: String
    /// The public half of the caller's In-App Purchase key (PEM), or its `.p8`. Nil: the simulator
    /// makes a key itself (``AppStoreSimulator/generatedAPIKey``), for demo mode and tests.
    public var apiKeyPEM: String?
    /// The app-specific shared secret verifyReceipt's `password` must match when given. Nil
    /// accepts any.
    public var sharedSecret: String?
    /// Where Server Notifications V2 go, per environment (App Store Connect has one URL for each).
    public var productionNotificationURL: String?
    public var sandboxNotificationURL: String?
    /// Apple's retry schedule after a failed notification: 1, 12, 24, 48 and 72 hours.
    public var notificationRetryIntervals: [TimeInterval]
    /// Divides the retry schedule (3,600 turns Apple's hours into seconds) without scaling the
    /// rest of simulated time.
    public var notificationRetryScale: Double
    /// How long a notification waits for the merchant's answer.
    public var notificationTimeout: TimeInterval
    /// Seed for every random choice (ids, faults), so a run can be replayed.
    public var seed: UInt64
    /// The number the first transaction id is made from (`2000000100000000` + it in production):
    /// 1 for a replayable run; a simulator restarted on a gateway's existing database (demo mode)
    /// starts past every id it issued before, so a new purchase never reuses one.
    public var firstTransactionNumber: UInt64 = 1
    /// Auto-renewable subscription products (group, period, level, grace period); a product bought
    /// as `Auto-Renewable Subscription` that is not here is monthly, alone in its group, without grace.
    public var subscriptionProducts: [AppStoreSubscriptionProduct] = []
    /// How long Apple keeps retrying a failed renewal (60 days), and how often it tries (daily).
    public var billingRetryDays = 60
    public var billingRetryInterval: TimeInterval = 86400
    /// What a product costs when a purchase names no price: `price` in milli-units of `currency`
    /// (demo mode reads the gateway's catalog). Nil, or nil for a product: 68.00 CNY.
    public var priceOf: (@Sendable (_ productID: String) -> (price: Int64, currency: String)?)?

    public static let appleNotificationRetryIntervals: [TimeInterval] = [3600, 12 * 3600, 24 * 3600, 48 * 3600, 72 * 3600]

    public init(
        bundleID: String = "com.example.courses", appAppleID: Int64 = 1_234_567_890, keyID: String = "SIMKEY0001",
        issuerID: String = "57246542-96fe-1a63-e053-0824d011072a", apiKeyPEM: String? = nil, sharedSecret: String? = nil,
        productionNotificationURL: String? = nil, sandboxNotificationURL: String? = nil,
        notificationRetryIntervals: [TimeInterval] = appleNotificationRetryIntervals, notificationRetryScale: Double = 1,
        notificationTimeout: TimeInterval = 5, seed: UInt64 = 1,
        priceOf: (@Sendable (_ productID: String) -> (price: Int64, currency: String)?)? = nil
    ) {
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.keyID = keyID
        self.issuerID = issuerID
        self.apiKeyPEM = apiKeyPEM
        self.sharedSecret = sharedSecret
        self.productionNotificationURL = productionNotificationURL
        self.sandboxNotificationURL = sandboxNotificationURL
        self.notificationRetryIntervals = notificationRetryIntervals
        self.notificationRetryScale = notificationRetryScale
        self.notificationTimeout = notificationTimeout
        self.seed = seed
        self.priceOf = priceOf
    }

    /// 68.00 CNY: what a product costs when neither the purchase nor `priceOf` says.
    public static let defaultPrice: (price: Int64, currency: String) = (68000, "CNY")
}
