// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import WeChatPay
import WeChatPayV3

/// Why a control action (what a user or WeChat does outside the merchant's servers) could not happen.
public struct SimulatorControlError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case orderNotFound = "order_not_found"
        case orderNotPayable = "order_not_payable"
        case refundNotFound = "refund_not_found"
        case refundNotProcessing = "refund_not_processing"
        case wrongPayer = "wrong_payer"
        case codeURLNotFound = "code_url_not_found"
        case codeURLExpired = "code_url_expired"
        case mwebURLNotFound = "mweb_url_not_found"
        case refererNotAllowed = "referer_not_allowed"
    }

    public let code: Code
    public var description: String {
        switch code {
        case .orderNotFound: "no such order"
        case .orderNotPayable: "the order is not awaiting payment (paid, closed, failed or expired)"
        case .refundNotFound: "no such refund"
        case .refundNotProcessing: "the refund already reached a final status"
        case .wrongPayer: "a JSAPI order is paid only by the openid it was made for, any other order only by a user of its app id"
        case .codeURLNotFound: "no NATIVE order has this code_url"
        case .codeURLExpired: "二维码已过期: this code_url is more than 2 hours old or was replaced; the merchant must ask WeChat for a new one"
        case .mwebURLNotFound: "no MWEB order has this mweb_url (its prepay_id and package)"
        // WeChat's own words when the page's Referer is missing or not the H5 domain.
        case .refererNotAllowed: "商家参数格式有误，请联系商家解决: the browser opened mweb_url from a page not on the order's H5 site (Referer)"
        }
    }
}

/// A snapshot of an order, for the control API and tests.
public struct SimulatedOrderSnapshot: Sendable, Codable, Hashable {
    public var outTradeNo: String
    public var state: String
    public var totalFee: Int
    public var prepayID: String
    public var transactionID: String?
    public var signType: String
    /// `v2` or `v3`: the API the order was created with.
    public var apiVersion: String
    public var refunds: [Refund]

    public struct Refund: Sendable, Codable, Hashable {
        public var outRefundNo: String
        public var refundID: String
        public var refundFee: Int
        public var status: String
    }
}

extension WeChatPaySimulator {
    /// The user pays the order in the WeChat app: it becomes SUCCESS and its notify is queued.
    /// With `afterClose`, a CLOSED order (closed by closeorder or by its `time_expire`) is paid too:
    /// the payment that raced the close and still went through, which a merchant must settle and
    /// flag (reliability.md T9). A paid or failed order is never paid again either way.
    @discardableResult
    public func pay(outTradeNo: String, openid: String? = nil,
                    afterClose: Bool = false) throws(SimulatorControlError) -> SimulatedOrderSnapshot {
        let now = clock.now()
        let (snapshot, notify, isV3) = try withBook(holding: { $0.orders[outTradeNo] != nil }) {
            book throws(SimulatorControlError) -> (SimulatedOrderSnapshot, (String, [UInt8]), Bool) in
            guard var order = book.order(outTradeNo, now: now) else { throw SimulatorControlError(code: .orderNotFound) }
            guard order.state == .notPaid || (afterClose && order.state == .closed) else {
                throw SimulatorControlError(code: .orderNotPayable)
            }
            // A JSAPI order was made for one payer (its openid under the order's app id); any other
            // order is paid by whoever scans or opens it, a user of the order's app.
            if let payer = order.payerOpenID {
                guard openid == nil || openid == payer else { throw SimulatorControlError(code: .wrongPayer) }
            } else if let openid, !order.appID.isEmpty, !SimulatorConfiguration.openID(openid, belongsTo: order.appID) {
                // An openid is a user of one app id: another app's user cannot pay this app's order.
                throw SimulatorControlError(code: .wrongPayer)
            }
            order.state = .success
            order.paidAt = now
            order.openid = order.payerOpenID ?? openid
                ?? (order.tradeType == "APP" || order.appID.isEmpty
                    ? "oUpF8u" + book.random.alphanumerics(22)
                    : SimulatorConfiguration.openID(of: book.random.alphanumerics(20), under: order.appID))
            let transactionID = book.newTransactionID(now: now)
            order.transactionID = transactionID
            book.orders[outTradeNo] = order
            book.byTransactionID[transactionID] = outTradeNo
            book.counters.paymentsMade += 1
            if order.apiVersion == .v3, let v3 {
                let body = v3NotifyBody(.payment(v3Transaction(order)), keys: v3, now: now, book: &book)
                return (Self.snapshot(order), (order.notifyURL, body), true)
            }
            return (Self.snapshot(order), (order.notifyURL, paymentNotifyBody(order, book: &book)), false)
        }
        (isV3 ? v3Notifies : notifies).enqueue(kind: .payment, reference: outTradeNo, url: notify.0, body: notify.1)
        return snapshot
    }

    /// A mobile browser opens an MWEB order's `mweb_url` from the page whose address is `referer`:
    /// WeChat's page opens only when the Referer is on the host of the site the order declared
    /// (`scene_info`'s `wap_url`), else it shows "商家参数格式有误". With `pay`, the user then pays
    /// (as a user of the order's app). Answers the order and the `redirect_url` the page returns to.
    public func openMWEB(_ mwebURL: String, referer: String?, pay: Bool) throws(SimulatorControlError)
        -> (order: SimulatedOrderSnapshot, redirectURL: String?)
    {
        guard let components = URLComponents(string: mwebURL),
              let prepayID = components.queryItems?.first(where: { $0.name == "prepay_id" })?.value,
              let package = components.queryItems?.first(where: { $0.name == "package" })?.value
        else { throw SimulatorControlError(code: .mwebURLNotFound) }
        let redirect = components.queryItems?.first { $0.name == "redirect_url" }?.value
        return try openMWEB(prepayID: prepayID, package: package, redirectURL: redirect, referer: referer, pay: pay)
    }

    /// `openMWEB` by the page's query as mweb_url carries it (`prepay_id`, `package`, `redirect_url`),
    /// already decoded: what the browser-facing page `GET /simulator/mweb` is asked.
    public func openMWEB(prepayID: String, package: String, redirectURL redirect: String?, referer: String?, pay: Bool)
        throws(SimulatorControlError) -> (order: SimulatedOrderSnapshot, redirectURL: String?)
    {
        let now = clock.now()
        let found = withBook(holding: { $0.orders.values.contains { $0.prepayID == prepayID } }) {
            (book: inout OrderBook) -> (String, String?)? in
            // The page is the one WeChat answered: its prepay_id with its own package number.
            guard let order = book.orders.values.first(where: { $0.tradeType == "MWEB" && $0.prepayID == prepayID }),
                  book.mwebPackage(prepayID: prepayID) == package
            else { return nil }
            return (order.outTradeNo, order.siteURL)
        }
        guard let (outTradeNo, siteURL) = found else { throw SimulatorControlError(code: .mwebURLNotFound) }
        guard let referer, let refererHost = URLComponents(string: referer)?.host?.lowercased(),
              let siteHost = siteURL.flatMap({ URLComponents(string: $0)?.host?.lowercased() }), refererHost == siteHost
        else { throw SimulatorControlError(code: .refererNotAllowed) }
        let order = pay ? try self.pay(outTradeNo: outTradeNo) : try withBook(holding: { $0.orders[outTradeNo] != nil }) {
            book throws(SimulatorControlError) -> SimulatedOrderSnapshot in
            guard let order = book.order(outTradeNo, now: now) else { throw SimulatorControlError(code: .orderNotFound) }
            guard order.state == .notPaid else { throw SimulatorControlError(code: .orderNotPayable) }
            return Self.snapshot(order)
        }
        return (order, redirect)
    }

    /// The user scans a NATIVE order's QR code (its `code_url`) and pays: `pay` of the order it names.
    @discardableResult
    public func scan(codeURL: String) throws(SimulatorControlError) -> SimulatedOrderSnapshot {
        let now = clock.now(), lifetime = configuration.prepayLifetime
        let found = withBook(holding: { $0.byCodeURL[codeURL] != nil }) { (book: inout OrderBook) -> (String, Bool)? in
            guard let outTradeNo = book.byCodeURL[codeURL], let order = book.orders[outTradeNo] else { return nil }
            // WeChat keeps a code_url 2 hours; a repeated unifiedorder after that replaced it.
            return (outTradeNo, order.codeURL == codeURL && now.timeIntervalSince(order.prepayIssuedAt) < lifetime)
        }
        guard let (outTradeNo, live) = found else { throw SimulatorControlError(code: .codeURLNotFound) }
        guard live else { throw SimulatorControlError(code: .codeURLExpired) }
        return try pay(outTradeNo: outTradeNo)
    }

    /// The payment fails (a bank error): the order ends PAYERROR and no notify is sent.
    @discardableResult
    public func failPayment(outTradeNo: String) throws(SimulatorControlError) -> SimulatedOrderSnapshot {
        let now = clock.now()
        return try withBook(holding: { $0.orders[outTradeNo] != nil }) { book throws(SimulatorControlError) in
            guard var order = book.order(outTradeNo, now: now) else { throw SimulatorControlError(code: .orderNotFound) }
            guard order.state == .notPaid else { throw SimulatorControlError(code: .orderNotPayable) }
            order.state = .payError
            book.orders[outTradeNo] = order
            return Self.snapshot(order)
        }
    }

    /// The order as WeChat holds it now, or nil.
    public func order(_ outTradeNo: String) -> SimulatedOrderSnapshot? {
        let now = clock.now()
        return withBook(holding: { $0.orders[outTradeNo] != nil }) { book in book.order(outTradeNo, now: now).map(Self.snapshot) }
    }

    /// Runs `body` under the lock on the book (production or sandbox) that holds what `holds` finds.
    private func withBook<R: Sendable, E: Error>(holding holds: (OrderBook) -> Bool,
                                       _ body: (inout OrderBook) throws(E) -> R) throws(E) -> R {
        try books.withLock { books throws(E) in try books.update(holding: holds, body) }
    }

    /// How many orders WeChat holds.
    public var orderCount: Int { books.withLock { $0.production.orders.count + $0.sandbox.orders.count } }

    /// What the simulator has seen and done.
    public var counters: SimulatorCounters {
        var counters = books.withLock { books in
            var merged = books.production.counters
            let sandbox = books.sandbox.counters
            merged.requests.merge(sandbox.requests, uniquingKeysWith: +)
            merged.faultsInjected.merge(sandbox.faultsInjected, uniquingKeysWith: +)
            merged.businessFailures.merge(sandbox.businessFailures, uniquingKeysWith: +)
            merged.faultsByEndpoint.merge(sandbox.faultsByEndpoint) { $0.merging($1, uniquingKeysWith: +) }
            merged.reusedNonces += sandbox.reusedNonces
            merged.paymentsMade += sandbox.paymentsMade
            return merged
        }
        let history = notifyHistory
        counters.notifyAttempts = history.count
        counters.notifiesAcknowledged = history.filter(\.acknowledged).count
        counters.notifiesDropped = history.filter(\.dropped).count
        return counters
    }

    /// The most recent API requests, oldest first (at most the last 10,000).
    public var requests: [LoggedRequest] {
        books.withLock { ($0.production.requestLog + $0.sandbox.requestLog).sorted { $0.at < $1.at } }
    }

    /// When orderquery asked about each order (the production book), oldest first; per order the
    /// most recent 1,000 at most.
    public var orderQueryTimes: [String: [Date]] { books.withLock { $0.production.orderQueryTimes } }

    /// Every notify attempt so far.
    public var notifyHistory: [NotifyAttempt] { (notifies.history + v3Notifies.history).sorted { $0.at < $1.at } }

    /// Notifies still waiting for the merchant's acknowledgement.
    public var pendingNotifies: Int { notifies.pending + v3Notifies.pending }

    /// Replaces the whole fault plan: endpoint faults and notify faults.
    public func apply(_ plan: FaultPlan) {
        setFaults(plan)
        notifies.setFaults(plan.notify)
        v3Notifies.setFaults(plan.notify)
        v3?.state.withLock { $0.notifyFaults = plan.v3Notify }
    }

    static func snapshot(_ order: SimulatedOrder) -> SimulatedOrderSnapshot {
        SimulatedOrderSnapshot(
            outTradeNo: order.outTradeNo, state: order.state.rawValue, totalFee: order.totalFee,
            prepayID: order.prepayID, transactionID: order.transactionID,
            signType: order.apiVersion == .v3 ? "RSA" : order.signType.rawValue, apiVersion: order.apiVersion.rawValue,
            refunds: order.refunds.map {
                .init(outRefundNo: $0.outRefundNo, refundID: $0.refundID, refundFee: $0.refundFee, status: $0.status.rawValue)
            })
    }

    /// The payment notify WeChat posts for a paid order, signed with the order's algorithm.
    func paymentNotifyBody(_ order: SimulatedOrder, book: inout OrderBook) -> [UInt8] {
        var builder = PaymentNotifyBuilder(
            merchant: MerchantIdentity(appID: order.appID.isEmpty ? configuration.appID : order.appID, mchID: configuration.mchID),
            outTradeNo: order.outTradeNo, transactionID: order.transactionID ?? "", totalFee: order.totalFee,
            timeEnd: order.paidAt ?? clock.now(), nonce: book.random.alphanumerics(32))
        builder.openid = order.openid ?? builder.openid
        builder.tradeType = order.parameters["trade_type"] ?? "APP"
        builder.bankType = "OTHERS"
        builder.attach = order.attach
        // Real HMAC-SHA256 notifies often leave sign_type out (WxJava #1585); MD5 ones never need it.
        let declares = order.signType == .hmacSHA256 && configuration.notifyCarriesSignTypeForHMAC
        return encode(builder.fields(signedWith: signer, signType: order.signType, declaresSignType: declares))
    }
}

extension WeChatPaySimulator {
    /// The refund reaches a final status (WeChat's bank side answered). A refund notify goes to the
    /// refund's notify_url, if it gave one.
    @discardableResult
    public func completeRefund(outRefundNo: String, status: String = "SUCCESS") throws(SimulatorControlError)
        -> SimulatedOrderSnapshot
    {
        let now = clock.now()
        // v3's names are taken too: CLOSED is v2's REFUNDCLOSE, ABNORMAL v2's CHANGE.
        let named = ["CLOSED": "REFUNDCLOSE", "ABNORMAL": "CHANGE"][status] ?? status
        guard let finalStatus = SimulatedRefund.Status(rawValue: named), finalStatus != .processing else {
            throw SimulatorControlError(code: .refundNotProcessing)
        }
        let (snapshot, notify, isV3) = try withBook(holding: { $0.refundOwner[outRefundNo] != nil }) {
            book throws(SimulatorControlError) -> (SimulatedOrderSnapshot, (String, [UInt8])?, Bool) in
            guard let owner = book.refundOwner[outRefundNo], var order = book.orders[owner],
                  let index = order.refunds.firstIndex(where: { $0.outRefundNo == outRefundNo }) else {
                throw SimulatorControlError(code: .refundNotFound)
            }
            guard order.refunds[index].status == .processing else { throw SimulatorControlError(code: .refundNotProcessing) }
            order.refunds[index].status = finalStatus
            order.refunds[index].completedAt = now
            book.orders[owner] = order
            let refund = order.refunds[index]
            if refund.apiVersion == .v3, let v3 {
                let notice = V3RefundNotice(
                    mchID: configuration.mchID, transactionID: order.transactionID ?? "", outTradeNo: order.outTradeNo,
                    refundID: refund.refundID, outRefundNo: refund.outRefundNo, refundStatus: Self.v3Status(refund.status),
                    successTime: refund.status == .success ? RFC3339.format(now) : nil,
                    userReceivedAccount: Self.refundReceivingAccount, total: order.totalFee, refund: refund.refundFee,
                    payerTotal: order.totalFee, payerRefund: refund.refundFee)
                let notify = refund.notifyURL.map { ($0, v3NotifyBody(.refund(notice), keys: v3, now: now, book: &book)) }
                return (Self.snapshot(order), notify, true)
            }
            let notify = refund.notifyURL.map { ($0, refundNotifyBody(refund, order: order, book: &book)) }
            return (Self.snapshot(order), notify, false)
        }
        if let notify { (isV3 ? v3Notifies : notifies).enqueue(kind: .refund, reference: outRefundNo, url: notify.0, body: notify.1) }
        return snapshot
    }
}
