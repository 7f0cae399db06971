// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import JSON
import Synchronization
import WeChatPay
import WeChatPayV3

/// The v3 API, over the same order book as v2 (one merchant may use both): every request's
/// `Authorization` checked against the merchant certificate's key, every 2xx answer signed with
/// the key the request's `Wechatpay-Serial` names, errors as `{"code","message"}` with WeChat's
/// statuses, and the endpoint faults of the plan acted out.
///
/// Signature timestamps are wall-clock time, checked and written: they are about the wire, and
/// the merchant's clock is real. The simulated clock (scaled, advanced) governs the business:
/// expiry, bills, the notify schedule.
extension WeChatPaySimulator {
    /// The v3 routes: (method, template) pairs; `{id}` is one path segment.
    public static let v3Routes: [(String, String)] = [
        ("POST", V3TradeType.app.path),
        ("POST", V3TradeType.jsapi.path),
        ("POST", V3TradeType.native.path),
        ("POST", V3TradeType.mweb.path),
        ("GET", "/v3/pay/transactions/out-trade-no/{id}"),
        ("GET", "/v3/pay/transactions/id/{id}"),
        ("POST", "/v3/pay/transactions/out-trade-no/{id}/close"),
        ("POST", V3RefundRequest.path),
        ("GET", V3RefundRequest.path + "/{id}"),
        ("GET", TradeBillRequest.path),
        ("GET", "/v3/billdownload/file"),
        ("GET", PlatformCertificateDownload.path),
    ]

    /// Answers one v3 request. `request.path` is the path as sent (percent-encoded), `query` the
    /// query as sent; `template` the route it matched, `parameter` the decoded `{id}`.
    public func handleV3(_ request: SimulatorRequest, template: String, parameter: String?) -> SimulatorResponse {
        let now = clock.now()
        guard let v3 else {
            return v3Error(.resourceNotExists("该商户未开通APIv3"))
        }
        var response: SimulatorResponse
        var faultBook: EndpointFaults = EndpointFaults()
        do throws(V3ErrorBody) {
            try authenticate(request, keys: v3, now: Date())
            response = try books.withLock { books throws(V3ErrorBody) -> SimulatorResponse in
                books.production.counters.requests[template, default: 0] += 1
                books.production.noteNonce("v3:" + (request.header("Authorization").flatMap(V3Authorization.init)?.nonce ?? ""))
                faultBook = books.production.faults.faults(for: template)
                return try answerV3(request, template: template, parameter: parameter, keys: v3, now: now,
                                    book: &books.production)
            }
        } catch {
            books.withLock { $0.production.counters.businessFailures[error.code, default: 0] += 1 }
            response = v3Error(error)
        }
        return books.withLock { books in
            injectV3(faultBook, into: response, template: template, keys: v3, now: now, book: &books.production)
        }
    }

    func v3Error(_ error: V3ErrorBody) -> SimulatorResponse {
        SimulatorResponse(status: error.status, body: error.body, contentType: "application/json")
    }

    /// The merchant's signature: the scheme, its mchid and certificate serial, a timestamp within
    /// five minutes, and SHA256withRSA over METHOD\nURL\ntimestamp\nnonce\nbody\n. Anything else is
    /// 401 SIGN_ERROR, as WeChat answers.
    private func authenticate(_ request: SimulatorRequest, keys: V3SimulatorKeys, now: Date) throws(V3ErrorBody) {
        guard let header = request.header("Authorization"), let authorization = V3Authorization(headerValue: header),
              authorization.mchID == configuration.mchID,
              authorization.serialNumber.uppercased() == keys.merchantSerial,
              let timestamp = Int64(authorization.timestamp),
              abs(Int64(now.timeIntervalSince1970) - timestamp) <= V3Verifier.allowedSkew,
              let signature = Base64.decode(authorization.signature, .standardPadded)
        else { throw .signError() }
        let url = request.query.isEmpty ? request.path : request.path + "?" + request.query
        let message = MerchantSigner.message(method: request.method, url: url, timestamp: timestamp, nonce: authorization.nonce,
                                             body: request.body)
        guard keys.merchantKey.isValidSignature(signature, for: message) else { throw .signError() }
    }

    private func answerV3(_ request: SimulatorRequest, template: String, parameter: String?, keys: V3SimulatorKeys, now: Date,
                          book: inout OrderBook) throws(V3ErrorBody) -> SimulatorResponse {
        func signed(_ body: [UInt8], status: Int = 200) -> SimulatorResponse {
            let message = keys.signer(for: request.header("Wechatpay-Serial"))
                .sign(body, timestamp: Int64(Date().timeIntervalSince1970), nonce: book.random.alphanumerics(32))
            var headers = message.headers
            headers["Request-ID"] = "08" + book.random.digits(30)
            return SimulatorResponse(status: status, body: body, contentType: "application/json", headers: headers)
        }
        switch (request.method, template) {
        case ("POST", let path) where V3TradeType(path: path) != nil:
            let tradeType = V3TradeType(path: path) ?? .app
            let order: PrepayRequest
            do { order = try PrepayRequest(body: request.body, tradeType: tradeType) } catch { throw .paramError(error.subject) }
            return signed(try v3Prepay(order, now: now, book: &book).body)
        case ("GET", "/v3/pay/transactions/out-trade-no/{id}"), ("GET", "/v3/pay/transactions/id/{id}"):
            guard request.queryItem("mchid") == configuration.mchID else { throw .paramError("mchid") }
            let reference: OrderReference = template.contains("/id/") ? .transactionID(parameter ?? "") : .outTradeNo(parameter ?? "")
            guard var order = try? lookUpOrder(reference, now: now, book: &book) else { throw .orderNotExist() }
            book.noteOrderQuery(order.outTradeNo, at: now)
            if book.random.chance(book.faults.faults(for: template).otherOrderRate),
               let other = book.orders.values.first(where: { $0.outTradeNo != order.outTradeNo && $0.isPaid })
                ?? book.orders.values.first(where: { $0.outTradeNo != order.outTradeNo }) {
                book.counters.faultsInjected["other_order", default: 0] += 1
                order = other
            }
            return signed(v3Transaction(order).body)
        case ("POST", "/v3/pay/transactions/out-trade-no/{id}/close"):
            guard let mchID = (try? JSONValue.parse(request.body))?["mchid"]?.stringValue else { throw .paramError("mchid") }
            guard mchID == configuration.mchID else { throw .paramError("mchid") }
            guard var order = book.order(parameter ?? "", now: now) else { throw .orderNotExist() }
            if order.isPaid { throw .orderPaid() }
            if order.state == .notPaid {
                order.state = .closed
                order.closedAt = now
                book.orders[order.outTradeNo] = order
            }
            // Closing a closed order again is answered 204 too: v3's close is repeatable.
            return signed([], status: 204)
        case ("POST", V3RefundRequest.path):
            let refund: V3RefundRequest
            do { refund = try V3RefundRequest(body: request.body) } catch { throw .paramError(error.subject) }
            book.noteRefundRequest(["out_refund_no": refund.outRefundNo, "body": String(decoding: refund.json.bytes(), as: UTF8.self)])
            return signed(try v3Refund(refund, now: now, book: &book).body)
        case ("GET", V3RefundRequest.path + "/{id}"):
            guard let owner = book.refundOwner[parameter ?? ""], let order = book.order(owner, now: now),
                  let refund = order.refunds.first(where: { $0.outRefundNo == parameter }) else {
                throw .resourceNotExists("退款单不存在")
            }
            return signed(v3RefundBody(refund, order: order).body)
        case ("GET", TradeBillRequest.path):
            let bill: TradeBillRequest
            do { bill = try TradeBillRequest(query: Substring(request.query)) } catch { throw .paramError(error.subject) }
            let legacy = DownloadBillRequest(billDate: bill.billDate.replacingOccurrences(of: "-", with: ""),
                                             billType: BillType(rawValue: bill.billType) ?? .all, gzip: false)
            let answer = try? downloadBill(legacy, now: now, book: &book)
            guard let answer, answer.contentType.hasPrefix("text/plain") else {
                let message = answer.flatMap { try? FlatXML.decode($0.body) }?["return_msg"] ?? ""
                if message == "No Bill Exist" { throw V3ErrorBody(status: 400, code: "NO_STATEMENT_EXIST", message: "账单不存在") }
                if message == "Bill Creating" { throw V3ErrorBody(status: 400, code: "STATEMENT_CREATING", message: "账单生成中") }
                throw .paramError("bill_date")
            }
            let token = book.random.alphanumerics(40)
            keys.state.withLock { state in
                state.bills = state.bills.filter { $0.value.expires > now }
                state.bills[token] = (answer.body, bill.gzip, now + 300)
            }
            let base = request.header("Host").map { "http://" + $0 } ?? keys.configuration.baseURL
            let response = TradeBillResponse(hashValue: Hex.encode(SHA1.hash(answer.body)),
                                             downloadURL: base + "/v3/billdownload/file?token=" + token)
            return signed(response.body)
        case ("GET", "/v3/billdownload/file"):
            let bill = keys.state.withLock { $0.bills[request.queryItem("token") ?? ""] }
            guard let bill, bill.expires > now else { throw .resourceNotExists("下载链接已过期") }
            // The file itself is not signed: its hash in the signed tradebill answer proves it.
            return bill.gzip
                ? SimulatorResponse(body: Gzip.compress(bill.text), contentType: "application/x-gzip")
                : SimulatorResponse(body: bill.text, contentType: "text/plain; charset=utf-8")
        case ("GET", PlatformCertificateDownload.path):
            let certificates = keys.platformCertificates
            guard !certificates.isEmpty else { throw .resourceNotExists("无可用的平台证书，请在商户平台-API安全申请使用微信支付公钥") }
            let nonces = certificates.map { _ in book.random.alphanumerics(12) }
            return signed(PlatformCertificateDownload.body(certificates, key: keys.configuration.apiV3Key, nonces: nonces))
        default:
            throw V3ErrorBody(status: 404, code: "NOT_FOUND", message: "请求的资源不存在")
        }
    }

    /// An order in its trade type: created, or re-entered when every parameter is identical. A
    /// JSAPI payer must be a user of the order's app id (SIMULATOR.md's openid rule).
    private func v3Prepay(_ request: PrepayRequest, now: Date, book: inout OrderBook) throws(V3ErrorBody) -> PrepayResponse {
        guard configuration.binds(request.appID) else { throw .appIDMchIDNotMatch() }
        guard request.mchID == configuration.mchID else { throw .appIDMchIDNotMatch() }
        if let openid = request.payerOpenID, !SimulatorConfiguration.openID(openid, belongsTo: request.appID) {
            throw V3ErrorBody(status: 400, code: "PARAM_ERROR", message: "appid和openid不匹配", field: "payer.openid")
        }
        let expiresAt = request.timeExpire.flatMap(RFC3339.parse)
        if let expiresAt, expiresAt.timeIntervalSince(now) < 60 { throw .invalidRequest("time_expire时间过短") }
        let parameters = ["v3": String(decoding: request.json.bytes(), as: UTF8.self), "trade_type": request.tradeType.rawValue,
                          "body": request.description]
        if var order = book.order(request.outTradeNo, now: now) {
            if order.isPaid { throw .orderPaid() }
            if order.state != .notPaid { throw .orderClosed() }
            guard order.parameters == parameters else { throw .outTradeNoUsed() }
            if now.timeIntervalSince(order.prepayIssuedAt) >= configuration.prepayLifetime {
                book.renewPrepay(of: &order, now: now)
            }
            return v3Answer(order, book: book)
        }
        let order = SimulatedOrder(
            outTradeNo: request.outTradeNo, parameters: parameters, signType: .hmacSHA256, totalFee: request.total,
            notifyURL: request.notifyURL, attach: request.attach, createdAt: now, expiresAt: expiresAt,
            prepayID: book.newPrepayID(now: now), prepayIssuedAt: now, state: .notPaid, apiVersion: .v3, appID: request.appID,
            tradeType: request.tradeType.rawValue, payerOpenID: request.payerOpenID,
            codeURL: request.tradeType == .native ? book.newCodeURL() : nil,
            siteURL: request.tradeType == .mweb ? request.h5Site?.appURL : nil)
        book.orders[request.outTradeNo] = order
        book.noteCodeURL(order)
        return v3Answer(order, book: book)
    }

    /// What v3 answers an order by its trade type: a prepay_id, the QR code's `code_url`, or the
    /// H5 page's `h5_url`.
    private func v3Answer(_ order: SimulatedOrder, book: OrderBook) -> PrepayResponse {
        switch order.tradeType {
        case "NATIVE": .codeURL(order.codeURL ?? "")
        case "MWEB": .h5URL(book.mwebURL(prepayID: order.prepayID))
        default: .prepayID(order.prepayID)
        }
    }

    /// The order as v3's query and payment notify describe it.
    func v3Transaction(_ order: SimulatedOrder) -> V3Transaction {
        let state: V3TradeState = switch order.state {
        case .notPaid: .notPaid
        case .success: .success
        case .refund: .refund
        case .closed: .closed
        case .payError: .payError
        }
        let paid = order.isPaid
        let description = switch order.state {
        case .success: "支付成功"
        case .refund: "转入退款"
        case .closed: "订单已关闭"
        case .payError: "支付失败，请重新下单支付"
        case .notPaid: "订单未支付"
        }
        return V3Transaction(
            appID: order.appID.isEmpty ? configuration.appID : order.appID, mchID: configuration.mchID, outTradeNo: order.outTradeNo,
            transactionID: paid ? order.transactionID : nil, tradeType: paid ? order.tradeType : nil, tradeState: state,
            tradeStateDescription: description,
            bankType: paid ? "OTHERS" : nil, attach: order.attach, successTime: paid ? order.paidAt.map(RFC3339.format) : nil,
            payerOpenID: paid ? order.openid : nil, total: order.totalFee, payerTotal: paid ? order.totalFee : nil)
    }

    private func v3Refund(_ request: V3RefundRequest, now: Date, book: inout OrderBook) throws(V3ErrorBody) -> V3Refund {
        let reference: OrderReference = switch request.order {
        case .outTradeNo(let number): .outTradeNo(number)
        case .transactionID(let id): .transactionID(id)
        }
        guard var order = try? lookUpOrder(reference, now: now, book: &book) else { throw .resourceNotExists("订单不存在") }
        guard order.isPaid else { throw V3ErrorBody(status: 403, code: "TRADE_ERROR", message: "订单未支付") }
        if let existing = order.refunds.first(where: { $0.outRefundNo == request.outRefundNo }) {
            guard existing.totalFee == request.total, existing.refundFee == request.refund else {
                throw .invalidRequest("订单金额或退款金额与之前请求不一致，请核实后再试")
            }
            return v3RefundBody(existing, order: order)
        }
        guard request.total == order.totalFee else { throw .invalidRequest("订单金额与原订单不一致") }
        guard order.refunds.count < configuration.maximumRefundsPerOrder else { throw .invalidRequest("退款次数超过限制") }
        guard order.refundedTotal + request.refund <= order.totalFee else { throw .notEnough() }
        let refund = SimulatedRefund(
            outRefundNo: request.outRefundNo, refundID: book.newRefundID(), outTradeNo: order.outTradeNo, totalFee: request.total,
            refundFee: request.refund, refundDesc: request.reason,
            refundAccount: request.fundsAccount == "AVAILABLE" ? .rechargeFunds : .unsettledFunds,
            notifyURL: request.notifyURL, requestedAt: now, status: .processing, apiVersion: .v3)
        book.record(refund, of: &order, completionDelay: configuration.refundCompletionDelay)
        return v3RefundBody(refund, order: order)
    }

    static func v3Status(_ status: SimulatedRefund.Status) -> V3RefundStatus {
        switch status {
        case .processing: .processing
        case .success: .success
        case .closed: .closed
        case .change: .abnormal
        }
    }

    func v3RefundBody(_ refund: SimulatedRefund, order: SimulatedOrder) -> V3Refund {
        V3Refund(refundID: refund.refundID, outRefundNo: refund.outRefundNo, transactionID: order.transactionID ?? "",
                 outTradeNo: order.outTradeNo, userReceivedAccount: Self.refundReceivingAccount,
                 successTime: refund.status == .success ? refund.completedAt.map(RFC3339.format) : nil,
                 createTime: RFC3339.format(refund.requestedAt), status: Self.v3Status(refund.status),
                 fundsAccount: refund.refundAccount == .rechargeFunds ? "AVAILABLE" : "UNSETTLED", total: order.totalFee,
                 refund: refund.refundFee, payerTotal: order.totalFee, payerRefund: refund.refundFee)
    }

    /// The signed, encrypted notify of a v3 event; its headers are made per attempt.
    func v3NotifyBody(_ event: V3NotifyEvent, keys: V3SimulatorKeys, now: Date, book: inout OrderBook) -> [UInt8] {
        V3NotifyBuilder(key: keys.configuration.apiV3Key).body(
            event, id: book.random.alphanumerics(8).lowercased() + "-" + book.random.digits(12), createTime: RFC3339.format(now),
            nonce: book.random.alphanumerics(12))
    }

    /// Acts out the endpoint's faults on a v3 answer, after the request took effect.
    private func injectV3(_ faults: EndpointFaults, into response: SimulatorResponse, template: String, keys: V3SimulatorKeys,
                          now: Date, book: inout OrderBook) -> SimulatorResponse {
        guard !faults.isEmpty else { return response }
        var response = response
        response.delay = faults.latency
        func count(_ kind: String) {
            book.counters.faultsInjected[kind, default: 0] += 1
            book.counters.faultsByEndpoint[template, default: [:]][kind, default: 0] += 1
        }
        if book.random.chance(faults.resetRate) {
            count("reset")
            response.resetConnection = true
        } else if book.random.chance(faults.timeoutRate) {
            count("timeout")
            response.delay += max(0, faults.timeoutSeconds)
            response.timesOut = true
        } else if book.random.chance(faults.http5xxRate) {
            count("http_5xx")
            response = SimulatorResponse(status: 502, body: Array("<html><body>502 Bad Gateway</body></html>".utf8),
                                         contentType: "text/html", delay: response.delay)
        } else if book.random.chance(faults.systemErrorRate) {
            count("systemerror")
            response = SimulatorResponse(status: 500, body: V3ErrorBody.systemError().body, contentType: "application/json",
                                         delay: response.delay)
        } else if response.headers["Wechatpay-Signature"] != nil {
            if book.random.chance(faults.truncatedRate) {
                count("truncated")
                response.body = Array(response.body.prefix(response.body.count / 2))
            } else if book.random.chance(faults.nonUTF8Rate) {
                count("non_utf8")
                response.body.insert(contentsOf: [0xC4, 0xE3, 0xFF], at: response.body.count / 2)
            } else if book.random.chance(faults.badSignatureRate) {
                count("bad_signature")
                response.headers["Wechatpay-Signature"] = V3SimulatorKeys.corrupt(response.headers["Wechatpay-Signature"] ?? "")
            } else if book.random.chance(faults.missingSignatureRate) {
                count("missing_signature")
                response.headers["Wechatpay-Signature"] = nil
            } else if book.random.chance(faults.staleTimestampRate) {
                count("stale_timestamp")
                let serial = response.headers["Wechatpay-Serial"]
                let message = keys.signer(for: serial).sign(response.body, timestamp: Int64(Date().timeIntervalSince1970) - 600,
                                                            nonce: book.random.alphanumerics(32))
                for (name, value) in message.headers { response.headers[name] = value }
            }
        }
        return response
    }
}

extension SimulatorRequest {
    /// A header by name, in any case.
    func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.key.lowercased() == lowered }?.value
    }

    /// A query parameter, decoded.
    func queryItem(_ name: String) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, V3URLComponent.decode(parts[0]) == name { return V3URLComponent.decode(parts[1]) }
        }
        return nil
    }
}
