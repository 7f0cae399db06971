// SPDX-License-Identifier: Apache-2.0

/// `refund_status_$n` of refundquery (and `refund_status` of the refund notify).
///
/// Equality and hashing compare raw values (the standard library's `RawRepresentable` rules), so
/// a value is identified by what travels on the wire.
public enum RefundStatus: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
    /// The money is back with the payer.
    case success
    /// The refund was closed (failed).
    case refundClose
    /// Still in progress: query again later.
    case processing
    /// Abnormal, e.g. the payer's card is invalid or frozen: someone must handle it in the merchant
    /// platform (and may not simply retry it under a new `out_refund_no`).
    case change
    /// A status this package does not know; treated as not final.
    case unknown(String)

    public init(rawValue: String) {
        switch rawValue {
        case "SUCCESS": self = .success
        case "REFUNDCLOSE": self = .refundClose
        case "PROCESSING": self = .processing
        case "CHANGE": self = .change
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .success: "SUCCESS"
        case .refundClose: "REFUNDCLOSE"
        case .processing: "PROCESSING"
        case .change: "CHANGE"
        case .unknown(let value): value
        }
    }

    /// Whether WeChat will not move the refund any further by itself.
    public var isFinal: Bool {
        switch self {
        case .success, .refundClose, .change: true
        case .processing, .unknown: false
        }
    }

    /// Whether a person must act (``change``).
    public var needsManualHandling: Bool { self == .change }

    public var description: String { DisplayText.sanitized(rawValue, limit: 32) }
}
