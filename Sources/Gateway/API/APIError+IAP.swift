// SPDX-License-Identifier: Apache-2.0
import StorageCore

/// The error answers of iOS purchases. Every answer to a transaction report says whether the app
/// may finish the StoreKit transaction (`finish_transaction`): true only when nothing more can be
/// credited with it — it was credited already, or it never can be.
extension APIError {
    /// 404 for every iOS route while App Store purchases are off (APPSTORE_BUNDLE_ID unset).
    static let notFound = APIError(status: 404, code: "not_found", message: "no such route")

    /// 400: the product is not in the catalog, not active, or has no `apple_product_id`.
    static let unknownAppleProduct = APIError(
        status: 400, code: "unknown_product", message: "no active catalog product with an apple_product_id has that product_id",
        field: "product_id")

    /// 400: a promotional offer signature for a product that is not an auto-renewable
    /// subscription of the iOS app (a course, a consumable, a WeChat-only membership).
    static let notASubscription = APIError(
        status: 400, code: "not_a_subscription",
        message: "promotional offers exist for auto-renewable subscriptions only: this product is not a membership with an "
            + "apple_product_id", field: "product_id")

    /// 503: promotional offer signatures and subscription extensions need the In-App Purchase key,
    /// which is not configured (no retry mends it: the operator must).
    static let appStoreKeyMissing = APIError(
        status: 503, code: "appstore_key_missing",
        message: "this needs the App Store's In-App Purchase key (it signs promotional offers and calls the Server API): "
            + "configure APPSTORE_ISSUER_ID, APPSTORE_KEY_ID and APPSTORE_PRIVATE_KEY_FILE")

    /// 404: Apple knows no subscription with that original transaction id (in the environments asked).
    static let subscriptionNotFound = APIError(
        status: 404, code: "subscription_not_found",
        message: "the App Store knows no auto-renewable subscription with this original_transaction_id", field: "original_transaction_id")

    /// 409: Apple refused to extend the subscription's renewal date, and says why.
    static func extensionRefused(_ why: String) -> APIError {
        APIError(status: 409, code: "extension_refused", message: "the App Store did not extend the renewal date: \(why)")
    }

    /// 409: the transaction credited another user's order before (finish: it is spent).
    static let transactionAlreadyUsed = APIError(
        status: 409, code: "transaction_already_used",
        message: "this App Store transaction was credited to another user's order; it credits one order only",
        finishTransaction: true)

    /// 422: a transaction that can never be credited (another app's, revoked, a product not in the
    /// catalog, the sandbox when it is not accepted, a family member's purchase): finish it.
    static func transactionNotCreditable(_ reason: String) -> APIError {
        APIError(status: 422, code: "transaction_not_creditable", message: "this transaction can never be credited: \(reason)",
                 finishTransaction: true)
    }

    /// 409: a purchase reported with weak evidence (a bare transaction id, a receipt whose signature
    /// was not verified) that nothing ties to the reporter: not credited to anyone, kept in the
    /// ledger for the signed report or support (keep it: the signed transaction credits it).
    static let transactionUnclaimed = APIError(
        status: 409, code: "transaction_unclaimed",
        message: "nothing ties this transaction to your account: a transaction_id (or a receipt whose signature is not verified) "
            + "cannot claim a purchase; report the signed_transaction (or a verifiable receipt)",
        finishTransaction: false)

    /// 413 for a report whose body passes its route's cap: the JSON an app acts on (keep the
    /// transaction), instead of the HTTP server's plain text. Sent before the body is read.
    static func reportTooLarge(limit: Int) -> APIError {
        APIError(status: 413, code: "payload_too_large",
                 message: "the report is larger than \(limit / 1024) KiB (a receipt may be at most 512 KiB of base64); nothing was read",
                 finishTransaction: false)
    }

    /// 422: the receipt does not contain the transaction (`status` 0 is not proof).
    static let transactionNotInReceipt = APIError(
        status: 422, code: "transaction_not_in_receipt",
        message: "the receipt does not contain this transaction_id; report it again with a fresh receipt",
        finishTransaction: false)

    /// 422: signed data that does not verify (a forgery, or a receipt Apple could not authenticate).
    static func invalidSignedData(_ rule: String) -> APIError {
        APIError(status: 422, code: "invalid_signed_data", message: "the signed data did not verify (\(rule)); nothing was changed",
                 finishTransaction: false)
    }

    /// 422: Apple knows no transaction with this id (in either environment asked).
    static let transactionNotFound = APIError(
        status: 422, code: "transaction_not_found", message: "the App Store knows no transaction with this transaction_id",
        finishTransaction: false)

    /// 400: `transaction_id` alone needs the Server API, which is not configured.
    static let transactionLookupUnavailable = APIError(
        status: 400, code: "invalid_request",
        message: "transaction_id alone needs the App Store Server API (APPSTORE_ISSUER_ID, APPSTORE_KEY_ID, "
            + "APPSTORE_PRIVATE_KEY_FILE); send signed_transaction, or receipt with transaction_id",
        field: "transaction_id", finishTransaction: false)

    /// 400: a support look-up at Apple (Look Up Order ID) needs the Server API.
    static func transactionLookupUnavailable(field: String) -> APIError {
        APIError(status: 400, code: "invalid_request",
                 message: "\(field) is looked up with the App Store Server API (APPSTORE_ISSUER_ID, APPSTORE_KEY_ID, "
                     + "APPSTORE_PRIVATE_KEY_FILE), which is not configured", field: field)
    }

    /// 503: Apple could not be reached after a few retries: keep the transaction, report it again.
    static let appStoreUnavailable = APIError(
        status: 503, code: "appstore_unavailable",
        message: "the App Store could not be reached or kept failing; keep the transaction and report it again later",
        finishTransaction: false)

    /// 503 to support: Apple, asked before an assignment, could not be reached; nothing was assigned.
    static let appStoreUnavailableForAssignment = APIError(
        status: 503, code: "appstore_unavailable",
        message: "the App Store could not be reached or kept failing, and an assignment asks it first; nothing was "
            + "assigned: try again later")

    /// 404: no consumption request about this transaction (Apple sent no CONSUMPTION_REQUEST for it).
    static let consumptionRequestNotFound = APIError(
        status: 404, code: "consumption_request_not_found",
        message: "Apple has asked for no consumption information about this transaction")

    /// 409: the request was answered already (by the business, or by the configured defaults).
    static func consumptionAlreadyAnswered(_ by: ConsumptionAnswerSource) -> APIError {
        APIError(status: 409, code: "consumption_already_answered",
                 message: by == .defaults
                     ? "the consumption request was answered by the configured defaults (APPSTORE_CONSUMPTION_DEFAULTS) already"
                     : "the consumption request was answered already, with another answer")
    }

    /// 409: Apple's 12 hours to answer passed.
    static let consumptionRequestExpired = APIError(
        status: 409, code: "consumption_request_expired",
        message: "Apple takes consumption information for 12 hours after its request; this one is over")

    /// 400: sending consumption information needs the App Store Server API key.
    static let consumptionUnavailable = APIError(
        status: 400, code: "invalid_request",
        message: "consumption information is sent with the App Store Server API: configure APPSTORE_ISSUER_ID, "
            + "APPSTORE_KEY_ID and APPSTORE_PRIVATE_KEY_FILE")

    /// A report's validation error (400), which never lets the app finish.
    static func invalidReport(_ field: String?, _ message: String) -> APIError {
        var error = APIError.invalid(field, message)
        error.finishTransaction = false
        return error
    }

    /// The same error, saying the transaction must be kept (storage failures while reporting, 401/403).
    func keepingTransaction() -> APIError {
        var error = self
        if error.finishTransaction == nil { error.finishTransaction = false }
        return error
    }
}
