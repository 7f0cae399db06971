// SPDX-License-Identifier: Apache-2.0
import JSON

/// The trade types v3 orders are made in, each at its own path: APP (`/app`), JSAPI (`/jsapi`,
/// mini programs and official accounts), NATIVE (`/native`, a QR code) and MWEB (`/h5`).
public enum V3TradeType: String, Sendable, Hashable, CaseIterable {
    case app = "APP"
    case jsapi = "JSAPI"
    case native = "NATIVE"
    case mweb = "MWEB"

    public var path: String {
        switch self {
        case .app: "/v3/pay/transactions/app"
        case .jsapi: "/v3/pay/transactions/jsapi"
        case .native: "/v3/pay/transactions/native"
        case .mweb: "/v3/pay/transactions/h5"
        }
    }

    /// The trade type whose order path is `path`.
    public init?(path: String) {
        guard let found = Self.allCases.first(where: { $0.path == path }) else { return nil }
        self = found
    }
}

/// `POST /v3/pay/transactions/{app|jsapi|native|h5}`: an order in one trade type. WeChat answers
/// `{"prepay_id":"wx…"}` (APP, JSAPI; valid two hours), `{"code_url":"weixin://…"}` (NATIVE) or
/// `{"h5_url":"https://…"}` (MWEB); the same `out_trade_no` with identical parameters answers
/// again, with other parameters an error.
public struct PrepayRequest: Sendable, Hashable {
    /// The APP path, as before trade types.
    public static let path = V3TradeType.app.path

    public var tradeType: V3TradeType
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
    /// JSAPI: the payer's openid under `appID` (`payer.openid`), required.
    public var payerOpenID: String?
    /// MWEB: the website the payment starts on (`scene_info.h5_info`: type `Wap`), required with
    /// the payer's IP.
    public var h5Site: H5Info?

    /// `scene_info.h5_info` of an MWEB order.
    public struct H5Info: Sendable, Hashable {
        public var appName: String
        public var appURL: String

        public init(appName: String, appURL: String) {
            self.appName = appName
            self.appURL = appURL
        }
    }

    public init(tradeType: V3TradeType = .app, appID: String, mchID: String, description: String, outTradeNo: String,
                notifyURL: String, total: Int, currency: String = "CNY", timeExpire: String? = nil, attach: String? = nil,
                goodsTag: String? = nil, payerClientIP: String? = nil, payerOpenID: String? = nil, h5Site: H5Info? = nil) {
        self.tradeType = tradeType
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
        self.payerOpenID = payerOpenID
        self.h5Site = h5Site
    }

    /// Reads a request body sent to `tradeType`'s path (the simulator's half), by the same rules
    /// ``validate()`` applies.
    public init(body: [UInt8], tradeType: V3TradeType = .app) throws(WeChatPayV3Error) {
        let reader = try FieldReader.document(body)
        let amount = try reader.object("amount")
        let scene = try reader.optionalObject("scene_info")
        let h5 = try scene?.optionalObject("h5_info")
        self.init(tradeType: tradeType, appID: try reader.string("appid", maxLength: 32), mchID: try reader.string("mchid", maxLength: 32),
                  description: try reader.string("description", maxLength: 127),
                  outTradeNo: try reader.string("out_trade_no", maxLength: 32),
                  notifyURL: try reader.string("notify_url", maxLength: 256),
                  total: try amount.int("total", in: 1...Int(Int32.max)),
                  currency: try amount.optionalString("currency", maxLength: 16) ?? "CNY",
                  timeExpire: try reader.optionalString("time_expire", maxLength: 64),
                  attach: try reader.optionalString("attach", maxLength: 128),
                  goodsTag: try reader.optionalString("goods_tag", maxLength: 32),
                  payerClientIP: try scene?.optionalString("payer_client_ip", maxLength: 45),
                  payerOpenID: try reader.optionalObject("payer")?.optionalString("openid", maxLength: 128),
                  h5Site: try h5.map { h5 throws(WeChatPayV3Error) in
                      guard try h5.string("type", maxLength: 16) == "Wap" else { throw .invalid("scene_info.h5_info.type") }
                      return H5Info(appName: try h5.string("app_name", maxLength: 64), appURL: try h5.string("app_url", maxLength: 256))
                  })
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
        switch tradeType {
        case .jsapi:
            guard let payerOpenID, !payerOpenID.isEmpty, payerOpenID.utf8.count <= 128 else { throw .invalid("payer.openid") }
        case .mweb:
            guard payerClientIP != nil else { throw .invalid("scene_info.payer_client_ip") }
            guard let h5Site, !h5Site.appName.isEmpty, !h5Site.appURL.isEmpty else { throw .invalid("scene_info.h5_info") }
        case .app, .native:
            guard payerOpenID == nil else { throw .invalid("payer.openid") }
        }
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
        var scene: [String: JSONValue] = [:]
        if let payerClientIP { scene["payer_client_ip"] = .string(payerClientIP) }
        if let h5Site {
            scene["h5_info"] = ["type": "Wap", "app_name": .string(h5Site.appName), "app_url": .string(h5Site.appURL)]
        }
        if !scene.isEmpty { members["scene_info"] = .object(scene) }
        if let payerOpenID { members["payer"] = ["openid": .string(payerOpenID)] }
        return .object(members)
    }

    /// The request as sent; validated first.
    public func request() throws(WeChatPayV3Error) -> V3Request {
        try validate()
        return V3Request(method: "POST", url: tradeType.path, body: json.bytes())
    }
}

/// The answer to an order: APP and JSAPI a `prepay_id`, NATIVE a `code_url`, MWEB an `h5_url`.
public enum PrepayResponse: Sendable, Hashable {
    case prepayID(String)
    case codeURL(String)
    case h5URL(String)

    public init(prepayID: String) { self = .prepayID(prepayID) }

    /// The answer of `tradeType`'s path.
    public init(body: [UInt8], tradeType: V3TradeType = .app) throws(WeChatPayV3Error) {
        let reader = try FieldReader.document(body)
        switch tradeType {
        case .app, .jsapi: self = .prepayID(try reader.string("prepay_id", maxLength: 64))
        case .native: self = .codeURL(try reader.string("code_url", maxLength: 512))
        case .mweb: self = .h5URL(try reader.string("h5_url", maxLength: 512))
        }
    }

    /// The prepay_id of an APP or JSAPI answer.
    public var prepayID: String? {
        if case .prepayID(let id) = self { return id }
        return nil
    }

    public var body: [UInt8] {
        switch self {
        case .prepayID(let id): JSONValue.object(["prepay_id": .string(id)]).bytes()
        case .codeURL(let url): JSONValue.object(["code_url": .string(url)]).bytes()
        case .h5URL(let url): JSONValue.object(["h5_url": .string(url)]).bytes()
        }
    }
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
