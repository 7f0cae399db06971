// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import StorageCore
import WeChatPay

/// An order as the API shows it, and the one writer of that JSON shape: `GET /v1/orders/{id}`, the
/// create and close answers, the support lookup and the `order.paid` webhook's `data` all come from
/// `json`. Timestamps are RFC 3339 with an offset; `state` is WeChat's trade_state vocabulary;
/// `final` says whether it can still change. `transaction_id` and `paid_at` are always written
/// (null until paid), so clients see one shape; the optional members appear only where they apply.
/// `channel` is `wechat` or `apple`; an App Store order also carries `apple_product_id`,
/// `app_account_token`, `currency` (CNY, or what Apple charged in for a product missing from the
/// catalog: `amount` is then in that currency's minor unit), and `environment`,
/// `apple_transaction_id` and `original_transaction_id` (null until paid). `transaction_id` is
/// WeChat's, so it stays null for an App Store order. A WeChat order carries its `trade_type`
/// (`APP`, `JSAPI`, `NATIVE`, `MWEB`) and the name of the merchant's `app` it was created through
/// (absent for an order made before apps had names).
struct OrderView: Sendable {
    var outTradeNo: String
    var channel: String
    /// WeChat orders only: the merchant's app (WXPAY_APPS' name) and WeChat's trade type.
    var app: String?
    var tradeType: String?
    var state: String
    var amount: Int
    var description: String
    var transactionID: String?
    var paidAt: String?
    var createdAt: String
    var expiresAt: String
    var final: Bool
    /// Create answers and support lookups.
    var prepayID: String?
    /// What the client starts WeChat's payment with, by the app's kind — the Android SDK's PayReq
    /// (`app`) and a JSAPI page's `jsapi_params` (`miniprogram`, `official_account`) in create
    /// answers only; the QR code's `code_url` (`native`) and the page to open, `mweb_url` (`h5`;
    /// a create's answer appends the request's `redirect_url`), wherever the order is shown, as
    /// the order keeps them: the PC page that reloads draws the same code.
    var appParams: AppPayRequest?
    var jsapiParams: JSAPIPayRequest?
    var codeURL: String?
    var mwebURL: String?
    /// Support lookups and the webhook.
    var userID: String?
    /// The webhook only: the merchant data and product of the order.
    var attach: String?
    var productID: String?
    /// The webhook only, and only when true: WeChat took the money after the gateway closed the order.
    var paidAfterClose: Bool?
    /// Support lookups only: the order's flags, timeline and fulfilment events.
    var flags: [String]?
    var events: [EventView]?
    var outbox: [OutboxEventView]?
    /// The sum of the order's successful refunds, in fen, and every refund (Refunds/RefundView);
    /// 0 and none until `GatewayContext.view` reads them for a paid order.
    var refundedAmount = 0
    var refunds: [RefundView] = []
    /// App Store orders only (all nil for WeChat's).
    var apple: AppleView?

    /// The App Store members of an order's view.
    struct AppleView: Sendable {
        var appleProductID: String?
        var appAccountToken: String?
        var environment: String?
        var appleTransactionID: String?
        var originalTransactionID: String?
        /// Once paid: how many of the product Apple sold in the transaction (nil: not known).
        var quantity: Int?
        /// ISO 4217: CNY unless Apple charged in another currency for a product not in the catalog.
        var currency: String
    }

    init(_ record: OrderRecord) {
        outTradeNo = record.outTradeNo
        channel = record.channel.rawValue
        app = record.app
        tradeType = record.tradeType
        codeURL = record.codeURL
        mwebURL = record.mwebURL
        if record.channel == .apple {
            apple = AppleView(appleProductID: record.appleProductID, appAccountToken: record.appAccountToken,
                              environment: record.environment, appleTransactionID: record.appleTransactionID,
                              originalTransactionID: record.originalTransactionID, quantity: record.appleQuantity,
                              currency: record.currency ?? "CNY")
        }
        state = record.state.rawValue
        amount = record.amount
        description = record.description
        transactionID = record.transactionID
        paidAt = record.paidAt.map(Timestamp.rfc3339)
        createdAt = Timestamp.rfc3339(record.createdAt)
        expiresAt = Timestamp.rfc3339(record.expiresAt)
        final = record.state.isFinal
    }

    /// The JSON object, keys sorted (`JSONObjectWriter`). Written by hand rather than through
    /// `JSONEncoder`: its boxing and key sorting were about 5 % of a create's CPU and 8 % of a
    /// notify's in the gateway benchmark.
    var json: [UInt8] {
        var writer = JSONObjectWriter(capacity: appParams == nil && jsapiParams == nil ? 320 : 640)
        writer.number("amount", amount)
        writer.string("app", app)
        if let apple { writer.string("app_account_token", apple.appAccountToken) }
        if let appParams { writer.raw("app_params", Self.json(appParams)) }
        if let apple {
            writer.string("apple_product_id", apple.appleProductID)
            writer.stringOrNull("apple_transaction_id", apple.appleTransactionID)
        }
        writer.string("attach", attach)
        writer.string("channel", channel)
        writer.string("code_url", codeURL)
        writer.string("created_at", createdAt)
        if let apple { writer.string("currency", apple.currency) }
        writer.string("description", description)
        if let apple { writer.stringOrNull("environment", apple.environment) }
        if let events { writer.array("events", events.map(\.json)) }
        writer.string("expires_at", expiresAt)
        writer.bool("final", final)
        if let flags { writer.strings("flags", flags) }
        if let jsapiParams { writer.raw("jsapi_params", Self.json(jsapiParams)) }
        writer.string("mweb_url", mwebURL)
        if let apple { writer.stringOrNull("original_transaction_id", apple.originalTransactionID) }
        writer.string("out_trade_no", outTradeNo)
        if let outbox { writer.array("outbox", outbox.map(\.json)) }
        if let paidAfterClose { writer.bool("paid_after_close", paidAfterClose) }
        writer.stringOrNull("paid_at", paidAt)
        writer.string("prepay_id", prepayID)
        writer.string("product_id", productID)
        if let apple { writer.numberOrNull("quantity", apple.quantity) }
        writer.number("refunded_amount", refundedAmount)
        writer.array("refunds", refunds.map(\.json))
        writer.string("state", state)
        writer.string("trade_type", tradeType)
        writer.stringOrNull("transaction_id", transactionID)
        writer.string("user_id", userID)
        return writer.finish()
    }

    /// The names the WeChat Android SDK's `PayReq` takes (`AppPayRequest`'s properties), sorted.
    private static func json(_ parameters: AppPayRequest) -> [UInt8] {
        var writer = JSONObjectWriter(capacity: 320)
        writer.string("appId", parameters.appId)
        writer.string("nonceStr", parameters.nonceStr)
        writer.string("packageValue", parameters.packageValue)
        writer.string("partnerId", parameters.partnerId)
        writer.string("prepayId", parameters.prepayId)
        writer.string("sign", parameters.sign)
        writer.string("signType", parameters.signType)
        writer.string("timeStamp", parameters.timeStamp)
        return writer.finish()
    }

    /// The names `wx.requestPayment` and `getBrandWCPayRequest` take, sorted.
    private static func json(_ parameters: JSAPIPayRequest) -> [UInt8] {
        var writer = JSONObjectWriter(capacity: 320)
        writer.string("appId", parameters.appId)
        writer.string("nonceStr", parameters.nonceStr)
        writer.string("package", parameters.package)
        writer.string("paySign", parameters.paySign)
        writer.string("signType", parameters.signType)
        writer.string("timeStamp", parameters.timeStamp)
        return writer.finish()
    }
}

/// One entry of an order's support timeline: `{"at","detail","kind"}`.
struct EventView: Sendable {
    var at: String
    var kind: String
    var detail: String

    init(_ event: OrderEvent) {
        at = Timestamp.rfc3339(event.at)
        kind = event.kind
        detail = event.detail
    }

    var json: [UInt8] {
        var writer = JSONObjectWriter(capacity: 128)
        writer.string("at", at)
        writer.string("detail", detail)
        writer.string("kind", kind)
        return writer.finish()
    }
}
