// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// One purchase in a receipt's `in_app` or `latest_receipt_info` (Apple writes every value as a
/// string, dates as milliseconds).
public struct ReceiptTransaction: Sendable, Hashable {
    public var transactionID: String
    public var originalTransactionID: String
    public var productID: String
    /// Apple's `quantity`; 0 when the entry has none or one that is not a count from 1 to
    /// 1,000,000 (not a number, zero, negative, too large): unknown, never guessed (Apple's
    /// answers always carry it).
    public var quantity: Int
    public var purchaseDate: Date
    public var originalPurchaseDate: Date?
    public var expiresDate: Date?
    /// Set when Apple refunded or revoked the purchase.
    public var cancellationDate: Date?
    public var cancellationReason: Int?
    public var isTrialPeriod: Bool?
    public var inAppOwnershipType: String?
    public var webOrderLineItemID: String?

    public init(transactionID: String, originalTransactionID: String, productID: String, quantity: Int = 1, purchaseDate: Date,
                originalPurchaseDate: Date? = nil, expiresDate: Date? = nil, cancellationDate: Date? = nil,
                cancellationReason: Int? = nil, isTrialPeriod: Bool? = false, inAppOwnershipType: String? = "PURCHASED",
                webOrderLineItemID: String? = nil) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.quantity = quantity
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.cancellationDate = cancellationDate
        self.cancellationReason = cancellationReason
        self.isTrialPeriod = isTrialPeriod
        self.inAppOwnershipType = inAppOwnershipType
        self.webOrderLineItemID = webOrderLineItemID
    }

    init?(_ json: JSONValue) {
        func text(_ name: String) -> String? {
            switch json[name] {
            case .string(let value)?: return value
            case .int(let value)?: return String(value)
            default: return nil
            }
        }
        func date(_ name: String) -> Date? { text(name).flatMap { Int64($0) }.map(Date.init(millisecondsSince1970:)) }
        guard let transactionID = text("transaction_id"), !transactionID.isEmpty, let productID = text("product_id"),
              let purchaseDate = date("purchase_date_ms") else { return nil }
        self.init(
            transactionID: transactionID, originalTransactionID: text("original_transaction_id") ?? transactionID,
            productID: productID, quantity: text("quantity").map(Self.count) ?? 0, purchaseDate: purchaseDate,
            originalPurchaseDate: date("original_purchase_date_ms"), expiresDate: date("expires_date_ms"),
            cancellationDate: date("cancellation_date_ms"), cancellationReason: text("cancellation_reason").flatMap { Int($0) },
            isTrialPeriod: text("is_trial_period").map { $0 == "true" }, inAppOwnershipType: text("in_app_ownership_type"),
            webOrderLineItemID: text("web_order_line_item_id"))
    }

    /// A quantity as Apple writes it, digits only, from 1 to 1,000,000; 0 otherwise.
    static func count(_ text: String) -> Int {
        guard (1...7).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let value = Int(text), AppStoreTransaction.quantityRange.contains(value) else { return 0 }
        return value
    }

    /// The JSON Apple writes for it (the simulator answers with this).
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "transaction_id": .string(transactionID), "original_transaction_id": .string(originalTransactionID),
            "product_id": .string(productID), "quantity": .string(String(quantity)),
            "purchase_date_ms": .string(String(purchaseDate.millisecondsSince1970)),
            "original_purchase_date_ms": .string(String((originalPurchaseDate ?? purchaseDate).millisecondsSince1970)),
        ]
        members["expires_date_ms"] = expiresDate.map { .string(String($0.millisecondsSince1970)) }
        members["cancellation_date_ms"] = cancellationDate.map { .string(String($0.millisecondsSince1970)) }
        members["cancellation_reason"] = cancellationReason.map { .string(String($0)) }
        members["is_trial_period"] = isTrialPeriod.map { .string($0 ? "true" : "false") }
        members["in_app_ownership_type"] = inAppOwnershipType.map { .string($0) }
        members["web_order_line_item_id"] = webOrderLineItemID.map { .string($0) }
        return .object(members)
    }
}

/// verifyReceipt's answer for a receipt Apple decoded (status 0 or 21006).
public struct VerifiedReceipt: Sendable, Hashable {
    public var status: ReceiptStatus
    /// Where the receipt was verified (after any 21007/21008 redirect).
    public var environment: AppStoreEnvironment
    /// `receipt.bundle_id`.
    public var bundleID: String
    /// `receipt.in_app`: the purchases in the app receipt.
    public var inApp: [ReceiptTransaction]
    /// `latest_receipt_info` (with a shared secret): the latest renewals, without finished consumables.
    public var latestReceiptInfo: [ReceiptTransaction]
    /// `latest_receipt`, when present.
    public var latestReceipt: String?

    /// The purchase `transactionID`, if the receipt holds it (in `in_app` or `latest_receipt_info`).
    public func transaction(_ transactionID: String) -> ReceiptTransaction? {
        inApp.first { $0.transactionID == transactionID } ?? latestReceiptInfo.first { $0.transactionID == transactionID }
    }
}
