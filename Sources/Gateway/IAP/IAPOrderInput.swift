// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import Observability

/// A validated `POST /v1/iap/orders` body. With an app token: `{"product_id", "out_trade_no"?,
/// "attach"?}` for the token's user; with a client token (the backend proxies the app) also
/// `"user_id"` (required) and `"expires_in"`. The catalog decides the product, its price and its
/// App Store product id.
struct IAPOrderInput: Sendable, Hashable {
    var productID: String
    var outTradeNo: String?
    var attach: String?
    var userID: String
    var expiresIn: Int
    /// The `expires_in` an App Store order may be given, in seconds.
    static let lifetimes = 300...86400
    /// The app's address (app tokens), kept for support; "" when the backend created it.
    var clientIP: String

    static let appFields: Set<String> = ["product_id", "out_trade_no", "attach"]
    static let clientFields: Set<String> = appFields.union(["user_id", "expires_in"])

    /// - Parameter user: the app token's `sub`, or nil for a client token (then `user_id` is required).
    init(json body: [UInt8], user: String?, peerIP: String?) throws(APIError) {
        let object = try CreateOrderInput.members(of: body)
        if user != nil, let forbidden = ["user_id", "expires_in", "amount", "description"].first(where: { object[$0] != nil }) {
            throw .fieldNotAllowed(forbidden)
        }
        let allowed = user == nil ? Self.clientFields : Self.appFields
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw .invalid(CreateOrderInput.printableField(unknown), "unknown field")
        }
        guard let productID = try CreateOrderInput.string(object, "product_id", required: true, bytes: 1...32) else {
            throw .invalid("product_id", "product_id is required")
        }
        self.productID = productID
        outTradeNo = try CreateOrderInput.outTradeNo(object)
        attach = try CreateOrderInput.string(object, "attach", required: false, bytes: 0...127)
        if let user {
            userID = user
        } else {
            guard let given = try UserID.member(of: object, required: true) else {
                throw .invalid("user_id", "user_id is required with a client token")
            }
            userID = given
        }
        expiresIn = try CreateOrderInput.integer(object, "expires_in", required: false, range: Self.lifetimes)
            ?? CreateOrderInput.defaultExpiresIn
        clientIP = user == nil ? "" : (peerIP ?? "")
    }

    /// The parameters the client chose, for idempotency; `apple|` keeps it from ever equalling a
    /// WeChat create's digest, so an out_trade_no is one channel's only.
    var parametersDigest: String {
        "apple|" + [productID, userID, attach ?? "", String(expiresIn)].map { "\($0.utf8.count):\($0)" }.joined(separator: "|")
    }
}

/// A validated `POST /v1/iap/transactions` body: one of `signed_transaction` (StoreKit 2's JWS),
/// `transaction_id` (looked up with the Server API), or `receipt` with `transaction_id` (StoreKit 1's
/// app receipt and the id the app saw), plus `out_trade_no`? and, with a client token, `user_id`.
struct IAPReportInput: Sendable, Hashable {
    enum Evidence: Sendable, Hashable {
        case signedTransaction(String)
        case transactionID(String)
        case receipt(String, transactionID: String)

        /// The field name, for the timeline and metrics.
        var name: String {
            switch self {
            case .signedTransaction: "signed_transaction"
            case .transactionID: "transaction_id"
            case .receipt: "receipt"
            }
        }

        var isSignedTransaction: Bool {
            if case .signedTransaction = self { return true }
            return false
        }
    }

    var evidence: Evidence
    var outTradeNo: String?
    var userID: String

    static let appFields: Set<String> = ["signed_transaction", "transaction_id", "receipt", "out_trade_no"]
    static let clientFields: Set<String> = appFields.union(["user_id"])
    /// A JWS the verifier would refuse anyway; receipts are capped by the receipt client (512 KiB).
    static let maximumSignedTransaction = 64 * 1024

    init(json body: [UInt8], user: String?) throws(APIError) {
        let object: [String: JSONValue]
        do {
            // The create's reading, so a name given twice or a byte that is not UTF-8 is said as such.
            object = try CreateOrderInput.members(of: body)
        } catch {
            throw .invalidReport(error.field, error.message)
        }
        if user != nil, object["user_id"] != nil {
            var error = APIError.fieldNotAllowed("user_id")
            error.finishTransaction = false
            throw error
        }
        let allowed = user == nil ? Self.clientFields : Self.appFields
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw .invalidReport(CreateOrderInput.printableField(unknown), "unknown field")
        }
        func text(_ name: String, _ bytes: ClosedRange<Int>) throws(APIError) -> String? {
            do {
                return try CreateOrderInput.string(object, name, required: false, bytes: bytes)
            } catch {
                throw error.keepingTransaction()
            }
        }
        let signed = try text("signed_transaction", 1...Self.maximumSignedTransaction)
        let transactionID = try text("transaction_id", 1...32)
        let receipt = try text("receipt", 1...(512 * 1024))
        if let transactionID, !transactionID.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            throw .invalidReport("transaction_id", "transaction_id must be Apple's digits")
        }
        switch (signed, transactionID, receipt) {
        case (let signed?, nil, nil): evidence = .signedTransaction(signed)
        case (nil, let id?, nil): evidence = .transactionID(id)
        case (nil, let id?, let receipt?): evidence = .receipt(receipt, transactionID: id)
        case (nil, nil, .some):
            throw .invalidReport("transaction_id", "a receipt needs the transaction_id the app saw: it must be in the receipt")
        default:
            throw .invalidReport(nil, "give one of signed_transaction, transaction_id, or receipt with transaction_id")
        }
        do {
            outTradeNo = try CreateOrderInput.outTradeNo(object)
        } catch {
            throw error.keepingTransaction()
        }
        if let user {
            userID = user
        } else {
            // The one user id rule (App/UserID.swift), as for every other user_id.
            let given: String?
            do {
                given = try UserID.member(of: object, required: true)
            } catch {
                throw error.keepingTransaction()
            }
            guard let given else { throw .invalidReport("user_id", "user_id is required with a client token") }
            userID = given
        }
    }
}
