// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// The error answers of support's actions on the attention list: assigning an unclaimed App Store
/// purchase to an order, and marking an order's attention flags handled (docs/api.md).
extension APIError {
    /// 404: the ledger holds no App Store transaction with this id (the gateway never saw it).
    static let appleTransactionNotFound = APIError(
        status: 404, code: "apple_transaction_not_found",
        message: "the gateway has no App Store transaction with this id (look it up by the customer's Apple order id first)")

    /// 409: the transaction credited an order already, another than the one named.
    static func transactionAlreadyCredited(_ outTradeNo: String) -> APIError {
        APIError(status: 409, code: "transaction_already_credited",
                 message: "this App Store transaction credited order \(outTradeNo) already; a transaction credits one order only")
    }

    /// 409: the purchase can never be credited (Apple refunded or revoked it, a family member's).
    static func transactionNotAssignable(_ reason: String) -> APIError {
        APIError(status: 409, code: "transaction_not_assignable", message: "this purchase cannot be assigned: \(reason)")
    }

    /// 409: the order named cannot take this purchase (not an iOS order, another product, paid
    /// already, no user, or the purchase is tied to another user).
    static func orderNotAssignable(_ reason: String) -> APIError {
        APIError(status: 409, code: "order_not_assignable", message: "the purchase cannot be assigned to this order: \(reason)",
                 field: "out_trade_no")
    }

    /// 409: the order carries no attention flag (or none of those named) to mark handled.
    static let noAttentionFlag = APIError(
        status: 409, code: "no_attention_flag",
        message: "the order carries no flag needing attention (of those named): nothing to mark handled")
}

/// The reason support gives for an action that changes what the attention list shows: required,
/// kept on the order's timeline and in the audit log.
public enum SupportReason {
    /// Characters a reason may have.
    public static let lengths = 1...200

    /// A JSON body's `reason` member by the same rule and with the same message, whatever is wrong
    /// with it (missing, not a string, empty, blank, too long, a control character).
    static func parse(member object: [String: JSONValue]) throws(APIError) -> String {
        guard case .string(let text) = object["reason"] else { return try parse(nil) }
        return try parse(text)
    }

    /// The reason trimmed, or 400 naming `reason`: 1 to 200 characters, none of the control,
    /// text-direction or invisible characters free text refuses (`HiddenCharacters.refusedInFreeText`):
    /// an override would turn the rest of an audit line around wherever it is shown.
    public static func parse(_ text: String?) throws(APIError) -> String {
        let trimmed = (text ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard lengths.contains(trimmed.count), !HiddenCharacters.refusedInFreeText(trimmed),
              HiddenCharacters.showsSomething(trimmed)
        else {
            throw .invalid("reason", "reason is required: 1 to 200 characters saying why, no control, text-direction or invisible characters")
        }
        return trimmed
    }

}
