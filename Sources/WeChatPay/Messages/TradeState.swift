// SPDX-License-Identifier: Apache-2.0

/// `trade_state` of an order, as orderquery reports it.
///
/// Paid means exactly ``success`` (with `result_code=SUCCESS` and a matching amount): a
/// ``refund`` order was paid once, but only ``success`` settles an order as paid.
///
/// Equality and hashing compare raw values (the standard library's `RawRepresentable` rules), so
/// a value is identified by what travels on the wire.
public enum TradeState: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
    /// Paid.
    case success
    /// Paid, then a refund was initiated.
    case refund
    /// Not paid yet; can still be paid until it expires or is closed.
    case notPay
    /// Closed (by closeorder or by expiry).
    case closed
    /// Reversed (micropay only).
    case revoked
    /// The payer is entering a password (micropay only).
    case userPaying
    /// Payment failed, e.g. at the bank (micropay only).
    case payError
    /// Accepted, waiting for the deduction (entrusted payments).
    case accept
    /// A state this package does not know. Treated as not final, so the order is queried again.
    case unknown(String)

    public init(rawValue: String) {
        switch rawValue {
        case "SUCCESS": self = .success
        case "REFUND": self = .refund
        case "NOTPAY": self = .notPay
        case "CLOSED": self = .closed
        case "REVOKED": self = .revoked
        case "USERPAYING": self = .userPaying
        case "PAYERROR": self = .payError
        case "ACCEPT": self = .accept
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .success: "SUCCESS"
        case .refund: "REFUND"
        case .notPay: "NOTPAY"
        case .closed: "CLOSED"
        case .revoked: "REVOKED"
        case .userPaying: "USERPAYING"
        case .payError: "PAYERROR"
        case .accept: "ACCEPT"
        case .unknown(let value): value
        }
    }

    /// Whether the state can no longer change by itself (polling can stop). Unknown states are
    /// not final: the conservative reading is to keep asking.
    public var isFinal: Bool {
        switch self {
        case .success, .refund, .closed, .revoked, .payError: true
        case .notPay, .userPaying, .accept, .unknown: false
        }
    }

    public var description: String { DisplayText.sanitized(rawValue, limit: 32) }
}
