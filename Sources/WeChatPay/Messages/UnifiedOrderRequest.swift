// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `POST /pay/unifiedorder`: creates (or re-enters) the WeChat order behind an `out_trade_no` and
/// returns the `prepay_id` the app pays with.
///
/// Re-entry rule: sending the same `out_trade_no` again is safe only with identical parameters;
/// anything changed is refused (`OUT_TRADE_NO_USED` / `INVALID_REQUEST`).
public struct UnifiedOrderRequest: WeChatPayRequest {
    public typealias Response = UnifiedOrderResponse
    public static var api: WeChatPayAPI { .unifiedOrder }

    /// Goods description, at most 127 characters; for APP payments "<app name>-<item>".
    public var body: String
    /// The merchant's order number: at most 32 of `[0-9A-Za-z_-|*@]`, unique per merchant.
    public var outTradeNo: String
    /// The amount in fen; must be positive.
    public var totalFee: Int
    /// The payer's IP address (for APP payments, the phone's), IPv4 or IPv6.
    public var spbillCreateIP: String
    /// Where WeChat posts the payment notify: http(s), no query string, at most 256 characters.
    public var notifyURL: String
    public var tradeType: TradeType
    public var deviceInfo: String?
    /// 单品优惠 details (JSON), at most 6144 characters.
    public var detail: String?
    /// Echoed back in the query and the notify, at most 127 characters.
    public var attach: String?
    /// Currency, `CNY` when absent.
    public var feeType: String?
    public var timeStart: Date?
    /// When the `out_trade_no` stops being payable (the `prepay_id` lives at most two hours anyway).
    public var timeExpire: Date?
    public var goodsTag: String?
    /// `no_credit` forbids credit cards.
    public var limitPay: String?
    /// The payer's openid; required for JSAPI.
    public var openID: String?
    /// Required for NATIVE.
    public var productID: String?
    /// JSON scene information (required by MWEB in practice).
    public var sceneInfo: String?
    /// Fields this type does not model (`receipt`, `profit_sharing`, future ones), sent as given;
    /// they never override a modelled or an envelope field.
    public var additionalFields: Fields

    public init(
        body: String, outTradeNo: String, totalFee: Int, spbillCreateIP: String, notifyURL: String,
        tradeType: TradeType = .app, deviceInfo: String? = nil, detail: String? = nil, attach: String? = nil,
        feeType: String? = nil, timeStart: Date? = nil, timeExpire: Date? = nil, goodsTag: String? = nil,
        limitPay: String? = nil, openID: String? = nil, productID: String? = nil, sceneInfo: String? = nil,
        additionalFields: Fields = Fields()
    ) {
        self.body = body
        self.outTradeNo = outTradeNo
        self.totalFee = totalFee
        self.spbillCreateIP = spbillCreateIP
        self.notifyURL = notifyURL
        self.tradeType = tradeType
        self.deviceInfo = deviceInfo
        self.detail = detail
        self.attach = attach
        self.feeType = feeType
        self.timeStart = timeStart
        self.timeExpire = timeExpire
        self.goodsTag = goodsTag
        self.limitPay = limitPay
        self.openID = openID
        self.productID = productID
        self.sceneInfo = sceneInfo
        self.additionalFields = additionalFields
    }

    private static let knownFields: Set<String> = [
        "device_info", "body", "detail", "attach", "out_trade_no", "fee_type", "total_fee", "spbill_create_ip",
        "time_start", "time_expire", "goods_tag", "notify_url", "trade_type", "limit_pay", "openid", "product_id",
        "scene_info",
    ]

    public init(fields: Fields) throws(WeChatPayMessageError) {
        let reader = FieldReader(fields)
        body = try reader.required("body", .text(maxLength: 127))
        outTradeNo = try reader.required("out_trade_no", .merchantNumber(maxLength: 32))
        totalFee = try reader.requiredAmount("total_fee", positive: true)
        spbillCreateIP = try reader.required("spbill_create_ip", .ipAddress)
        notifyURL = try reader.required("notify_url", .notifyURL)
        tradeType = TradeType(rawValue: try reader.required("trade_type"))
        guard tradeType.isUnifiedOrderType else { throw .invalidField("trade_type") }
        deviceInfo = try reader.optional("device_info", .text(maxLength: 32))
        detail = try reader.optional("detail", .text(maxLength: 6144))
        attach = try reader.optional("attach", .text(maxLength: 127))
        feeType = try reader.optional("fee_type", .currency)
        timeStart = try reader.optionalTime("time_start")
        timeExpire = try reader.optionalTime("time_expire")
        if let timeStart, let timeExpire, timeExpire <= timeStart { throw .invalidField("time_expire") }
        goodsTag = try reader.optional("goods_tag", .text(maxLength: 32))
        limitPay = try reader.optional("limit_pay")
        if let limitPay, limitPay != "no_credit" { throw .invalidField("limit_pay") }
        openID = try reader.optional("openid", .text(maxLength: 128))
        productID = try reader.optional("product_id", .text(maxLength: 32))
        sceneInfo = try reader.optional("scene_info", .text(maxLength: 256))
        if tradeType == .jsapi, openID == nil { throw .missingField("openid") }
        if tradeType == .native, productID == nil { throw .missingField("product_id") }
        additionalFields = reader.additionalFields(excluding: Self.knownFields)
    }

    public func businessFields() -> Fields {
        var writer = FieldWriter()
        writer.add("device_info", deviceInfo)
        writer.add("body", body)
        writer.add("detail", detail)
        writer.add("attach", attach)
        writer.add("out_trade_no", outTradeNo)
        writer.add("fee_type", feeType)
        writer.add("total_fee", totalFee)
        writer.add("spbill_create_ip", spbillCreateIP)
        writer.add("time_start", time: timeStart)
        writer.add("time_expire", time: timeExpire)
        writer.add("goods_tag", goodsTag)
        writer.add("notify_url", notifyURL)
        writer.add("trade_type", tradeType.rawValue)
        writer.add("limit_pay", limitPay)
        writer.add("openid", openID)
        writer.add("product_id", productID)
        writer.add("scene_info", sceneInfo)
        writer.addAdditional(additionalFields)
        return writer.fields
    }
}
