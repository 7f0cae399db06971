// SPDX-License-Identifier: Apache-2.0
import JSON
import WeChatPay

/// A v3 failure: the HTTP status and `{"code","message","detail":{…}}`. Only 2xx answers are
/// signed; an error body is believed only for what it advises, never as a fact about an order.
public struct V3ErrorBody: Sendable, Hashable, Error, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var message: String
    /// `detail.field`, when WeChat names one.
    public var field: String?

    public init(status: Int, code: String, message: String, field: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
    }

    /// Reads an error answer; a body that is not the documented JSON (an HTML 502 from a proxy)
    /// becomes code `UNKNOWN` with the status kept, which the advice then decides by status.
    public init(status: Int, body: [UInt8]) {
        guard let reader = try? FieldReader.document(body), let code = try? reader.string("code", maxLength: 64) else {
            self.init(status: status, code: "UNKNOWN", message: "")
            return
        }
        let message = (try? reader.optionalString("message", maxLength: 512)) ?? nil
        let field = (try? reader.optionalObject("detail")?.optionalString("field", maxLength: 128)) ?? nil
        self.init(status: status, code: code, message: message ?? "", field: field)
    }

    public var body: [UInt8] {
        var members: [String: JSONValue] = ["code": .string(code), "message": .string(message)]
        if let field { members["detail"] = ["field": .string(field), "location": "body"] }
        return JSONValue.object(members).bytes()
    }

    /// The status and code only: WeChat's message may quote what was sent.
    public var description: String { "WeChat Pay v3 answered \(status) \(code)" }

    /// What to do, in v2's words, so the order flows decide once for both versions:
    /// retry (system errors, rate limits, any 5xx), settle (already paid or closed), refuse (the
    /// request or the configuration is wrong), or find out (unknown codes: query first).
    public var advice: WeChatPayAdvice {
        switch code {
        case "SYSTEM_ERROR", "SYSTEMERROR", "BANK_ERROR": return .retrySameParameters
        case "FREQUENCY_LIMITED", "FREQUENCY_LIMIT_EXCEED", "RATELIMIT_EXCEEDED": return .retryLater
        case "ORDER_NOT_EXIST", "ORDERNOTEXIST", "RESOURCE_NOT_EXISTS", "NOT_FOUND": return .doesNotExist
        case "ORDERPAID", "ORDER_PAID": return .treatAsPaid
        case "ORDER_CLOSED", "ORDERCLOSED": return .treatAsClosed
        case "OUT_TRADE_NO_USED": return .useNewOutTradeNo
        case "PARAM_ERROR", "INVALID_REQUEST": return .fixRequest
        case "SIGN_ERROR", "APPID_MCHID_NOT_MATCH", "MCH_NOT_EXISTS", "NO_AUTH", "ACCOUNT_ERROR", "RULE_LIMIT": return .fixConfiguration
        case "NOT_ENOUGH": return .topUpBalance
        case "USER_ACCOUNT_ABNORMAL": return .refundOffline
        case "TRADE_ERROR": return .manualReview
        default:
            if status >= 500 { return .retrySameParameters }
            if status == 429 { return .retryLater }
            return .query
        }
    }

    // The documented failures, with WeChat's statuses (the simulator answers these).
    public static func systemError() -> V3ErrorBody { V3ErrorBody(status: 500, code: "SYSTEM_ERROR", message: "系统错误") }
    public static func signError() -> V3ErrorBody { V3ErrorBody(status: 401, code: "SIGN_ERROR", message: "签名错误") }
    public static func frequencyLimited() -> V3ErrorBody { V3ErrorBody(status: 429, code: "FREQUENCY_LIMITED", message: "频率超限") }
    public static func orderNotExist() -> V3ErrorBody { V3ErrorBody(status: 404, code: "ORDER_NOT_EXIST", message: "订单不存在") }
    public static func resourceNotExists(_ message: String) -> V3ErrorBody {
        V3ErrorBody(status: 404, code: "RESOURCE_NOT_EXISTS", message: message)
    }
    public static func outTradeNoUsed() -> V3ErrorBody { V3ErrorBody(status: 403, code: "OUT_TRADE_NO_USED", message: "商户订单号重复") }
    public static func orderPaid() -> V3ErrorBody { V3ErrorBody(status: 400, code: "ORDERPAID", message: "该订单已支付") }
    public static func orderClosed() -> V3ErrorBody { V3ErrorBody(status: 400, code: "ORDER_CLOSED", message: "订单已关闭") }
    public static func paramError(_ field: String) -> V3ErrorBody {
        V3ErrorBody(status: 400, code: "PARAM_ERROR", message: "参数错误", field: field)
    }
    public static func invalidRequest(_ message: String) -> V3ErrorBody { V3ErrorBody(status: 400, code: "INVALID_REQUEST", message: message) }
    public static func appIDMchIDNotMatch() -> V3ErrorBody {
        V3ErrorBody(status: 400, code: "APPID_MCHID_NOT_MATCH", message: "appid和mch_id不匹配")
    }
    public static func notEnough() -> V3ErrorBody { V3ErrorBody(status: 403, code: "NOT_ENOUGH", message: "余额不足") }
}
