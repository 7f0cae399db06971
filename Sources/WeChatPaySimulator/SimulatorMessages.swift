// SPDX-License-Identifier: Apache-2.0
import WeChatPay

/// One HTTP request as the simulator sees it, whether it came over a socket or in process.
public struct SimulatorRequest: Sendable {
    public var method: String
    public var path: String
    public var body: [UInt8]
    /// Whether the caller presented a client certificate the simulator's CA signed. Only asked for
    /// `/secapi/` paths when TLS with client verification is on.
    public var clientCertificateVerified: Bool
    /// Whether the caller presented a certificate that does not verify: refused on any path, as
    /// WeChat's front end refuses a merchant certificate it does not trust (a refundquery made with
    /// the certificate, as older SDKs do, is how `wxpay-gateway doctor` checks it).
    public var clientCertificateRejected = false
    /// The request's headers (v3: Authorization, Wechatpay-Serial, Host).
    public var headers: [String: String]
    /// The query as sent, without `?` (v3 signs it with the path).
    public var query: String

    public init(method: String = "POST", path: String, body: [UInt8], clientCertificateVerified: Bool = false,
                headers: [String: String] = [:], query: String = "") {
        self.method = method
        self.path = path
        self.body = body
        self.clientCertificateVerified = clientCertificateVerified
        self.headers = headers
        self.query = query
    }
}

/// The simulator's answer, with the faults the transport must act out (latency, a reset).
public struct SimulatorResponse: Sendable {
    public var status: Int
    public var body: [UInt8]
    public var contentType: String
    /// Seconds to wait before answering (injected latency).
    public var delay: Double
    /// Close the connection instead of answering (injected reset).
    public var resetConnection: Bool
    /// Close the connection without answering after `delay` seconds, by which time the caller
    /// should have given up (an injected timeout); an in-process caller gets a timeout error.
    public var timesOut: Bool
    /// Headers besides Content-Type (v3's `Wechatpay-*` signature headers).
    public var headers: [String: String]

    public init(status: Int = 200, body: [UInt8], contentType: String = "text/xml; charset=utf-8",
                delay: Double = 0, resetConnection: Bool = false, timesOut: Bool = false, headers: [String: String] = [:]) {
        self.headers = headers
        self.status = status
        self.body = body
        self.contentType = contentType
        self.delay = delay
        self.resetConnection = resetConnection
        self.timesOut = timesOut
    }
}

/// A business failure the way WeChat reports it: `result_code=FAIL` with `err_code` and `err_code_des`.
struct BusinessFailure: Error {
    var code: String
    var description: String

    static func lackParams(_ name: String) -> BusinessFailure { BusinessFailure(code: "LACK_PARAMS", description: "缺少参数\(name)") }
    static func invalid(_ description: String) -> BusinessFailure { BusinessFailure(code: "INVALID_REQUEST", description: description) }
    static func param(_ description: String) -> BusinessFailure { BusinessFailure(code: "PARAM_ERROR", description: description) }
    static let orderNotExist = BusinessFailure(code: "ORDERNOTEXIST", description: "订单不存在")
    static let orderPaid = BusinessFailure(code: "ORDERPAID", description: "该订单已支付")
    static let orderClosed = BusinessFailure(code: "ORDERCLOSED", description: "该订单已关")
    static let outTradeNoUsed = BusinessFailure(code: "OUT_TRADE_NO_USED", description: "商户订单号重复")
    static let refundNotExist = BusinessFailure(code: "REFUNDNOTEXIST", description: "退款订单查询失败")
    static let systemError = BusinessFailure(code: "SYSTEMERROR", description: "系统超时")
}

/// A protocol failure: `return_code=FAIL` with `return_msg`, unsigned, as WeChat answers bad XML,
/// bad signatures and missing POST data.
struct ProtocolFailure: Error {
    var message: String

    static let signature = ProtocolFailure(message: "签名错误")
    static let xmlFormat = ProtocolFailure(message: "XML格式错误")
    static let notUTF8 = ProtocolFailure(message: "编码格式错误")
    static let postRequired = ProtocolFailure(message: "请使用post方法")
    static let emptyBody = ProtocolFailure(message: "post数据为空")
    static let signType = ProtocolFailure(message: "sign_type参数错误")
    static let appID = ProtocolFailure(message: "appid不存在")
    static let mchID = ProtocolFailure(message: "mch_id参数格式错误")
    static let appIDMchID = ProtocolFailure(message: "appid和mch_id不匹配")
}
