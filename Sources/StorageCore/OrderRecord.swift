// SPDX-License-Identifier: Apache-2.0
import Foundation

/// One order as the store keeps it.
///
/// The store keeps times with millisecond precision: every record it returns carries dates rounded
/// to the nearest millisecond, so a record read twice compares equal.
public struct OrderRecord: Sendable, Hashable {
    /// The merchant's order number, unique in the store (WeChat's `out_trade_no`).
    public var outTradeNo: String
    /// The amount in fen (`total_fee`), always positive; in the minor unit of `currency` when set.
    public var amount: Int
    /// The product description sent as `body`.
    public var description: String
    /// The payer's IP as sent in `spbill_create_ip`.
    public var clientIP: String
    public var attach: String?
    /// The app user the order belongs to, for support lookups.
    public var userID: String?
    public var productID: String?
    /// `MD5` or `HMAC-SHA256`: notifies for this order must be signed the same way.
    public var signType: String
    /// `time_expire` exactly as sent to WeChat (Beijing time, `yyyyMMddHHmmss`).
    public var timeExpire: String
    /// The same instant as `timeExpire`, for sweeps.
    public var expiresAt: Date
    public var createdAt: Date
    public var state: OrderState
    /// WeChat's `transaction_id`, known once paid.
    public var transactionID: String?
    /// When WeChat says the payment happened (`time_end`).
    public var paidAt: Date?
    public var prepayID: String?
    public var prepayIssuedAt: Date?
    /// A canonical digest of the creation parameters, computed by the caller. A second create with
    /// the same `outTradeNo` is a replay only if the digests are equal.
    public var parametersDigest: String
    public var lastNotifyAt: Date?
    public var lastQueriedAt: Date?
    public var flags: Set<OrderFlag>
    public var updatedAt: Date
    /// WeChat Pay or the App Store. The fields below are the App Store's, nil for WeChat orders.
    public var channel: OrderChannel
    /// The App Store product id the order sells (the catalog's `apple_product_id` at creation).
    public var appleProductID: String?
    /// The UUID the app passes to StoreKit as `appAccountToken`, unique to this order (lowercase).
    public var appAccountToken: String?
    /// Once paid: `Production` or `Sandbox`.
    public var environment: String?
    /// Once paid: the App Store transaction that paid it (unique among orders).
    public var appleTransactionID: String?
    public var originalTransactionID: String?
    /// Once paid: how many of the product the App Store transaction sold (Apple's `quantity`: a
    /// consumable may be bought several at once; 1 for anything else). Nil when the evidence that
    /// credited the order did not say (purchases recorded before the gateway kept it).
    public var appleQuantity: Int?
    /// The currency `amount` is in, as ISO 4217, when it is not the catalog's CNY fen: an App Store
    /// purchase of a product missing from the catalog is recorded at what Apple charged, in the
    /// minor unit of Apple's currency (flagged `unknown_product`). Nil: CNY, in fen.
    public var currency: String?
    /// The WeChat Pay API version the order was created with (`v2`, `v3`): every later call about
    /// it (query, close, refunds) and its notifies speak that version, whatever new orders use.
    public var apiVersion: String
    /// The merchant's app the order was created through (its name in WXPAY_APPS) and that app's
    /// id, which every call about the order and its notifies carry; nil for App Store orders and
    /// for WeChat orders made before apps had names (the default app's).
    public var app: String?
    public var appID: String?
    /// WeChat's trade type: `APP`, `JSAPI`, `NATIVE` or `MWEB`; nil for App Store orders.
    public var tradeType: String?
    /// JSAPI only: the payer's openid under `appID`, sent with every prepay of the order.
    public var openID: String?
    /// What the prepay answered besides the prepay_id, kept with it so an identical create answers
    /// the same again: NATIVE's `code_url` (the QR code's content), MWEB's `mweb_url`.
    public var codeURL: String?
    public var mwebURL: String?

    /// - Parameters: the fields above; `state` defaults to `.notPay` (the only state `create`
    ///   accepts), `updatedAt` to `createdAt`, `channel` to `.wechat`, and every optional to `nil`.
    public init(
        outTradeNo: String,
        amount: Int,
        description: String,
        clientIP: String,
        attach: String? = nil,
        userID: String? = nil,
        productID: String? = nil,
        signType: String,
        timeExpire: String,
        expiresAt: Date,
        createdAt: Date,
        state: OrderState = .notPay,
        transactionID: String? = nil,
        paidAt: Date? = nil,
        prepayID: String? = nil,
        prepayIssuedAt: Date? = nil,
        parametersDigest: String,
        lastNotifyAt: Date? = nil,
        lastQueriedAt: Date? = nil,
        flags: Set<OrderFlag> = [],
        updatedAt: Date? = nil,
        channel: OrderChannel = .wechat,
        appleProductID: String? = nil,
        appAccountToken: String? = nil,
        environment: String? = nil,
        appleTransactionID: String? = nil,
        originalTransactionID: String? = nil,
        currency: String? = nil,
        apiVersion: String = "v2",
        app: String? = nil,
        appID: String? = nil,
        tradeType: String? = nil,
        openID: String? = nil,
        codeURL: String? = nil,
        mwebURL: String? = nil,
        appleQuantity: Int? = nil
    ) {
        self.outTradeNo = outTradeNo
        self.amount = amount
        self.description = description
        self.clientIP = clientIP
        self.attach = attach
        self.userID = userID
        self.productID = productID
        self.signType = signType
        self.timeExpire = timeExpire
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.state = state
        self.transactionID = transactionID
        self.paidAt = paidAt
        self.prepayID = prepayID
        self.prepayIssuedAt = prepayIssuedAt
        self.parametersDigest = parametersDigest
        self.lastNotifyAt = lastNotifyAt
        self.lastQueriedAt = lastQueriedAt
        self.flags = flags
        self.updatedAt = updatedAt ?? createdAt
        self.channel = channel
        self.appleProductID = appleProductID
        self.appAccountToken = appAccountToken
        self.environment = environment
        self.appleTransactionID = appleTransactionID
        self.originalTransactionID = originalTransactionID
        self.currency = currency
        self.apiVersion = apiVersion
        self.app = app
        self.appID = appID
        self.tradeType = tradeType
        self.openID = openID
        self.codeURL = codeURL
        self.mwebURL = mwebURL
        self.appleQuantity = appleQuantity
    }
}

/// What a prepay answered that the order keeps: the prepay_id and, for a NATIVE or MWEB order,
/// the `code_url` or `mweb_url` of the same answer.
public struct StoredPrepay: Sendable, Hashable {
    public var prepayID: String
    public var codeURL: String?
    public var mwebURL: String?

    public init(prepayID: String, codeURL: String? = nil, mwebURL: String? = nil) {
        self.prepayID = prepayID
        self.codeURL = codeURL
        self.mwebURL = mwebURL
    }
}
