// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import WeChatPay

extension WeChatPaySimulator {
    /// unifiedorder: creates the order, or re-enters it when every parameter is identical.
    func unifiedOrder(_ request: UnifiedOrderRequest, appID: String, signType: SignType, now: Date,
                      book: inout OrderBook) throws(BusinessFailure) -> Fields {
        if let timeExpire = request.timeExpire, timeExpire.timeIntervalSince(now) < 60 {
            throw .invalid("time_expire时间过短，刷卡至少1分钟，其他5分钟")
        }
        // Domestic merchants are paid in CNY only.
        if let feeType = request.feeType, feeType != "CNY" { throw .invalid("fee_type参数格式错误") }
        if request.tradeType == .jsapi, let openid = request.openID,
           !SimulatorConfiguration.openID(openid, belongsTo: appID) {
            throw BusinessFailure(code: "PARAM_ERROR", description: "appid和openid不匹配")
        }
        if request.tradeType == .mweb, !Self.isH5Scene(request.sceneInfo) {
            throw BusinessFailure(code: "PARAM_ERROR", description: "scene_info参数格式错误：H5支付需要h5_info(type=Wap, wap_url, wap_name)")
        }
        var parameters: [String: String] = [:]
        for field in request.businessFields() { parameters[field.name] = field.value }

        parameters["appid"] = appID
        let prepayID: String
        let codeURL: String?
        if var order = book.order(request.outTradeNo, now: now) {
            if order.isPaid { throw .orderPaid }
            if order.state != .notPaid { throw .orderClosed }
            guard order.parameters == parameters else { throw .outTradeNoUsed }
            if now.timeIntervalSince(order.prepayIssuedAt) >= configuration.prepayLifetime {
                book.renewPrepay(of: &order, now: now)
            }
            prepayID = order.prepayID
            codeURL = order.codeURL
        } else {
            let order = SimulatedOrder(
                outTradeNo: request.outTradeNo, parameters: parameters, signType: signType, totalFee: request.totalFee,
                notifyURL: request.notifyURL, attach: request.attach, createdAt: now, expiresAt: request.timeExpire,
                prepayID: book.newPrepayID(now: now), prepayIssuedAt: now, state: .notPaid, appID: appID,
                tradeType: request.tradeType.rawValue, payerOpenID: request.openID,
                codeURL: request.tradeType == .native ? book.newCodeURL() : nil,
                siteURL: request.tradeType == .mweb ? Self.h5SiteURL(request.sceneInfo) : nil)
            book.orders[request.outTradeNo] = order
            book.noteCodeURL(order)
            prepayID = order.prepayID
            codeURL = order.codeURL
        }
        var response = UnifiedOrderResponse(tradeType: request.tradeType, prepayID: prepayID)
        response.codeURL = codeURL
        if request.tradeType == .mweb { response.mwebURL = book.mwebURL(prepayID: prepayID) }
        return response.businessFields()
    }

    /// The `wap_url` of an MWEB order's scene.
    static func h5SiteURL(_ text: String?) -> String? {
        guard isH5Scene(text), let text, let object = try? JSONValue.parseObject(Array(text.utf8)),
              case .object(let info)? = object["h5_info"], case .string(let url)? = info["wap_url"] else { return nil }
        return url
    }

    /// An MWEB order's scene: `{"h5_info":{"type":"Wap","wap_url":…,"wap_name":…}}` (WeChat's H5
    /// rule: the site's address and name, which its Referer check holds the page to).
    static func isH5Scene(_ text: String?) -> Bool {
        guard let text, let object = try? JSONValue.parseObject(Array(text.utf8)),
              case .object(let info)? = object["h5_info"] else { return false }
        guard info["type"] == .string("Wap"), case .string(let url)? = info["wap_url"], case .string(let name)? = info["wap_name"],
              url.hasPrefix("http://") || url.hasPrefix("https://"), !name.isEmpty else { return false }
        return true
    }

    func orderQuery(_ request: OrderQueryRequest, now: Date, book: inout OrderBook) throws(BusinessFailure) -> Fields {
        let order = try lookUpOrder(request.order, now: now, book: &book)
        book.noteOrderQuery(order.outTradeNo, at: now)
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
            reply["time_end"] = BeijingTime.format(paidAt)
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

    func closeOrder(_ request: CloseOrderRequest, now: Date, book: inout OrderBook) throws(BusinessFailure) -> Fields {
        guard var order = book.order(request.outTradeNo, now: now) else { throw .orderNotExist }
        if order.isPaid { throw .orderPaid }
        if order.state == .closed { throw .orderClosed }
        // WeChat: "订单生成后不能马上调用关单接口，最短调用时间间隔为5分钟". What it answers inside the
        // window is not documented; the simulator refuses with INVALID_REQUEST so callers notice.
        guard now.timeIntervalSince(order.createdAt) >= configuration.minimumAgeToClose else {
            throw .invalid("订单生成后5分钟内不能关单")
        }
        order.state = .closed
        order.closedAt = now
        book.orders[request.outTradeNo] = order
        return ["result_msg": "OK"]
    }

    /// The order a transaction_id or out_trade_no names (the typed request already applied
    /// WeChat's precedence: transaction_id wins).
    func lookUpOrder(_ reference: OrderReference, now: Date, book: inout OrderBook) throws(BusinessFailure) -> SimulatedOrder {
        let outTradeNo: String?
        switch reference {
        case .transactionID(let id): outTradeNo = book.byTransactionID[id]
        case .outTradeNo(let number): outTradeNo = number
        }
        guard let outTradeNo, let order = book.order(outTradeNo, now: now) else { throw .orderNotExist }
        return order
    }
}
