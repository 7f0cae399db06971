// SPDX-License-Identifier: Apache-2.0
import JSON

/// `status` of a v3 refund (and `refund_status` of its notify).
public enum V3RefundStatus: String, Sendable, Hashable, CaseIterable {
    case success = "SUCCESS"
    case closed = "CLOSED"
    case processing = "PROCESSING"
    case abnormal = "ABNORMAL"
}

/// `POST /v3/refund/domestic/refunds` (no mutual TLS in v3). Retried with the same
/// `out_refund_no` and the same amounts, it is the same refund.
public struct V3RefundRequest: Sendable, Hashable {
    public static let path = "/v3/refund/domestic/refunds"

    public enum Order: Sendable, Hashable {
        case outTradeNo(String)
        case transactionID(String)
    }

    public var order: Order
    /// ≤ 64 characters of `[0-9A-Za-z_-|*@]`.
    public var outRefundNo: String
    public var reason: String?
    public var notifyURL: String?
    public var fundsAccount: String?
    /// In fen.
    public var refund: Int
    public var total: Int
    public var currency: String

    public init(order: Order, outRefundNo: String, refund: Int, total: Int, currency: String = "CNY", reason: String? = nil,
                notifyURL: String? = nil, fundsAccount: String? = nil) {
        self.order = order
        self.outRefundNo = outRefundNo
        self.reason = reason
        self.notifyURL = notifyURL
        self.fundsAccount = fundsAccount
        self.refund = refund
        self.total = total
        self.currency = currency
    }

    /// Reads a request body (the simulator's half); transaction_id wins when both are given.
    public init(body: [UInt8]) throws(WeChatPayV3Error) {
        let reader = try FieldReader.document(body)
        let order: Order
        if let id = try reader.optionalString("transaction_id", maxLength: 32) {
            order = .transactionID(id)
        } else if let number = try reader.optionalString("out_trade_no", maxLength: 32) {
            order = .outTradeNo(number)
        } else {
            throw .missing("out_trade_no")
        }
        let amount = try reader.object("amount")
        self.init(order: order, outRefundNo: try reader.string("out_refund_no", maxLength: 64),
                  refund: try amount.int("refund", in: 1...Int(Int32.max)), total: try amount.int("total", in: 1...Int(Int32.max)),
                  currency: try amount.string("currency", maxLength: 16),
                  reason: try reader.optionalString("reason", maxLength: 80),
                  notifyURL: try reader.optionalString("notify_url", maxLength: 256),
                  fundsAccount: try reader.optionalString("funds_account", maxLength: 32))
        try validate()
    }

    public func validate() throws(WeChatPayV3Error) {
        switch order {
        case .outTradeNo(let number): guard OutTradeNo.isValid(number) else { throw .invalid("out_trade_no") }
        case .transactionID(let id): guard !id.isEmpty, id.utf8.count <= 32 else { throw .invalid("transaction_id") }
        }
        guard (1...64).contains(outRefundNo.utf8.count),
              outRefundNo.utf8.allSatisfy({ OutTradeNo.isAllowed($0) || $0 == UInt8(ascii: "@") })
        else { throw .invalid("out_refund_no") }
        guard refund >= 1, refund <= total else { throw .invalid("amount.refund") }
        guard currency == "CNY" else { throw .invalid("amount.currency") }
        if let notifyURL, !(notifyURL.hasPrefix("https://") || notifyURL.hasPrefix("http://")) || notifyURL.contains("?") {
            throw .invalid("notify_url")
        }
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "out_refund_no": .string(outRefundNo),
            "amount": ["refund": .int(refund), "total": .int(total), "currency": .string(currency)],
        ]
        switch order {
        case .outTradeNo(let number): members["out_trade_no"] = .string(number)
        case .transactionID(let id): members["transaction_id"] = .string(id)
        }
        if let reason { members["reason"] = .string(reason) }
        if let notifyURL { members["notify_url"] = .string(notifyURL) }
        if let fundsAccount { members["funds_account"] = .string(fundsAccount) }
        return .object(members)
    }

    public func request() throws(WeChatPayV3Error) -> V3Request {
        try validate()
        return V3Request(method: "POST", url: Self.path, body: json.bytes())
    }

    /// `GET /v3/refund/domestic/refunds/{out_refund_no}`.
    public static func query(outRefundNo: String) -> V3Request {
        V3Request(method: "GET", url: path + "/" + V3URLComponent.encode(outRefundNo))
    }
}

/// A refund as the refund endpoints answer it.
public struct V3Refund: Sendable, Hashable {
    public var refundID: String
    public var outRefundNo: String
    public var transactionID: String
    public var outTradeNo: String
    public var channel: String
    public var userReceivedAccount: String
    public var successTime: String?
    public var createTime: String
    public var status: V3RefundStatus
    public var fundsAccount: String?
    public var total: Int
    public var refund: Int
    public var payerTotal: Int
    public var payerRefund: Int
    public var currency: String

    public init(refundID: String, outRefundNo: String, transactionID: String, outTradeNo: String, channel: String = "ORIGINAL",
                userReceivedAccount: String, successTime: String? = nil, createTime: String, status: V3RefundStatus,
                fundsAccount: String? = nil, total: Int, refund: Int, payerTotal: Int, payerRefund: Int, currency: String = "CNY") {
        self.refundID = refundID
        self.outRefundNo = outRefundNo
        self.transactionID = transactionID
        self.outTradeNo = outTradeNo
        self.channel = channel
        self.userReceivedAccount = userReceivedAccount
        self.successTime = successTime
        self.createTime = createTime
        self.status = status
        self.fundsAccount = fundsAccount
        self.total = total
        self.refund = refund
        self.payerTotal = payerTotal
        self.payerRefund = payerRefund
        self.currency = currency
    }

    public init(body: [UInt8]) throws(WeChatPayV3Error) {
        let reader = try FieldReader.document(body)
        let amount = try reader.object("amount")
        let total = try amount.int("total"), refund = try amount.int("refund")
        self.init(refundID: try reader.string("refund_id", maxLength: 64), outRefundNo: try reader.string("out_refund_no", maxLength: 64),
                  transactionID: try reader.string("transaction_id", maxLength: 32),
                  outTradeNo: try reader.string("out_trade_no", maxLength: 32),
                  channel: try reader.optionalString("channel", maxLength: 32) ?? "ORIGINAL",
                  userReceivedAccount: try reader.optionalString("user_received_account", maxLength: 64) ?? "",
                  successTime: try reader.optionalString("success_time", maxLength: 64).flatMap { $0.isEmpty ? nil : $0 },
                  createTime: try reader.string("create_time", maxLength: 64),
                  status: try reader.enumeration("status", V3RefundStatus.self),
                  fundsAccount: try reader.optionalString("funds_account", maxLength: 32),
                  total: total, refund: refund,
                  payerTotal: try amount.optionalInt("payer_total") ?? total,
                  payerRefund: try amount.optionalInt("payer_refund") ?? refund,
                  currency: try amount.optionalString("currency", maxLength: 16) ?? "CNY")
        if let successTime, RFC3339.parse(successTime) == nil { throw .invalid("success_time") }
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "refund_id": .string(refundID), "out_refund_no": .string(outRefundNo), "transaction_id": .string(transactionID),
            "out_trade_no": .string(outTradeNo), "channel": .string(channel),
            "user_received_account": .string(userReceivedAccount), "create_time": .string(createTime),
            "status": .string(status.rawValue),
            "amount": ["total": .int(total), "refund": .int(refund), "payer_total": .int(payerTotal),
                       "payer_refund": .int(payerRefund), "settlement_refund": .int(refund), "settlement_total": .int(total),
                       "discount_refund": 0, "currency": .string(currency)],
        ]
        if let successTime { members["success_time"] = .string(successTime) }
        if let fundsAccount { members["funds_account"] = .string(fundsAccount) }
        return .object(members)
    }

    public var body: [UInt8] { json.bytes() }
}

/// What a REFUND.SUCCESS / REFUND.ABNORMAL / REFUND.CLOSED notify's resource says.
public struct V3RefundNotice: Sendable, Hashable {
    public var mchID: String
    public var transactionID: String
    public var outTradeNo: String
    public var refundID: String
    public var outRefundNo: String
    public var refundStatus: V3RefundStatus
    public var successTime: String?
    public var userReceivedAccount: String
    public var total: Int
    public var refund: Int
    public var payerTotal: Int
    public var payerRefund: Int

    public init(mchID: String, transactionID: String, outTradeNo: String, refundID: String, outRefundNo: String,
                refundStatus: V3RefundStatus, successTime: String?, userReceivedAccount: String, total: Int, refund: Int,
                payerTotal: Int, payerRefund: Int) {
        self.mchID = mchID
        self.transactionID = transactionID
        self.outTradeNo = outTradeNo
        self.refundID = refundID
        self.outRefundNo = outRefundNo
        self.refundStatus = refundStatus
        self.successTime = successTime
        self.userReceivedAccount = userReceivedAccount
        self.total = total
        self.refund = refund
        self.payerTotal = payerTotal
        self.payerRefund = payerRefund
    }

    public init(body: [UInt8]) throws(WeChatPayV3Error) {
        let reader = try FieldReader.document(body)
        let amount = try reader.object("amount")
        let total = try amount.int("total"), refund = try amount.int("refund")
        self.init(mchID: try reader.string("mchid", maxLength: 32), transactionID: try reader.string("transaction_id", maxLength: 32),
                  outTradeNo: try reader.string("out_trade_no", maxLength: 32), refundID: try reader.string("refund_id", maxLength: 64),
                  outRefundNo: try reader.string("out_refund_no", maxLength: 64),
                  refundStatus: try reader.enumeration("refund_status", V3RefundStatus.self),
                  successTime: try reader.optionalString("success_time", maxLength: 64).flatMap { $0.isEmpty ? nil : $0 },
                  userReceivedAccount: try reader.optionalString("user_received_account", maxLength: 64) ?? "",
                  total: total, refund: refund,
                  payerTotal: try amount.optionalInt("payer_total") ?? total,
                  payerRefund: try amount.optionalInt("payer_refund") ?? refund)
        if refundStatus == .success && successTime == nil { throw .missing("success_time") }
        if let successTime, RFC3339.parse(successTime) == nil { throw .invalid("success_time") }
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "mchid": .string(mchID), "transaction_id": .string(transactionID), "out_trade_no": .string(outTradeNo),
            "refund_id": .string(refundID), "out_refund_no": .string(outRefundNo), "refund_status": .string(refundStatus.rawValue),
            "user_received_account": .string(userReceivedAccount),
            "amount": ["total": .int(total), "refund": .int(refund), "payer_total": .int(payerTotal), "payer_refund": .int(payerRefund)],
        ]
        if let successTime { members["success_time"] = .string(successTime) }
        return .object(members)
    }

    public var body: [UInt8] { json.bytes() }
}
