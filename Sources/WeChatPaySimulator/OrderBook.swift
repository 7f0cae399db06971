// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

/// Everything WeChat Pay remembers, guarded by the simulator's mutex.
struct OrderBook: Sendable {
    var orders: [String: SimulatedOrder] = [:]
    /// transaction_id → out_trade_no
    var byTransactionID: [String: String] = [:]
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

    init(seed: UInt64) {
        random = SeededRandom(seed: seed)
    }

    mutating func noteNonce(_ nonce: String) {
        if !nonces.insert(nonce).inserted { counters.reusedNonces += 1 }
    }

    mutating func log(endpoint: Endpoint, fields: Fields, at date: Date) {
        if requestLog.count >= Self.requestLogLimit { requestLog.removeFirst(requestLog.count / 2) }
        requestLog.append(LoggedRequest(path: endpoint.rawValue, fields: fields, at: date))
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
        "wx" + BeijingClock.compact(now) + random.alphanumerics(18).lowercased()
    }

    mutating func newTransactionID(now: Date) -> String {
        "42000" + random.digits(5) + BeijingClock.compact(now).prefix(8) + random.digits(10)
    }

    mutating func newRefundID() -> String {
        "50300" + random.digits(24)
    }
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
    public var reusedNonces = 0
    public var paymentsMade = 0
    public var notifyAttempts = 0
    public var notifiesAcknowledged = 0
    public var notifiesDropped = 0
}

/// WeChat's times are Beijing time (UTC+8) with no daylight saving, so a fixed offset is exact.
enum BeijingClock {
    static let offset: TimeInterval = 8 * 3600

    private static func components(_ date: Date) -> (Int, Int, Int, Int, Int, Int) {
        let seconds = Int((date.timeIntervalSince1970 + offset).rounded(.down))
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let secondOfDay = seconds - days * 86400
        // Civil-from-days (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day, secondOfDay / 3600, secondOfDay % 3600 / 60, secondOfDay % 60)
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    /// `yyyyMMddHHmmss`
    static func compact(_ date: Date) -> String {
        let (y, mo, d, h, mi, s) = components(date)
        return pad(y, 4) + pad(mo, 2) + pad(d, 2) + pad(h, 2) + pad(mi, 2) + pad(s, 2)
    }

    /// `yyyy-MM-dd HH:mm:ss`
    static func readable(_ date: Date) -> String {
        let (y, mo, d, h, mi, s) = components(date)
        return "\(pad(y, 4))-\(pad(mo, 2))-\(pad(d, 2)) \(pad(h, 2)):\(pad(mi, 2)):\(pad(s, 2))"
    }

    /// `yyyyMMdd` of the Beijing day containing `date`.
    static func day(_ date: Date) -> String { String(compact(date).prefix(8)) }

    /// Parses `yyyyMMddHHmmss` as Beijing time.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 14, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        func number(_ range: Range<Int>) -> Int { bytes[range].reduce(0) { $0 * 10 + Int($1 - 0x30) } }
        let (y, mo, d, h, mi, s) = (number(0..<4), number(4..<6), number(6..<8), number(8..<10), number(10..<12), number(12..<14))
        guard (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 60 else { return nil }
        // Days-from-civil.
        let yy = mo <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        let date = Date(timeIntervalSince1970: TimeInterval(days * 86400 + h * 3600 + mi * 60 + s) - offset)
        // Reject dates such as 20240230 that the arithmetic would roll over.
        return compact(date) == text ? date : nil
    }
}
