// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import WeChatPay

extension WeChatPaySimulator {
    /// Fields that are not business parameters: they change on every call, so a re-entry may differ in them.
    private static let envelopeFields: Set<String> = ["nonce_str", "sign", "sign_type"]
    private static let tradeTypes: Set<String> = ["APP", "JSAPI", "NATIVE", "MWEB"]

    func unifiedOrder(_ fields: Fields, signType: SignType, now: Date,
                      book: inout OrderBook) throws(BusinessFailure) -> Fields {
        for name in ["body", "out_trade_no", "total_fee", "spbill_create_ip", "notify_url", "trade_type"]
        where fields.nonEmpty(name) == nil {
            throw .lackParams(name)
        }
        let outTradeNo = fields["out_trade_no"]!
        guard Self.isValidOutTradeNo(outTradeNo) else { throw .invalid("out_trade_no参数格式错误") }
        guard let totalFee = Self.positiveFen(fields["total_fee"]!) else { throw .invalid("total_fee参数格式错误") }
        guard fields["body"]!.utf8.count <= 128 else { throw .invalid("body参数长度有误") }
        guard Self.tradeTypes.contains(fields["trade_type"]!) else { throw .invalid("trade_type参数格式错误") }
        if fields["trade_type"] == "JSAPI" && fields.nonEmpty("openid") == nil { throw .lackParams("openid") }
        let notifyURL = fields["notify_url"]!
        guard Self.isValidNotifyURL(notifyURL) else { throw .invalid("notify_url参数格式错误，不能带参数") }
        guard Self.isIPAddress(fields["spbill_create_ip"]!) else { throw .invalid("spbill_create_ip参数格式错误") }
        if let feeType = fields.nonEmpty("fee_type"), feeType != "CNY" { throw .invalid("fee_type参数格式错误") }
        if let attach = fields.nonEmpty("attach"), attach.utf8.count > 127 { throw .invalid("attach参数长度有误") }
        var expiresAt: Date?
        if let text = fields.nonEmpty("time_expire") {
            guard let date = BeijingClock.parse(text) else { throw .invalid("time_expire参数格式错误") }
            guard date.timeIntervalSince(now) >= 60 else { throw .invalid("time_expire时间过短，刷卡至少1分钟，其他5分钟") }
            expiresAt = date
        }
        if let text = fields.nonEmpty("time_start"), BeijingClock.parse(text) == nil {
            throw .invalid("time_start参数格式错误")
        }

        var parameters: [String: String] = [:]
        for field in fields where !Self.envelopeFields.contains(field.name) && !field.value.isEmpty {
            parameters[field.name] = field.value
        }

        var reply: Fields = ["trade_type": fields["trade_type"]!]
        if var order = book.order(outTradeNo, now: now) {
            // Re-entry: WeChat answers the same prepay_id for an identical request.
            if order.isPaid { throw .orderPaid }
            if order.state != .notPaid { throw .orderClosed }
            guard order.parameters == parameters else { throw .outTradeNoUsed }
            if now.timeIntervalSince(order.prepayIssuedAt) >= configuration.prepayLifetime {
                order.prepayID = book.newPrepayID(now: now)
                order.prepayIssuedAt = now
                book.orders[outTradeNo] = order
            }
            reply["prepay_id"] = order.prepayID
        } else {
            let order = SimulatedOrder(
                outTradeNo: outTradeNo, parameters: parameters, signType: signType, totalFee: totalFee,
                notifyURL: notifyURL, attach: fields.nonEmpty("attach"), createdAt: now, expiresAt: expiresAt,
                prepayID: book.newPrepayID(now: now), prepayIssuedAt: now, state: .notPaid)
            book.orders[outTradeNo] = order
            reply["prepay_id"] = order.prepayID
        }
        if fields["trade_type"] == "NATIVE" { reply["code_url"] = "weixin://wxpay/bizpayurl?pr=" + book.random.alphanumerics(7) }
        if fields["trade_type"] == "MWEB" {
            reply["mweb_url"] = "https://wx.tenpay.com/cgi-bin/mmpayweb-bin/checkmweb?prepay_id=" + reply["prepay_id"]!
        }
        return reply
    }

    func orderQuery(_ fields: Fields, now: Date, book: inout OrderBook) throws(BusinessFailure) -> Fields {
        let order = try lookUpOrder(fields, now: now, book: &book)
        return orderStatusFields(order)
    }

    /// The fields orderquery answers (and, for a paid order, the ones a notify carries).
    func orderStatusFields(_ order: SimulatedOrder) -> Fields {
        var reply: Fields = [:]
        if order.isPaid, let transactionID = order.transactionID, let paidAt = order.paidAt {
            reply["openid"] = order.openid ?? ""
            reply["is_subscribe"] = "N"
            reply["trade_type"] = order.parameters["trade_type"] ?? "APP"
            reply["bank_type"] = "OTHERS"
            reply["total_fee"] = String(order.totalFee)
            reply["fee_type"] = "CNY"
            reply["transaction_id"] = transactionID
            reply["out_trade_no"] = order.outTradeNo
            reply["attach"] = order.attach ?? ""
            reply["time_end"] = BeijingClock.compact(paidAt)
            reply["trade_state"] = order.state.rawValue
            reply["cash_fee"] = String(order.totalFee)
            reply["cash_fee_type"] = "CNY"
            reply["trade_state_desc"] = order.state == .refund ? "转入退款" : "支付成功"
        } else {
            reply["out_trade_no"] = order.outTradeNo
            reply["attach"] = order.attach ?? ""
            reply["total_fee"] = String(order.totalFee)
            reply["trade_state"] = order.state.rawValue
            reply["trade_state_desc"] = switch order.state {
            case .closed: "订单已关闭"
            case .payError: "支付失败，请重新下单支付"
            default: "订单未支付"
            }
        }
        return reply
    }

    func closeOrder(_ fields: Fields, now: Date, book: inout OrderBook) throws(BusinessFailure) -> Fields {
        guard let outTradeNo = fields.nonEmpty("out_trade_no") else { throw .lackParams("out_trade_no") }
        guard var order = book.order(outTradeNo, now: now) else { throw .orderNotExist }
        if order.isPaid { throw .orderPaid }
        if order.state == .closed { throw .orderClosed }
        // WeChat: "订单生成后不能马上调用关单接口，最短调用时间间隔为5分钟". What it answers inside the
        // window is not documented; the simulator refuses with INVALID_REQUEST so callers notice.
        guard now.timeIntervalSince(order.createdAt) >= configuration.minimumAgeToClose else {
            throw .invalid("订单生成后5分钟内不能关单")
        }
        order.state = .closed
        order.closedAt = now
        book.orders[outTradeNo] = order
        return ["result_msg": "OK"]
    }

    /// Finds the order named by transaction_id (preferred, as WeChat documents) or out_trade_no.
    func lookUpOrder(_ fields: Fields, now: Date, book: inout OrderBook) throws(BusinessFailure) -> SimulatedOrder {
        if let transactionID = fields.nonEmpty("transaction_id") {
            guard let outTradeNo = book.byTransactionID[transactionID], let order = book.order(outTradeNo, now: now) else {
                throw .orderNotExist
            }
            return order
        }
        guard let outTradeNo = fields.nonEmpty("out_trade_no") else { throw .lackParams("out_trade_no") }
        guard let order = book.order(outTradeNo, now: now) else { throw .orderNotExist }
        return order
    }

    // MARK: - Field formats WeChat enforces

    /// At most 32 of `[0-9A-Za-z_-|*@]`.
    static func isValidOutTradeNo(_ value: String) -> Bool {
        guard (1...32).contains(value.utf8.count) else { return false }
        return value.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                || "_-|*@".utf8.contains(byte)
        }
    }

    /// An integer number of fen, at least 1, without sign, decimals or leading zeros.
    static func positiveFen(_ value: String) -> Int? {
        guard let first = value.utf8.first, first != UInt8(ascii: "0"), value.utf8.count <= 12,
              value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let fen = Int(value), fen >= 1 else { return nil }
        return fen
    }

    /// http(s) URL without a query string, as WeChat requires of notify_url.
    static func isValidNotifyURL(_ value: String) -> Bool {
        guard value.utf8.count <= 256, !value.contains("?"), let url = URL(string: value),
              url.scheme == "http" || url.scheme == "https", url.host != nil else { return false }
        return true
    }

    static func isIPAddress(_ value: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, value, &v4) == 1 || inet_pton(AF_INET6, value, &v6) == 1
    }
}
