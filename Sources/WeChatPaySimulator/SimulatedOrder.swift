// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

/// One order as WeChat Pay holds it.
struct SimulatedOrder: Sendable {
    enum State: String, Sendable {
        case notPaid = "NOTPAY"
        case success = "SUCCESS"
        case refund = "REFUND"
        case closed = "CLOSED"
        case payError = "PAYERROR"
    }

    let outTradeNo: String
    /// The business parameters of the first unifiedorder (everything but nonce_str, sign and
    /// sign_type): a re-entry must repeat them exactly.
    let parameters: [String: String]
    let signType: SignType
    let totalFee: Int
    let notifyURL: String
    let attach: String?
    let createdAt: Date
    let expiresAt: Date?
    var prepayID: String
    var prepayIssuedAt: Date
    var state: State
    var transactionID: String?
    var paidAt: Date?
    var openid: String?
    var closedAt: Date?
    var refunds: [SimulatedRefund] = []
    /// The API the order was created with; its notifies speak the same.
    var apiVersion: SimulatedAPIVersion = .v2
    /// The app id the order was created through: its notifies, queries and bill lines name it.
    var appID = ""
    /// APP, JSAPI, NATIVE or MWEB.
    var tradeType = "APP"
    /// JSAPI: the payer the order was made for; only that user can pay it.
    var payerOpenID: String?
    /// NATIVE: the QR code's content, the same for every re-entry.
    var codeURL: String?
    /// MWEB: the website the order declared in its scene (`wap_url`, v3's `app_url`), whose host
    /// the payment page holds the browser's Referer to.
    var siteURL: String?

    var isPaid: Bool { state == .success || state == .refund }
    var refundedTotal: Int { refunds.filter { $0.status != .closed }.reduce(0) { $0 + $1.refundFee } }
}

enum SimulatedAPIVersion: String, Sendable {
    case v2, v3
}

/// One refund of an order.
struct SimulatedRefund: Sendable {
    enum Status: String, Sendable {
        case processing = "PROCESSING"
        case success = "SUCCESS"
        case closed = "REFUNDCLOSE"
        case change = "CHANGE"
    }

    let outRefundNo: String
    let refundID: String
    let outTradeNo: String
    let totalFee: Int
    let refundFee: Int
    let refundDesc: String?
    /// Which funds the refund comes from, as requested (`refund_account`), reported the same way by
    /// refundquery and the refund notify.
    let refundAccount: RefundAccount
    let notifyURL: String?
    let requestedAt: Date
    var status: Status
    var completedAt: Date?
    /// The API the refund was requested with, which its notify speaks: WeChat sends a v3 refund
    /// notify for a refund requested through v3, whichever version created the order.
    var apiVersion: SimulatedAPIVersion = .v2
}
