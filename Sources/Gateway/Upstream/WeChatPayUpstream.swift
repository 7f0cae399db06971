// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import WeChatPay

/// The one way the order flows reach WeChat Pay, whatever the API version behind it: create
/// (prepay), wait and reconcile (the order's state), close, refund and refundquery, the bill.
/// Each call is one request (the retries, the single-flight per order and the metrics are
/// `Upstream`'s, the same for every version); what comes back is in WeChat's own words, which both
/// versions share (`TradeState`, `RefundStatus`, `WeChatPayAdvice`, the bill's lines), and a
/// failure is an `UpstreamError`. No flow asks which version it is speaking.
///
/// `WeChatPayV2Upstream` speaks API v2 (signed XML), `WeChatPayV3Upstream` API v3 (signed JSON);
/// `VersionedUpstream` hands each call about an order to the version the order was created with.
public protocol WeChatPayUpstream: Sendable {
    /// Asks for the order's prepay_id, for the order exactly as stored, through the order's app and
    /// in its trade type (a JSAPI order's openid, a NATIVE order's product_id, an MWEB order's
    /// scene): every retry, replay and refresh sends the same parameters (its expiry included).
    /// A NATIVE answer carries its `code_url`, an MWEB answer its `mweb_url`.
    func prepay(_ order: OrderRecord, notifyURL: String) async throws(UpstreamError) -> StoredPrepay

    /// The parameters the app starts WeChat's payment with, for a prepay_id issued at `issuedAt`:
    /// the same for every call with the same arguments (an identical create answers identical bytes).
    func appPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> AppPayRequest

    /// A JSAPI order's parameters for `wx.requestPayment` / `getBrandWCPayRequest`, deterministic
    /// like `appPayment`'s.
    func jsapiPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> JSAPIPayRequest

    /// What WeChat holds of the order now (v2 orderquery, v3's query by out_trade_no).
    func queryOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamTrade

    /// Closes the order at WeChat, or learns that it was paid meanwhile.
    func closeOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamClosing

    /// Sends the refund exactly as recorded (the same number, amounts, reason and notify_url on
    /// every resend); answers WeChat's acceptance.
    func refund(_ refund: RefundRecord, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundAcceptance

    /// Where one refund stands at WeChat, by its number.
    func queryRefund(_ outRefundNo: String, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundReport

    /// Every line of a Beijing day's bill (`yyyy-MM-dd`). A day WeChat has no bill for (no
    /// transaction that day) is an error that is `notFound`.
    func bill(day: String) async throws(UpstreamError) -> [BillRow]

    /// The API version that speaks `call` about `order` (nil: the bill, which belongs to no order):
    /// what the metrics name the call by, and where a refund's notify is to go. An implementation
    /// of one version answers its own (v2 unless it says otherwise); `VersionedUpstream` its rule.
    func apiVersion(of call: UpstreamCall, for order: OrderRecord?) -> WeChatPayAPIVersion

    /// Why `call` about `order` cannot be made by this gateway as configured (the version that
    /// would speak it has no keys), before anything is written or sent; nil when it can.
    func unconfigured(_ call: UpstreamCall, for order: OrderRecord) -> UpstreamError?
}

extension WeChatPayUpstream {
    public func apiVersion(of call: UpstreamCall, for order: OrderRecord?) -> WeChatPayAPIVersion { .v2 }
    public func unconfigured(_ call: UpstreamCall, for order: OrderRecord) -> UpstreamError? { nil }
}

/// The calls the flows make through the seam, each named in the metrics (`api` of
/// `wxpay_upstream_calls_total` and `wxpay_upstream_duration_seconds`) by the version that made it.
public enum UpstreamCall: Sendable, Hashable, CaseIterable {
    /// The order's prepay_id (and, computed from it, the app's parameters).
    case prepay
    case queryOrder
    case closeOrder
    case refund
    case queryRefund
    case bill

    /// v2's endpoint names, as they always were; v3's own names after its endpoints
    /// (`/v3/pay/transactions/app`, `…/out-trade-no/{no}`, `…/close`, `/v3/refund/domestic/refunds`
    /// and `…/{out_refund_no}`, `/v3/bill/tradebill` with its download).
    public func metricLabel(_ version: WeChatPayAPIVersion) -> String {
        switch (self, version) {
        case (.prepay, .v2): "unifiedorder"
        case (.queryOrder, .v2): "orderquery"
        case (.closeOrder, .v2): "closeorder"
        case (.refund, .v2): "refund"
        case (.queryRefund, .v2): "refundquery"
        case (.bill, .v2): "downloadbill"
        case (.prepay, .v3): "v3_pay_app"
        case (.queryOrder, .v3): "v3_query_order"
        case (.closeOrder, .v3): "v3_close_order"
        case (.refund, .v3): "v3_refund"
        case (.queryRefund, .v3): "v3_query_refund"
        case (.bill, .v3): "v3_tradebill"
        }
    }
}

/// What WeChat holds of an order.
public struct UpstreamTrade: Sendable, Hashable {
    public var outTradeNo: String
    /// WeChat's `trade_state` (`SUCCESS`, `REFUND`, `NOTPAY`, `CLOSED`, …).
    public var state: TradeState
    /// WeChat's transaction id and the amount paid (fen), for a paid order.
    public var transactionID: String?
    public var amount: Int?
    public var paidAt: Date?

    public init(outTradeNo: String, state: TradeState, transactionID: String?, amount: Int?, paidAt: Date?) {
        self.outTradeNo = outTradeNo
        self.state = state
        self.transactionID = transactionID
        self.amount = amount
        self.paidAt = paidAt
    }
}

/// What closing an order came to at WeChat.
public enum UpstreamClosing: Sendable, Hashable {
    /// Closed now, or closed before.
    case closed
    /// Paid meanwhile: believed only after the order's state was asked for.
    case alreadyPaid
}

/// WeChat's acceptance of a refund: what it names, and its `refund_id`.
public struct UpstreamRefundAcceptance: Sendable, Hashable {
    public var outRefundNo: String
    public var outTradeNo: String
    public var amount: Int
    public var refundID: String

    public init(outRefundNo: String, outTradeNo: String, amount: Int, refundID: String) {
        self.outRefundNo = outRefundNo
        self.outTradeNo = outTradeNo
        self.amount = amount
        self.refundID = refundID
    }
}

/// The refunds WeChat holds of an order, as a refund query answers.
public struct UpstreamRefundReport: Sendable, Hashable {
    public struct Refund: Sendable, Hashable {
        public var outRefundNo: String
        public var refundID: String
        /// In fen.
        public var amount: Int
        /// WeChat's refund status (`SUCCESS`, `CHANGE`, `REFUNDCLOSE`, `PROCESSING`).
        public var status: RefundStatus
        public var succeededAt: Date?

        public init(outRefundNo: String, refundID: String, amount: Int, status: RefundStatus, succeededAt: Date?) {
            self.outRefundNo = outRefundNo
            self.refundID = refundID
            self.amount = amount
            self.status = status
            self.succeededAt = succeededAt
        }
    }

    public var outTradeNo: String
    public var refunds: [Refund]

    public init(outTradeNo: String, refunds: [Refund]) {
        self.outTradeNo = outTradeNo
        self.refunds = refunds
    }
}

/// The parameters the WeChat SDK's `PayReq` takes, as the app receives them in `app_params`.
public struct AppPayRequest: Sendable, Hashable {
    public var appId: String
    public var partnerId: String
    public var prepayId: String
    public var packageValue: String
    public var nonceStr: String
    public var timeStamp: String
    public var sign: String
    public var signType: String

    public init(appId: String, partnerId: String, prepayId: String, packageValue: String, nonceStr: String,
                timeStamp: String, sign: String, signType: String) {
        self.appId = appId
        self.partnerId = partnerId
        self.prepayId = prepayId
        self.packageValue = packageValue
        self.nonceStr = nonceStr
        self.timeStamp = timeStamp
        self.sign = sign
        self.signType = signType
    }
}

/// The parameters a JSAPI page (a mini program's `wx.requestPayment`, an official account's
/// `WeixinJSBridge.invoke('getBrandWCPayRequest')`) takes, as it receives them in `jsapi_params`.
public struct JSAPIPayRequest: Sendable, Hashable {
    public var appId: String
    public var timeStamp: String
    public var nonceStr: String
    public var package: String
    public var signType: String
    public var paySign: String

    public init(appId: String, timeStamp: String, nonceStr: String, package: String, signType: String, paySign: String) {
        self.appId = appId
        self.timeStamp = timeStamp
        self.nonceStr = nonceStr
        self.package = package
        self.signType = signType
        self.paySign = paySign
    }
}

/// A call to WeChat Pay that did not get the answer asked for, in the terms every API version
/// shares: what kind of failure, WeChat's advice, whether the request may have taken effect, and
/// WeChat's code. Its descriptions never quote a key or a response body.
public struct UpstreamError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// Never sent: the request could not be made.
        case invalidRequest = "invalid_request"
        case transport
        case httpStatus = "http_status"
        case malformedResponse = "malformed_response"
        /// WeChat refused the call as such (v2 `return_code` FAIL).
        case protocolFailure = "protocol_failure"
        case badSignature = "bad_signature"
        case merchantMismatch = "merchant_mismatch"
        case invalidResponse = "invalid_response"
        /// WeChat answered with an error code (`ORDERPAID`, `SYSTEMERROR`, …).
        case business
        case answerMismatch = "answer_mismatch"
        /// A bill arrived but could not be read (its compression, its lines).
        case unreadableBill = "unreadable_bill"
    }

    public var kind: Kind
    public var advice: WeChatPayAdvice
    public var mayHaveTakenEffect: Bool
    /// WeChat's error code of a business error, as sent, and as a log may show it (a code that
    /// does not look like one is a placeholder).
    public var code: String?
    public var codeLabel: String?
    /// What the call named is unknown to WeChat: an order or refund never created (never reached
    /// it), a day without a bill.
    public var notFound: Bool
    public var httpStatus: Int?
    /// WeChat's own words: v2's return_msg or err_code_des, v3's message (sanitized, short).
    public var message: String?
    /// A stable label without data, for metrics and timelines.
    public var shortDescription: String
    public var description: String

    public init(kind: Kind, advice: WeChatPayAdvice, mayHaveTakenEffect: Bool, code: String? = nil, codeLabel: String? = nil,
                notFound: Bool = false, httpStatus: Int? = nil, message: String? = nil, shortDescription: String,
                description: String) {
        self.kind = kind
        self.advice = advice
        self.mayHaveTakenEffect = mayHaveTakenEffect
        self.code = code
        self.codeLabel = codeLabel
        self.notFound = notFound
        self.httpStatus = httpStatus
        self.message = message
        self.shortDescription = shortDescription
        self.description = description
    }

    /// Whether the identical request may be sent again.
    public var isRetryable: Bool { advice.isRetryable }
}
