// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import SimulatorKit

/// One transaction as the App Store holds it: the payload, and who bought it on which invoice.
struct SimulatedTransaction: Sendable {
    var transaction: AppStoreTransaction
    /// The Apple account that bought it (history and receipts are per account).
    var user: String
    /// The id on the customer's invoice (Look Up Order ID).
    var orderID: String
}

/// Everything the simulated App Store knows, under one lock.
struct StoreState: Sendable {
    var transactions: [String: SimulatedTransaction] = [:]
    /// Transaction ids in purchase order.
    var chronology: [String] = []
    /// App receipts as issued (base64 of the PKCS #7): whose, and the purchases each holds. A new
    /// one is issued to the account at each purchase, as the device's receipt is refreshed.
    var receipts: [String: IssuedReceipt] = [:]
    /// The account's latest receipt per environment.
    var receiptByOwner: [ReceiptOwner: String] = [:]
    /// Every notification made, by `notificationUUID`, and their order (Get Notification History).
    var notifications: [String: RecordedNotification] = [:]
    var notificationOrder: [String] = []
    /// What Send Consumption Information received, oldest first.
    var consumptionReceived: [ConsumptionReceived] = []
    var random: SeededRandom
    var nextTransactionNumber: UInt64 = 1
    var faults = AppStoreFaultPlan()
    /// Requests left under each endpoint's `limit`, and answered normally before its `after`.
    var faultBudget: [String: Int] = [:]
    var faultDelay: [String: Int] = [:]
    var counters: [String: Int] = [:]
    /// Purchases that failed (interrupted ones), as the device saw them.
    var failedPurchases: [FailedPurchase] = []
    /// Set while answering a request the rogue-chain fault picked.
    var signWithRogueChain = false
    /// Set while answering a verifyReceipt the receipt-status fault picked.
    var receiptOverride: (status: Int, retryable: Bool)?
    /// TEST notifications sent through the Server API, by uuid: their signed payload
    /// (Get Test Notification Status answers it with the delivery attempts).
    var testNotifications: [String: String] = [:]
    /// Auto-renewable subscriptions by original transaction id, and the products configured as such.
    var subscriptions: [String: SimulatedSubscription] = [:]
    var subscriptionProducts: [String: AppStoreSubscriptionProduct] = [:]
    /// Notifications made under the lock, sent once it is released.
    var outbox: [AppStoreSimulator.PendingNotification] = []
    /// What is left of the fault plan's `dropNotifications.limit`.
    var notificationDropsLeft: Int?

    struct ReceiptOwner: Hashable, Sendable {
        var user: String
        var environment: AppStoreEnvironment
    }

    struct IssuedReceipt: Sendable {
        var owner: ReceiptOwner
        /// The transactions in it, in purchase order.
        var transactionIDs: [String]
    }

    /// A notification as Apple keeps it for Get Notification History.
    struct RecordedNotification: Sendable {
        var uuid: String
        var environment: AppStoreEnvironment
        var signedPayload: String
        var signedDate: Date
        var type: String
        var subtype: String?
        /// The customer it is about (the transactionId filter), if any.
        var user: String?
        /// The transaction it carries, if any (the control panel's list says which it was).
        var transactionID: String? = nil
    }

    init(seed: UInt64) {
        random = SeededRandom(seed: seed)
    }

    mutating func count(_ name: String) { counters[name, default: 0] += 1 }

    /// Whether the fault plan's `dropNotifications` loses this notification (spending its limit).
    mutating func dropsNotification(type: String, subtype: String?) -> Bool {
        guard let drops = faults.dropNotifications, drops.matches(type: type, subtype: subtype) else { return false }
        if drops.limit != nil {
            guard let left = notificationDropsLeft, left > 0 else { return false }
            notificationDropsLeft = left - 1
        }
        count("fault notification_dropped")
        return true
    }

    /// The product as configured, or as an unconfigured auto-renewable product is.
    func subscriptionProduct(_ productID: String) -> AppStoreSubscriptionProduct {
        subscriptionProducts[productID] ?? .unconfigured(productID)
    }

    /// The customer's subscription in a group, in an environment.
    func subscription(of user: String, group: String, _ environment: AppStoreEnvironment) -> SimulatedSubscription? {
        subscriptions.values.first { $0.user == user && $0.groupIdentifier == group && $0.environment == environment }
    }

    /// A new transaction id: 16 digits, like Apple's.
    mutating func newTransactionID(_ environment: AppStoreEnvironment) -> String {
        defer { nextTransactionNumber += 1 }
        return String((environment == .production ? 2_000_000_100_000_000 : 2_000_000_500_000_000) + nextTransactionNumber)
    }

    /// A new invoice order id: ten capitals and digits, like `MK5TTTVWJH`.
    mutating func newOrderID() -> String {
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        return String((0..<10).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
    }

    /// A fresh app receipt of the account in `environment`, holding every purchase it made there:
    /// what the device has after the purchase.
    mutating func issueReceipt(for user: String, _ environment: AppStoreEnvironment, issuer: ReceiptIssuer, now: Date) -> String {
        let owner = ReceiptOwner(user: user, environment: environment)
        let held = transactions(of: user, environment)
        let token = issuer.receipt(for: held.map(\.transaction), now: now)
        receipts[token] = IssuedReceipt(owner: owner, transactionIDs: held.map(\.transaction.transactionID))
        receiptByOwner[owner] = token
        return token
    }

    mutating func record(_ notification: RecordedNotification) {
        notifications[notification.uuid] = notification
        notificationOrder.append(notification.uuid)
    }

    /// The faults for `endpoint` on this request, spending one unit of a limited plan.
    mutating func consumeFaults(for endpoint: String) -> AppStoreEndpointFaults {
        let key = faults.endpoints[endpoint] != nil ? endpoint : "*"
        guard let plan = faults.endpoints[key] else { return AppStoreEndpointFaults() }
        if let waiting = faultDelay[key], waiting > 0 {
            faultDelay[key] = waiting - 1
            return AppStoreEndpointFaults()
        }
        if plan.limit != nil {
            let left = faultBudget[key] ?? 0
            guard left > 0 else { return AppStoreEndpointFaults() }
            faultBudget[key] = left - 1
        }
        return plan
    }

    /// A fault that replaces the answer entirely (timeout, 429, 5xx), drawn in that order.
    mutating func earlyFault(_ faults: inout AppStoreEndpointFaults) -> AppStoreSimulatorResponse? {
        if random.chance(faults.timeoutRate) {
            count("fault timeout")
            var response = AppStoreSimulatorResponse(status: 504, contentType: "text/plain", body: [])
            response.timesOut = true
            response.delay = faults.timeoutSeconds
            return response
        }
        if random.chance(faults.rateLimitRate) {
            count("fault rate_limit")
            var response = AppStoreSimulator.apiError(429, 4_290_000, "Rate limit exceeded.")
            response.headers["Retry-After"] = String(faults.retryAfterSeconds)
            return response
        }
        if random.chance(faults.http5xxRate) {
            count("fault http_5xx")
            return random.chance(0.5)
                ? AppStoreSimulator.apiError(500, 5_000_000, "An unknown error occurred.")
                : AppStoreSimulatorResponse(status: 503, contentType: "text/html",
                                            body: Array("<html><body>503 Service Unavailable</body></html>".utf8))
        }
        return nil
    }

    /// The account's transactions in `environment`, in purchase order.
    func transactions(of user: String, _ environment: AppStoreEnvironment) -> [SimulatedTransaction] {
        chronology.compactMap { transactions[$0] }.filter { $0.user == user && $0.transaction.environment == environment }
    }
}

/// One Send Consumption Information call the simulated App Store accepted.
public struct ConsumptionReceived: Sendable, Codable, Hashable {
    public var transactionId: String
    public var environment: AppStoreEnvironment
    /// Milliseconds since 1970 (simulated time).
    public var receivedAt: Int64
    /// The body as received (Apple's member names).
    public var body: String
}

/// A purchase that failed on the device (no transaction id reaches the server).
public struct FailedPurchase: Sendable, Codable, Hashable {
    public var user: String
    public var productID: String
    /// What the app had put in `applicationUsername` / `appAccountToken`.
    public var appAccountToken: UUID?
    public var environment: AppStoreEnvironment
    public var reason: String
}
