// SPDX-License-Identifier: Apache-2.0
import AppStore
import Crypto
import Foundation
import HTTP
import JSON

extension AppStoreSimulator {
    static let pageSize = 20

    static let transactionNotFound = apiError(404, 4_040_010, "Transaction id not found.")
    static let invalidTransactionID = apiError(400, 4_000_006, "Invalid transaction id.")
    static let invalidRevision = apiError(400, 4_000_005, "Invalid request revision.")

    /// Get Transaction Info.
    func transactionInfo(_ id: String, environment: AppStoreEnvironment, now: Date, store: inout StoreState)
        -> AppStoreSimulatorResponse
    {
        guard Self.isTransactionID(id) else { return Self.invalidTransactionID }
        guard let record = store.transactions[id], record.transaction.environment == environment else {
            return Self.transactionNotFound
        }
        return Self.json(["signedTransactionInfo": .string(signedTransaction(record, now: now, store: store))])
    }

    /// Get Transaction History (v1 and v2 answer alike here): the account's transactions, 20 a page.
    func history(_ id: String, query: HTTPServerQuery, environment: AppStoreEnvironment, now: Date, store: inout StoreState)
        -> AppStoreSimulatorResponse
    {
        guard Self.isTransactionID(id) else { return Self.invalidTransactionID }
        guard let anchor = store.transactions[id], anchor.transaction.environment == environment else {
            return Self.transactionNotFound
        }
        var list = store.transactions(of: anchor.user, environment)
        let products = query.values(for: "productId")
        if !products.isEmpty { list = list.filter { products.contains($0.transaction.productID) } }
        // Apple's Python library writes the flag as Python prints booleans ("True").
        switch query["revoked"]?.lowercased() {
        case "true": list = list.filter { $0.transaction.revocationDate != nil }
        case "false": list = list.filter { $0.transaction.revocationDate == nil }
        default: break
        }
        if query["sort"] == "DESCENDING" { list.reverse() }
        return page(list, revision: query["revision"], now: now, store: store, extra: [
            "bundleId": .string(configuration.bundleID), "appAppleId": .int(Int(configuration.appAppleID)),
            "environment": .string(environment.rawValue),
        ])
    }

    /// Get Refund History: the account's refunded or revoked transactions.
    func refundHistory(_ id: String, query: HTTPServerQuery, environment: AppStoreEnvironment, now: Date,
                       store: inout StoreState) -> AppStoreSimulatorResponse {
        guard Self.isTransactionID(id) else { return Self.invalidTransactionID }
        guard let anchor = store.transactions[id], anchor.transaction.environment == environment else {
            return Self.transactionNotFound
        }
        let refunded = store.transactions(of: anchor.user, environment).filter { $0.transaction.revocationDate != nil }
        return page(refunded, revision: query["revision"], now: now, store: store, extra: [:])
    }

    /// Look Up Order ID: production only, as at Apple.
    func lookUpOrder(_ orderID: String, environment: AppStoreEnvironment, now: Date, store: inout StoreState)
        -> AppStoreSimulatorResponse
    {
        guard environment == .production else {
            return AppStoreSimulatorResponse(status: 404, contentType: "text/plain", body: Array("Not Found\n".utf8))
        }
        let matches = store.chronology.compactMap { store.transactions[$0] }
            .filter { $0.orderID == orderID && $0.transaction.environment == .production }
        guard !matches.isEmpty else { return Self.json(["status": 1]) }
        return Self.json(["status": 0, "signedTransactions": .array(matches.map {
            .string(signedTransaction($0, now: now, store: store))
        })])
    }

    private func page(_ list: [SimulatedTransaction], revision: String?, now: Date, store: StoreState,
                      extra: [String: JSONValue]) -> AppStoreSimulatorResponse {
        var offset = 0
        if let revision {
            guard let bytes = Base64.decode(revision, .urlUnpadded), let text = String(validating: bytes, as: UTF8.self),
                  text.hasPrefix("offset:"), let value = Int(text.dropFirst("offset:".count)), value >= 0, value <= list.count
            else { return Self.invalidRevision }
            offset = value
        }
        let end = min(list.count, offset + Self.pageSize)
        var body = extra
        body["signedTransactions"] = .array(list[offset..<end].map { .string(signedTransaction($0, now: now, store: store)) })
        body["hasMore"] = .bool(end < list.count)
        body["revision"] = .string(Base64.encode(Array("offset:\(end)".utf8), .urlUnpadded))
        return Self.json(.object(body))
    }

    static func isTransactionID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 32 && id.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    // MARK: - verifyReceipt

    /// The legacy endpoint: every status of Apple's table, by what the request is.
    func verifyReceipt(_ request: AppStoreSimulatorRequest, environment: AppStoreEnvironment, now: Date,
                       store: inout StoreState) -> AppStoreSimulatorResponse {
        func status(_ code: Int, retryable: Bool? = nil) -> AppStoreSimulatorResponse {
            store.count("receipt status \(code)")
            var body: [String: JSONValue] = ["status": .int(code), "environment": .string(environment.rawValue)]
            if let retryable { body["is-retryable"] = .bool(retryable) }
            return Self.json(.object(body))
        }
        guard request.method == "POST" else { return status(21000) }
        guard let json = try? JSONValue.parse(request.body), let data = json["receipt-data"]?.stringValue,
              let decoded = Base64.decode(data, .standardPadded), !decoded.isEmpty else { return status(21002) }
        if let (code, retryable) = store.receiptOverride {
            if code == 0 || code == 21006 {
                // A decoded receipt with this status (21006: an expired subscription).
                if let issued = store.receipts[data] {
                    return receiptAnswer(code, issued: issued, password: json["password"], now: now, store: &store)
                }
            } else {
                return status(code, retryable: (21100...21199).contains(code) ? retryable : nil)
            }
        }
        // Only receipts it issued: anything else is base64 it cannot authenticate.
        guard let issued = store.receipts[data] else { return status(21003) }
        if let secret = configuration.sharedSecret, let password = json["password"]?.stringValue, password != secret {
            return status(21004)
        }
        if issued.owner.environment == .sandbox && environment == .production { return status(21007) }
        if issued.owner.environment == .production && environment == .sandbox { return status(21008) }
        return receiptAnswer(0, issued: issued, password: json["password"], now: now, store: &store)
    }

    /// The receipt's own purchases (`in_app`: what it held when issued, as they stand now), and
    /// with a `password` the account's latest ones and its latest receipt.
    private func receiptAnswer(_ code: Int, issued: StoreState.IssuedReceipt, password: JSONValue?, now: Date,
                               store: inout StoreState) -> AppStoreSimulatorResponse {
        store.count("receipt status \(code)")
        let owner = issued.owner
        let purchases = issued.transactionIDs.compactMap { store.transactions[$0] }.map { Self.receiptEntry($0.transaction) }
        var body: [String: JSONValue] = [
            "status": .int(code), "environment": .string(owner.environment.rawValue),
            "receipt": [
                "bundle_id": .string(configuration.bundleID), "application_version": "1",
                "receipt_type": owner.environment == .production ? "Production" : "ProductionSandbox",
                "receipt_creation_date_ms": .string(String(now.millisecondsSince1970)),
                "in_app": .array(purchases.map(\.json)),
            ],
        ]
        if password != nil {
            // latest_receipt_info leaves out consumables, as Apple's does once they are finished.
            let latest = store.transactions(of: owner.user, owner.environment)
                .filter { $0.transaction.type != .consumable }.map { Self.receiptEntry($0.transaction).json }
            body["latest_receipt_info"] = .array(latest)
            body["latest_receipt"] = store.receiptByOwner[owner].map { .string($0) }
        }
        return Self.json(.object(body))
    }

    static func receiptEntry(_ transaction: AppStoreTransaction) -> ReceiptTransaction {
        ReceiptTransaction(
            transactionID: transaction.transactionID, originalTransactionID: transaction.originalTransactionID,
            productID: transaction.productID, quantity: transaction.quantity, purchaseDate: transaction.purchaseDate,
            originalPurchaseDate: transaction.originalPurchaseDate, expiresDate: transaction.expiresDate,
            cancellationDate: transaction.revocationDate, cancellationReason: transaction.revocationReason,
            isTrialPeriod: false, inAppOwnershipType: transaction.inAppOwnershipType?.rawValue,
            webOrderLineItemID: transaction.webOrderLineItemID)
    }
}
