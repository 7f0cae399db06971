// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

/// Everything WeChat Pay remembers, guarded by the simulator's mutex.
struct OrderBook: Sendable {
    var orders: [String: SimulatedOrder] = [:]
    /// transaction_id → out_trade_no
    var byTransactionID: [String: String] = [:]
    /// NATIVE orders by their `code_url`, for the control panel's "scan".
    var byCodeURL: [String: String] = [:]
    /// out_refund_no → out_trade_no, and refund_id → out_refund_no
    var refundOwner: [String: String] = [:]
    var byRefundID: [String: String] = [:]
    var random: SeededRandom
    var faults = FaultPlan()
    var counters = SimulatorCounters()
    /// nonce_str values seen, to count reuse (WeChat does not refuse it, but a merchant should never reuse one).
    var nonces: Set<String> = []
    /// The most recent API requests, newest last, for tests and the control API.
    var requestLog: [LoggedRequest] = []
    static let requestLogLimit = 10_000
    /// out_trade_no → when orderquery asked about it, oldest first, so a test can check from outside
    /// how often an order was queried (the request log keeps too few requests for that).
    var orderQueryTimes: [String: [Date]] = [:]
    static let orderQueryTimesLimit = 1_000
    /// out_refund_no → every refund request's business parameters (nonce_str, sign and sign_type
    /// left out), so a test can check from outside that each refund number reached WeChat with one
    /// parameter set only.
    var refundRequests: [String: RefundRequestLog] = [:]
    /// Accepted refunds that complete by themselves (`refundCompletionDelay`), oldest first.
    var refundsDue: [(outRefundNo: String, due: Date)] = []

    init(seed: UInt64) {
        random = SeededRandom(seed: seed)
    }

    /// How many nonces are remembered for the reuse check; a long-running simulator (demo mode)
    /// forgets half of them (a set has no order) rather than growing without bound.
    static let nonceMemory = 200_000

    mutating func noteNonce(_ nonce: String) {
        if !nonces.insert(nonce).inserted { counters.reusedNonces += 1 }
        if nonces.count > Self.nonceMemory { nonces = Set(nonces.prefix(Self.nonceMemory / 2)) }
    }

    mutating func log(path: String, fields: Fields, at date: Date) {
        if requestLog.count >= Self.requestLogLimit { requestLog.removeFirst(requestLog.count / 2) }
        requestLog.append(LoggedRequest(path: path, fields: fields, at: date))
    }

    /// Remembers an orderquery about an order; per order, the most recent 1,000 at most (a demo
    /// simulator polled for days forgets the oldest half rather than growing without bound).
    mutating func noteOrderQuery(_ outTradeNo: String, at date: Date) {
        orderQueryTimes[outTradeNo, default: []].append(date)
        if let count = orderQueryTimes[outTradeNo]?.count, count > Self.orderQueryTimesLimit {
            orderQueryTimes[outTradeNo]?.removeFirst(count / 2)
        }
    }

    /// An order whose `time_expire` has passed unpaid is closed by WeChat; apply that lazily.
    mutating func order(_ outTradeNo: String, now: Date) -> SimulatedOrder? {
        guard var order = orders[outTradeNo] else { return nil }
        if order.state == .notPaid, let expiresAt = order.expiresAt, expiresAt <= now {
            order.state = .closed
            order.closedAt = expiresAt
            orders[outTradeNo] = order
        }
        return order
    }

    mutating func newPrepayID(now: Date) -> String {
        "wx" + BeijingTime.format(now) + random.alphanumerics(18).lowercased()
    }

    /// A NATIVE order's QR content, as WeChat writes it: `weixin://wxpay/bizpayurl?pr=` and a short code.
    mutating func newCodeURL() -> String {
        "weixin://wxpay/bizpayurl?pr=" + random.alphanumerics(7)
    }

    /// A repeated unifiedorder after the prepay's lifetime: WeChat issues a new prepay_id and, for
    /// a NATIVE order, a new code_url (the old one is dead: WeChat keeps a code_url 2 hours).
    mutating func renewPrepay(of order: inout SimulatedOrder, now: Date) {
        order.prepayID = newPrepayID(now: now)
        order.prepayIssuedAt = now
        if order.codeURL != nil {
            order.codeURL = newCodeURL()
            noteCodeURL(order)
        }
        orders[order.outTradeNo] = order
    }

    mutating func noteCodeURL(_ order: SimulatedOrder) {
        if let codeURL = order.codeURL { byCodeURL[codeURL] = order.outTradeNo }
    }

    /// An MWEB order's payment page, as WeChat writes it: its prepay_id and a `package` number,
    /// the same for the same prepay_id.
    func mwebURL(prepayID: String) -> String {
        "https://wx.tenpay.com/cgi-bin/mmpayweb-bin/checkmweb?prepay_id=" + prepayID + "&package=" + mwebPackage(prepayID: prepayID)
    }

    /// The `package` number of an MWEB order's page: derived from its prepay_id.
    func mwebPackage(prepayID: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in prepayID.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return String(hash % 10_000_000_000)
    }

    mutating func newTransactionID(now: Date) -> String {
        "42000" + random.digits(5) + BeijingTime.format(now).prefix(8) + random.digits(10)
    }

    mutating func noteRefundRequest(_ fields: Fields) {
        guard let number = fields.nonEmpty("out_refund_no") else { return }
        var parameters: [String: String] = [:]
        for field in fields where !["nonce_str", "sign", "sign_type"].contains(field.name) { parameters[field.name] = field.value }
        refundRequests[number, default: RefundRequestLog()].requests += 1
        refundRequests[number]!.parameterSets.insert(parameters)
    }

    /// Records an accepted refund of `order` (v2's and v3's alike): the order moves to REFUND, the
    /// refund is found by its numbers, and completes by itself after `completionDelay` if one is set.
    mutating func record(_ refund: SimulatedRefund, of order: inout SimulatedOrder, completionDelay: TimeInterval?) {
        order.refunds.append(refund)
        order.state = .refund
        orders[order.outTradeNo] = order
        refundOwner[refund.outRefundNo] = order.outTradeNo
        byRefundID[refund.refundID] = refund.outRefundNo
        if let completionDelay { refundsDue.append((refund.outRefundNo, refund.requestedAt + completionDelay)) }
    }

    mutating func newRefundID() -> String {
        "50300" + random.digits(24)
    }
}

/// The refund requests one out_refund_no received.
public struct RefundRequestLog: Sendable, Hashable {
    public var requests = 0
    /// The distinct business parameter sets among them: one, for a merchant that retries right.
    public var parameterSets: Set<[String: String]> = []
}

/// A request the simulator answered, kept for inspection.
public struct LoggedRequest: Sendable {
    public var path: String
    public var fields: Fields
    public var at: Date
}

/// What the simulator has seen and done, for tests and reports.
public struct SimulatorCounters: Sendable, Codable {
    public var requests: [String: Int] = [:]
    public var faultsInjected: [String: Int] = [:]
    /// The same faults by API path, then kind (what a merchant's per-endpoint metrics should add up to).
    public var faultsByEndpoint: [String: [String: Int]] = [:]
    /// Signed business failures answered (`result_code=FAIL`), by err_code, injected ones apart:
    /// e.g. `OUT_TRADE_NO_USED`, which a merchant repeating its requests exactly never causes.
    public var businessFailures: [String: Int] = [:]
    public var reusedNonces = 0
    public var paymentsMade = 0
    public var notifyAttempts = 0
    public var notifiesAcknowledged = 0
    public var notifiesDropped = 0
}

/// WeChat's production and sandbox ("仿真测试系统") keep separate data: a sandbox order never
/// appears in a production answer or bill, and its out_trade_no does not block production.
struct Books: Sendable {
    var production: OrderBook
    var sandbox: OrderBook

    init(seed: UInt64) {
        production = OrderBook(seed: seed)
        sandbox = OrderBook(seed: seed ^ 0x5A4D_B0C5_A4DB_0C5A)
    }

    /// Runs `body` on the book that holds what `holds` looks for: production first, then the sandbox;
    /// production when neither does.
    mutating func update<R, E: Error>(holding holds: (OrderBook) -> Bool,
                                      _ body: (inout OrderBook) throws(E) -> R) throws(E) -> R {
        if !holds(production) && holds(sandbox) { return try body(&sandbox) }
        return try body(&production)
    }
}
