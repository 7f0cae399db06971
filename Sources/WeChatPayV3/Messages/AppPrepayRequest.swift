// SPDX-License-Identifier: Apache-2.0
import JSON

/// `POST /v3/pay/transactions/app`: an APP order. WeChat answers `{"prepay_id":"wx…"}` (valid two
/// hours); the same `out_trade_no` with identical parameters answers a prepay_id again, with
/// other parameters an error.
public struct AppPrepayRequest: Sendable, Hashable {
    public static let path = "/v3/pay/transactions/app"

    public var appID: String
    public var mchID: String
    /// ≤ 127 characters.
    public var description: String
    /// 6–32 characters of `[0-9A-Za-z_-|*]`.
    public var outTradeNo: String
    /// https, no query.
    public var notifyURL: String
    /// In fen.
    public var total: Int
    public var currency: String
    /// RFC 3339.
    public var timeExpire: String?
    /// ≤ 128 characters.
    public var attach: String?
    public var goodsTag: String?
    public var payerClientIP: String?

    public init(appID: String, mchID: String, description: String, outTradeNo: String, notifyURL: String, total: Int,
                currency: String = "CNY", timeExpire: String? = nil, attach: String? = nil, goodsTag: String? = nil,
                payerClientIP: String? = nil) {
        self.appID = appID
        self.mchID = mchID
        self.description = description
        self.outTradeNo = outTradeNo
        self.notifyURL = notifyURL
        self.total = total
        self.currency = currency
        self.timeExpire = timeExpire
        self.attach = attach
        self.goodsTag = goodsTag
        self.payerClientIP = payerClientIP
    }

    /// Reads a request body (the simulator's half), by the same rules ``validate()`` applies.
    public init(body: [UInt8]) throws(WeChatPayV3Error) {
        let reader = try FieldReader.document(body)
        let amount = try reader.object("amount")
        self.init(appID: try reader.string("appid", maxLength: 32), mchID: try reader.string("mchid", maxLength: 32),
                  description: try reader.string("description", maxLength: 127),
                  outTradeNo: try reader.string("out_trade_no", maxLength: 32),
                  notifyURL: try reader.string("notify_url", maxLength: 256),
                  total: try amount.int("total", in: 1...Int(Int32.max)),
                  currency: try amount.optionalString("currency", maxLength: 16) ?? "CNY",
                  timeExpire: try reader.optionalString("time_expire", maxLength: 64),
                  attach: try reader.optionalString("attach", maxLength: 128),
                  goodsTag: try reader.optionalString("goods_tag", maxLength: 32),
                  payerClientIP: try reader.optionalObject("scene_info")?.optionalString("payer_client_ip", maxLength: 45))
        try validate()
    }

    /// WeChat's rules for the fields, checked before anything is sent.
    public func validate() throws(WeChatPayV3Error) {
        guard !appID.isEmpty, appID.utf8.count <= 32 else { throw .invalid("appid") }
        guard !mchID.isEmpty, mchID.utf8.count <= 32 else { throw .invalid("mchid") }
        guard !description.isEmpty, description.unicodeScalars.count <= 127 else { throw .invalid("description") }
        guard OutTradeNo.isValid(outTradeNo) else { throw .invalid("out_trade_no") }
        guard notifyURL.hasPrefix("https://") || notifyURL.hasPrefix("http://"), !notifyURL.contains("?"),
              notifyURL.utf8.count <= 256 else { throw .invalid("notify_url") }
        guard total >= 1 else { throw .invalid("amount.total") }
        guard currency == "CNY" else { throw .invalid("amount.currency") }
        if let timeExpire, RFC3339.parse(timeExpire) == nil { throw .invalid("time_expire") }
        if let attach, attach.unicodeScalars.count > 128 { throw .invalid("attach") }
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "appid": .string(appID), "mchid": .string(mchID), "description": .string(description),
            "out_trade_no": .string(outTradeNo), "notify_url": .string(notifyURL),
            "amount": ["total": .int(total), "currency": .string(currency)],
        ]
        if let timeExpire { members["time_expire"] = .string(timeExpire) }
        if let attach { members["attach"] = .string(attach) }
        if let goodsTag { members["goods_tag"] = .string(goodsTag) }
        if let payerClientIP { members["scene_info"] = ["payer_client_ip": .string(payerClientIP)] }
        return .object(members)
    }

    /// The request as sent; validated first.
    public func request() throws(WeChatPayV3Error) -> V3Request {
        try validate()
        return V3Request(method: "POST", url: Self.path, body: json.bytes())
    }
}

/// The answer to an APP order.
public struct PrepayResponse: Sendable, Hashable {
    public var prepayID: String

    public init(prepayID: String) {
        self.prepayID = prepayID
    }

    public init(body: [UInt8]) throws(WeChatPayV3Error) {
        prepayID = try FieldReader.document(body).string("prepay_id", maxLength: 64)
    }

    public var body: [UInt8] { JSONValue.object(["prepay_id": .string(prepayID)]).bytes() }
}

/// The merchant's order number rules, shared by every request that names one.
public enum OutTradeNo {
    /// 6–32 characters of `[0-9A-Za-z_-|*]`.
    public static func isValid(_ text: String) -> Bool {
        (6...32).contains(text.utf8.count) && text.utf8.allSatisfy(isAllowed)
    }

    /// `[0-9A-Za-z_-|*]`.
    public static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "|"), UInt8(ascii: "*"): true
        default: false
        }
    }
}
