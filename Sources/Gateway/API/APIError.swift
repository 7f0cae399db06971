// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// An error answer of the gateway's JSON API: `{"error":{"code","message",…}}`.
///
/// `code` is a stable snake_case identifier clients branch on; `message` is for people and never
/// contains secrets or echoes request content at length.
public struct APIError: Error, Sendable, Hashable, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var message: String
    /// The request field a validation error is about.
    public var field: String?
    /// Seconds after which the same request may succeed (e.g. closing inside WeChat's 5 minutes).
    public var retryAfter: Int?
    /// WeChat's err_code (or return_code) when WeChat refused the request.
    public var wechatCode: String?
    /// iOS purchase reports: whether the app may now finish the StoreKit transaction, written beside
    /// `error` as `finish_transaction` (APIError+IAP.swift).
    public var finishTransaction: Bool?
    /// A create WeChat refused or failed: the order it kept (unpaid, without a prepay), which the
    /// client may not know when the gateway chose the number.
    public var outTradeNo: String?

    public init(status: Int, code: String, message: String, field: String? = nil, retryAfter: Int? = nil,
                wechatCode: String? = nil, finishTransaction: Bool? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retryAfter = retryAfter
        self.wechatCode = wechatCode
        self.finishTransaction = finishTransaction
    }

    public var description: String { "\(status) \(code): \(message)" }

    static func invalid(_ field: String?, _ message: String) -> APIError {
        APIError(status: 400, code: "invalid_request", message: message, field: field)
    }
    static let unauthorized = APIError(status: 401, code: "unauthorized", message: "a valid bearer token is required")
    static let forbidden = APIError(status: 403, code: "forbidden", message: "this token may not do that")
    /// An app token whose `apps` claim does not name the app the create goes through.
    static func appNotAllowed(_ app: String) -> APIError {
        APIError(status: 403, code: "app_not_allowed", message: "this app token may not create orders through app \(app)")
    }
    static let orderNotFound = APIError(status: 404, code: "order_not_found", message: "no order with that out_trade_no")
    /// 413 before the body is read (`GatewayAPI.jsonRoute`).
    static func payloadTooLarge(limit: Int) -> APIError {
        APIError(status: 413, code: "payload_too_large",
                 message: "the body is larger than this route's \(limit % 1024 == 0 ? "\(limit / 1024) KiB" : "\(limit) bytes"); nothing was read")
    }
    static func conflict(_ message: String) -> APIError {
        APIError(status: 409, code: "out_trade_no_conflict", message: message)
    }
    static func closeTooEarly(retryAfter: Int) -> APIError {
        APIError(status: 409, code: "close_too_early",
                 message: "WeChat does not close an order within 5 minutes of its creation", retryAfter: retryAfter)
    }
    /// The order's API version has no keys in this gateway (they were removed after it was
    /// created): nothing was sent to WeChat Pay and nothing changed; an operator restores them.
    static func apiVersionNotConfigured(_ problem: UpstreamError) -> APIError {
        APIError(status: 503, code: "api_version_not_configured",
                 message: problem.description + "; nothing was sent to WeChat Pay and nothing changed")
    }
    static func upstreamRejected(_ wechatCode: String, _ message: String) -> APIError {
        APIError(status: 502, code: "upstream_rejected", message: message, wechatCode: wechatCode)
    }
    /// WeChat says the appid the order's app goes through is not bound to the merchant: a
    /// configuration fault (WXPAY_APPS), which no retry mends.
    static func appIDNotBound(_ wechatCode: String) -> APIError {
        APIError(status: 502, code: "appid_not_bound",
                 message: "WeChat Pay says this app's appid is not bound to the merchant (mch_id): bind it in the merchant platform's AppID account management, or fix WXPAY_APPS",
                 wechatCode: wechatCode)
    }
    /// WeChat says the payer's openid is not a user of the app id the order goes through: the
    /// client sent the openid it got under another of the merchant's apps (each app id has its
    /// own openids). The order keeps its out_trade_no; a create with the right openid needs a new one.
    static func openIDNotForApp(_ wechatCode: String) -> APIError {
        APIError(status: 400, code: "openid_not_for_app",
                 message: "WeChat Pay says this openid is not a user of the app's appid: send the openid the payer has under this app (wx.login or the official account's OAuth), with a new out_trade_no",
                 field: "openid", wechatCode: wechatCode)
    }
    /// WeChat failed in a way the same request may get past (a timeout, a reset, SYSTEMERROR, a
    /// garbled or badly signed answer) and the gateway's own repeats did not: the client retries
    /// the identical request after `retry_after` seconds, which is what makes a retry safe to ask for.
    static let upstreamUnavailable = APIError(
        status: 503, code: "upstream_unavailable",
        message: "WeChat Pay could not be reached or kept failing; retrying the same request is safe",
        retryAfter: upstreamRetryAfter)
    /// Seconds a client waits before repeating a request that got `upstream_unavailable`.
    static let upstreamRetryAfter = 1
    static let databaseUnavailable = APIError(
        status: 503, code: "database_unavailable",
        message: "the gateway's database cannot be reached; retrying the same request is safe", retryAfter: 1)
    /// A shutdown's grace period ended before the request's answer was ready. Whatever the
    /// request did is kept as if it had been answered (a create recorded, a refund sent), so the
    /// same request repeated is answered from the record, as every repeat is.
    static let shuttingDown = APIError(
        status: 503, code: "shutting_down",
        message: "the gateway is shutting down and this request was not answered in time; what it did is kept, and repeating the same request (the same out_trade_no or out_refund_no) is safe, here after the restart or on another instance",
        retryAfter: 1)
    public static let internalError = APIError(status: 500, code: "internal_error", message: "the gateway failed; retrying is safe")

    /// The JSON body, keys sorted (`JSONObjectWriter`: T5's hostile bodies are refused by the
    /// thousand, and `JSONSerialization`'s boxing of `[String: Any]` was its own, third writer).
    public var json: [UInt8] {
        var error = JSONObjectWriter(capacity: 160)
        error.string("code", code)
        error.string("field", field)
        error.string("message", message)
        error.string("out_trade_no", outTradeNo)
        if let retryAfter { error.number("retry_after", retryAfter) }
        error.string("wechat_code", wechatCode)
        var body = JSONObjectWriter(capacity: 192)
        body.raw("error", error.finish())
        if let finishTransaction { body.bool("finish_transaction", finishTransaction) }
        return body.finish()
    }
}
