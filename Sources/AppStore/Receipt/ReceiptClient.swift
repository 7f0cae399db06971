// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// The legacy `verifyReceipt` endpoint, for apps still on StoreKit 1 that send a base64 app receipt.
///
/// - Production first (or the configured first environment); 21007 (a sandbox receipt) asks the
///   sandbox, 21008 (a production receipt) asks production, once each.
/// - 21002, 21005, 21009, and 21100–21199 marked `is-retryable`, are retried with backoff, like
///   5xx answers and network failures; every other status ends the call as a typed error.
/// - ``transaction(_:inReceipt:)`` answers only with a purchase **in** the receipt: `status` 0
///   says the receipt as a whole is valid, nothing about one transaction.
///
/// ```swift
/// let receipts = ReceiptClient(configuration: .init(bundleID: "com.example.courses", sharedSecret: secret),
///                              transport: curl, clock: SystemAppStoreClock())
/// let purchase = try await receipts.transaction("1000000812345678", inReceipt: body.receipt)
/// ```
public struct ReceiptClient: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// The app's bundle id: a receipt of another app is refused.
        public var bundleID: String
        /// The app-specific shared secret (`password`), needed for auto-renewable subscriptions.
        public var sharedSecret: String?
        /// `exclude-old-transactions`: only the latest renewal of each subscription.
        public var excludeOldTransactions: Bool
        /// Default `https://buy.itunes.apple.com/verifyReceipt`.
        public var productionURL: String
        /// Default `https://sandbox.itunes.apple.com/verifyReceipt`.
        public var sandboxURL: String
        /// Follow 21007 to the sandbox. Default true (App Review buys in the sandbox).
        public var allowsSandbox: Bool
        /// Where to ask first. Default production, as Apple says.
        public var firstEnvironment: AppStoreEnvironment
        public var retry: AppStoreRetryPolicy

        public init(bundleID: String, sharedSecret: String? = nil, excludeOldTransactions: Bool = false,
                    productionURL: String = "https://buy.itunes.apple.com/verifyReceipt",
                    sandboxURL: String = "https://sandbox.itunes.apple.com/verifyReceipt", allowsSandbox: Bool = true,
                    firstEnvironment: AppStoreEnvironment = .production, retry: AppStoreRetryPolicy = AppStoreRetryPolicy()) {
            self.bundleID = bundleID
            self.sharedSecret = sharedSecret
            self.excludeOldTransactions = excludeOldTransactions
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
            self.allowsSandbox = allowsSandbox
            self.firstEnvironment = firstEnvironment
            self.retry = retry
        }
    }

    /// Real app receipts are a few KiB to a few hundred; beyond this it is not a receipt.
    public static let maximumReceiptSize = 512 * 1024

    public let configuration: Configuration
    private let transport: any AppStoreTransport
    private let clock: any AppStoreClock

    public init(configuration: Configuration, transport: any AppStoreTransport, clock: any AppStoreClock) {
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
    }

    /// The purchase `transactionID` from the receipt, verified by Apple, or an error — never a
    /// bare `status` 0.
    public func transaction(_ transactionID: String, inReceipt receiptData: String)
        async throws(ReceiptError) -> (transaction: ReceiptTransaction, receipt: VerifiedReceipt)
    {
        let receipt = try await verify(receiptData)
        guard let transaction = receipt.transaction(transactionID) else { throw ReceiptError(.transactionNotInReceipt) }
        return (transaction, receipt)
    }

    /// Verifies a receipt and returns what Apple decoded (status 0 or 21006) for this app.
    public func verify(_ receiptData: String) async throws(ReceiptError) -> VerifiedReceipt {
        guard !receiptData.isEmpty, receiptData.utf8.count <= Self.maximumReceiptSize,
              receiptData.utf8.allSatisfy({ Self.isBase64Character($0) }) else { throw ReceiptError(.invalidRequest) }
        var body: [String: JSONValue] = ["receipt-data": .string(receiptData)]
        body["password"] = configuration.sharedSecret.map { .string($0) }
        if configuration.excludeOldTransactions { body["exclude-old-transactions"] = true }
        let bytes = JSONValue.object(body).bytes()

        var environment = configuration.firstEnvironment
        var redirected: Set<AppStoreEnvironment> = [environment]
        var attempt = 0
        while true {
            attempt += 1
            let answer = try await post(bytes, to: environment, attempt: attempt)
            guard let answer else {  // retry this environment after the backoff
                try await pause(configuration.retry.backoff(after: attempt))
                continue
            }
            let status = ReceiptStatus(rawValue: Int(answer["status"]?.intValue ?? -1))
            if status.receiptDecoded { return try decode(answer, status: status, environment: environment) }
            let other: AppStoreEnvironment? = switch status {
            case .sandboxReceipt where environment == .production && configuration.allowsSandbox: .sandbox
            case .productionReceipt where environment == .sandbox: .production
            default: nil
            }
            if let other, !redirected.contains(other) {
                redirected.insert(other)
                environment = other
                attempt = 0
                continue
            }
            let retryable = status == .malformedOrTemporary || status == .serverUnavailable || status == .internalError
                || (status.isInternalDataAccessError
                    && (answer["is-retryable"]?.boolValue ?? answer["is_retryable"]?.boolValue ?? false))
            guard retryable, attempt < configuration.retry.maximumAttempts else {
                throw ReceiptError(.status, status: status, isRetryable: retryable)
            }
            try await pause(configuration.retry.backoff(after: attempt))
        }
    }

    /// One POST. Returns the answer's JSON, nil for a failure worth retrying (5xx, network), or throws.
    private func post(_ body: [UInt8], to environment: AppStoreEnvironment, attempt: Int) async throws(ReceiptError) -> JSONValue? {
        let url = environment == .production ? configuration.productionURL : configuration.sandboxURL
        let last = attempt >= configuration.retry.maximumAttempts
        let response: AppStoreResponse
        do {
            response = try await transport.send(AppStoreRequest(
                method: .post, url: url, headers: ["Content-Type": "application/json", "Accept": "application/json"], body: body))
        } catch {
            if last { throw ReceiptError(.transport, isRetryable: true) }
            return nil
        }
        switch response.status {
        case 200:
            guard let json = try? JSONValue.parse(response.body), json["status"]?.intValue != nil else {
                throw ReceiptError(.malformedResponse)
            }
            return json
        case 500..<600:
            if last { throw ReceiptError(.httpStatus, httpStatus: response.status, isRetryable: true) }
            return nil
        default:
            throw ReceiptError(.httpStatus, httpStatus: response.status)
        }
    }

    private func decode(_ answer: JSONValue, status: ReceiptStatus, environment: AppStoreEnvironment) throws(ReceiptError) -> VerifiedReceipt {
        guard let receipt = answer["receipt"], let bundleID = receipt["bundle_id"]?.stringValue else {
            throw ReceiptError(.malformedResponse)
        }
        guard bundleID == configuration.bundleID else { throw ReceiptError(.bundleMismatch) }
        func transactions(_ json: JSONValue?) throws(ReceiptError) -> [ReceiptTransaction] {
            guard let json else { return [] }
            guard let elements = json.arrayValue else { throw ReceiptError(.malformedResponse) }
            var result: [ReceiptTransaction] = []
            for element in elements {
                guard let transaction = ReceiptTransaction(element) else { throw ReceiptError(.malformedResponse) }
                result.append(transaction)
            }
            return result
        }
        // The answer's own environment wins over the URL's (Apple names it, and 21007 moved us).
        let named = answer["environment"]?.stringValue.flatMap(AppStoreEnvironment.init(rawValue:)) ?? environment
        return VerifiedReceipt(
            status: status, environment: named, bundleID: bundleID, inApp: try transactions(receipt["in_app"]),
            latestReceiptInfo: try transactions(answer["latest_receipt_info"]),
            latestReceipt: answer["latest_receipt"]?.stringValue)
    }

    private func pause(_ duration: Duration) async throws(ReceiptError) {
        do {
            try await clock.sleep(for: duration)
        } catch {
            throw ReceiptError(.transport, isRetryable: true)
        }
    }

    private static func isBase64Character(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): true
        default: false
        }
    }
}
