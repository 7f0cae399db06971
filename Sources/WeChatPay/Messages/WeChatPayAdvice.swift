// SPDX-License-Identifier: Apache-2.0

/// What the caller should do after a WeChat Pay call did not simply succeed.
///
/// Every documented `err_code` maps to one of these (``WeChatPayErrorCode/advice(for:)``), and so
/// does every other failure of the pipeline (``WeChatPayError/advice``). The raw values are stable
/// snake_case labels, fit for metrics and logs.
public enum WeChatPayAdvice: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Send the same request again, with the same `out_trade_no` / `out_refund_no` and the same
    /// parameters (WeChat treats an identical resend as a re-entry, never as a second order or refund).
    case retrySameParameters = "retry_same_parameters"
    /// As ``retrySameParameters``, but only after a pause (rate limits: a minute or more).
    case retryLater = "retry_later"
    /// The outcome is unknown: ask with `orderquery` / `refundquery` before deciding anything.
    /// The conservative answer for codes this package does not know.
    case query
    /// The order is already paid: settle it as paid (after confirming the amount with
    /// `orderquery` or the notify) and fulfil it.
    case treatAsPaid = "treat_as_paid"
    /// The order is already closed: record it as closed; nothing more to do.
    case treatAsClosed = "treat_as_closed"
    /// This `out_trade_no` can no longer be used (closed, or used with other parameters): close the
    /// old one if it may still be paid, then create the order again under a new `out_trade_no`.
    case useNewOutTradeNo = "use_new_out_trade_no"
    /// WeChat has no such order or refund (never created, or never paid for a refund).
    case doesNotExist = "does_not_exist"
    /// The request's parameters are wrong (missing, malformed, inconsistent): fix them; resending
    /// the same request fails again.
    case fixRequest = "fix_request"
    /// The merchant configuration is wrong (AppID, merchant number, key, permissions, certificate):
    /// an operator must fix it; resending fails again.
    case fixConfiguration = "fix_configuration"
    /// The refund cannot go through WeChat (payment older than a year, payer account closed):
    /// refund the payer by other means.
    case refundOffline = "refund_offline"
    /// The merchant's refundable balance is too low: top it up, then retry with the same parameters.
    case topUpBalance = "top_up_balance"
    /// The payer must act (e.g. pay with another card); the merchant can only wait.
    case payerAction = "payer_action"
    /// A business error WeChat describes only in `err_code_des`: a person must look at it.
    case manualReview = "manual_review"

    /// Whether resending the identical request is the right reaction (now or after a pause).
    public var isRetryable: Bool {
        self == .retrySameParameters || self == .retryLater
    }

    public var description: String { rawValue }
}
