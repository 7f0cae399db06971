// SPDX-License-Identifier: Apache-2.0
import JSON

/// `trade_state` of a v3 transaction.
public enum V3TradeState: String, Sendable, Hashable, CaseIterable {
    case success = "SUCCESS"
    case refund = "REFUND"
    case notPaid = "NOTPAY"
    case closed = "CLOSED"
    case revoked = "REVOKED"
    case userPaying = "USERPAYING"
    case payError = "PAYERROR"
}

/// A transaction as the query answers it and as a TRANSACTION.SUCCESS notify's resource carries it.
public struct V3Transaction: Sendable, Hashable {
    public var appID: String
    public var mchID: String
    public var outTradeNo: String
    public var transactionID: String?
    public var tradeType: String?
    public var tradeState: V3TradeState
    public var tradeStateDescription: String
    public var bankType: String?
    public var attach: String?
    /// RFC 3339, for a paid order.
    public var successTime: String?
    public var payerOpenID: String?
    /// In fen; absent from some unpaid answers.
    public var total: Int?
    public var payerTotal: Int?
    public var currency: String

    public init(appID: String, mchID: String, outTradeNo: String, transactionID: String? = nil, tradeType: String? = nil,
                tradeState: V3TradeState, tradeStateDescription: String, bankType: String? = nil, attach: String? = nil,
                successTime: String? = nil, payerOpenID: String? = nil, total: Int? = nil, payerTotal: Int? = nil,
                currency: String = "CNY") {
        self.appID = appID
        self.mchID = mchID
        self.outTradeNo = outTradeNo
        self.transactionID = transactionID
        self.tradeType = tradeType
        self.tradeState = tradeState
        self.tradeStateDescription = tradeStateDescription
        self.bankType = bankType
        self.attach = attach
        self.successTime = successTime
        self.payerOpenID = payerOpenID
        self.total = total
        self.payerTotal = payerTotal
        self.currency = currency
    }

    /// Reads a query answer or a decrypted notify resource. A paid transaction (SUCCESS, REFUND)
    /// must name its transaction_id, success_time and amount.total: a payment is never settled on less.
    /// The members read: the rest (`scene_info`, `promotion_detail`…) is checked by the strict
    /// reader, never kept.
    static let shape = JSONShape(
        ["appid", "mchid", "out_trade_no", "transaction_id", "trade_type", "trade_state", "trade_state_desc", "bank_type",
         "attach", "success_time", "payer", "amount"],
        objects: ["payer": JSONShape(["openid"]), "amount": JSONShape(["total", "payer_total", "currency"])])

    public init(body: [UInt8]) throws(WeChatPayV3Error) {
        try self.init(try FieldReader.document(body, shape: Self.shape))
    }

    /// Reads the transaction's members, however the document was read (tests compare the two ways).
    init(_ reader: FieldReader) throws(WeChatPayV3Error) {
        let amount = try reader.optionalObject("amount")
        self.init(appID: try reader.string("appid", maxLength: 32), mchID: try reader.string("mchid", maxLength: 32),
                  outTradeNo: try reader.string("out_trade_no", maxLength: 32),
                  transactionID: try reader.optionalString("transaction_id", maxLength: 32),
                  tradeType: try reader.optionalString("trade_type", maxLength: 16),
                  tradeState: try reader.enumeration("trade_state", V3TradeState.self),
                  tradeStateDescription: try reader.optionalString("trade_state_desc", maxLength: 256) ?? "",
                  bankType: try reader.optionalString("bank_type", maxLength: 32),
                  attach: try reader.optionalString("attach", maxLength: 128),
                  successTime: try reader.optionalString("success_time", maxLength: 64),
                  payerOpenID: try reader.optionalObject("payer")?.optionalString("openid", maxLength: 128),
                  total: try amount?.optionalInt("total"), payerTotal: try amount?.optionalInt("payer_total"),
                  currency: try amount?.optionalString("currency", maxLength: 16) ?? "CNY")
        if isPaid {
            guard transactionID != nil else { throw .missing("transaction_id") }
            guard let successTime else { throw .missing("success_time") }
            guard RFC3339.parse(successTime) != nil else { throw .invalid("success_time") }
            guard total != nil else { throw .missing("amount.total") }
        }
    }

    public var isPaid: Bool { tradeState == .success || tradeState == .refund }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "appid": .string(appID), "mchid": .string(mchID), "out_trade_no": .string(outTradeNo),
            "trade_state": .string(tradeState.rawValue), "trade_state_desc": .string(tradeStateDescription),
        ]
        if let transactionID { members["transaction_id"] = .string(transactionID) }
        if let tradeType { members["trade_type"] = .string(tradeType) }
        if let bankType { members["bank_type"] = .string(bankType) }
        if let attach { members["attach"] = .string(attach) }
        if let successTime { members["success_time"] = .string(successTime) }
        if let payerOpenID { members["payer"] = ["openid": .string(payerOpenID)] }
        if let total {
            var amount: [String: JSONValue] = ["total": .int(total), "currency": .string(currency)]
            if let payerTotal {
                amount["payer_total"] = .int(payerTotal)
                amount["payer_currency"] = .string(currency)
            }
            members["amount"] = .object(amount)
        }
        return .object(members)
    }

    public var body: [UInt8] { json.bytes() }
}

/// Query by out_trade_no and close: the order's own endpoints.
public enum TransactionRequests {
    public static let pathPrefix = "/v3/pay/transactions/out-trade-no/"

    /// `GET /v3/pay/transactions/out-trade-no/{out_trade_no}?mchid=…`.
    public static func query(outTradeNo: String, mchID: String) -> V3Request {
        V3Request(method: "GET",
                  url: pathPrefix + V3URLComponent.encode(outTradeNo) + "?mchid=" + V3URLComponent.encode(mchID))
    }

    /// `POST …/{out_trade_no}/close` with `{"mchid":…}`; answered 204 without a body. Repeatable.
    public static func close(outTradeNo: String, mchID: String) -> V3Request {
        V3Request(method: "POST", url: pathPrefix + V3URLComponent.encode(outTradeNo) + "/close",
                  body: JSONValue.object(["mchid": .string(mchID)]).bytes())
    }
}
