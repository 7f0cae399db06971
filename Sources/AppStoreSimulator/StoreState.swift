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
    /// App receipts: token → (account, environment). A receipt lists all of the account's purchases.
    var receipts: [String: ReceiptOwner] = [:]
    var receiptByOwner: [ReceiptOwner: String] = [:]
    var random: SeededRandom
    var nextTransactionNumber: UInt64 = 1
    var faults = AppStoreFaultPlan()
    /// Requests left under each endpoint's `limit`.
    var faultBudget: [String: Int] = [:]
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

    struct ReceiptOwner: Hashable, Sendable {
        var user: String
        var environment: AppStoreEnvironment
    }

    init(seed: UInt64) {
        random = SeededRandom(seed: seed)
    }

    mutating func count(_ name: String) { counters[name, default: 0] += 1 }

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

    /// The account's app receipt in `environment` (one per account and environment).
    mutating func receipt(for user: String, _ environment: AppStoreEnvironment) -> String {
        let owner = ReceiptOwner(user: user, environment: environment)
        if let existing = receiptByOwner[owner] { return existing }
        let token = Base64.encode(Array("SIMRECEIPT|\(random.alphanumerics(32))".utf8), .standardPadded)
        receipts[token] = owner
        receiptByOwner[owner] = token
        return token
    }

    /// The faults for `endpoint` on this request, spending one unit of a limited plan.
    mutating func consumeFaults(for endpoint: String) -> AppStoreEndpointFaults {
        let key = faults.endpoints[endpoint] != nil ? endpoint : "*"
        guard let plan = faults.endpoints[key] else { return AppStoreEndpointFaults() }
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

/// A purchase that failed on the device (no transaction id reaches the server).
public struct FailedPurchase: Sendable, Codable, Hashable {
    public var user: String
    public var productID: String
    /// What the app had put in `applicationUsername` / `appAccountToken`.
    public var appAccountToken: UUID?
    public var environment: AppStoreEnvironment
    public var reason: String
}
