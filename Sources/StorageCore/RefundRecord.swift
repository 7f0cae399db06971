// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Where a refund stands, in WeChat Pay's own `refund_status` vocabulary.
public enum RefundState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Recorded and its amount reserved; sent to WeChat (or about to be, or to be sent again by the
    /// reconciler), no result yet.
    case processing = "PROCESSING"
    /// The money went back to the payer.
    case success = "SUCCESS"
    /// WeChat could not pay it back (the payer's card is frozen or closed): a person must act in
    /// the merchant platform. The amount stays reserved.
    case change = "CHANGE"
    /// Closed without refunding (or refused by WeChat before it was accepted): the reservation is
    /// released.
    case refundClose = "REFUNDCLOSE"

    /// Whether the refund still holds part of the order's amount. Only a closed refund gives it back.
    public var reservesAmount: Bool { self != .refundClose }

    /// Whether nothing will change it any more: SUCCESS and REFUNDCLOSE. CHANGE waits for a person.
    public var isFinal: Bool { self == .success || self == .refundClose }

    public var description: String { rawValue }
}

/// One refund as the store keeps it: the parameters it was requested with (sent to WeChat, and sent
/// again unchanged on every retry) and what WeChat has said since.
public struct RefundRecord: Sendable, Hashable {
    /// The merchant's refund number, unique in the store (WeChat's `out_refund_no`).
    public var outRefundNo: String
    /// The refunded order.
    public var outTradeNo: String
    /// The amount to refund in fen (`refund_fee`), positive.
    public var amount: Int
    /// The order's amount in fen (`total_fee`), as sent with the refund.
    public var totalFee: Int
    /// Why (`refund_desc`, shown to the payer).
    public var reason: String
    /// The `notify_url` sent with the refund; a resend repeats it.
    public var notifyURL: String?
    /// A canonical digest of the client's parameters: a second request with the same `outRefundNo`
    /// is a replay only if the digests (and the order) are equal.
    public var parametersDigest: String
    public var state: RefundState
    /// WeChat's `refund_id`, once it accepted the refund.
    public var refundID: String?
    /// Why the refund ended REFUNDCLOSE without WeChat ever accepting it (e.g. `NOTENOUGH`).
    public var failureReason: String?
    public var createdAt: Date
    /// When WeChat first answered the refund request with a `refund_id`.
    public var acceptedAt: Date?
    /// When the money went back (`success_time`), for SUCCESS.
    public var succeededAt: Date?
    public var updatedAt: Date
    public var lastQueriedAt: Date?
    public var lastNotifyAt: Date?

    public init(
        outRefundNo: String, outTradeNo: String, amount: Int, totalFee: Int, reason: String, notifyURL: String?,
        parametersDigest: String, state: RefundState = .processing, refundID: String? = nil,
        failureReason: String? = nil, createdAt: Date, acceptedAt: Date? = nil, succeededAt: Date? = nil,
        updatedAt: Date? = nil, lastQueriedAt: Date? = nil, lastNotifyAt: Date? = nil
    ) {
        self.outRefundNo = outRefundNo
        self.outTradeNo = outTradeNo
        self.amount = amount
        self.totalFee = totalFee
        self.reason = reason
        self.notifyURL = notifyURL
        self.parametersDigest = parametersDigest
        self.state = state
        self.refundID = refundID
        self.failureReason = failureReason
        self.createdAt = createdAt
        self.acceptedAt = acceptedAt
        self.succeededAt = succeededAt
        self.updatedAt = updatedAt ?? createdAt
        self.lastQueriedAt = lastQueriedAt
        self.lastNotifyAt = lastNotifyAt
    }
}

/// A refund to record: what the client asked for. The store adds the order's amount and the state.
public struct NewRefund: Sendable, Hashable {
    public var outRefundNo: String
    public var outTradeNo: String
    public var amount: Int
    public var reason: String
    public var notifyURL: String?
    public var parametersDigest: String
    public var createdAt: Date

    public init(outRefundNo: String, outTradeNo: String, amount: Int, reason: String, notifyURL: String?,
                parametersDigest: String, createdAt: Date) {
        self.outRefundNo = outRefundNo
        self.outTradeNo = outTradeNo
        self.amount = amount
        self.reason = reason
        self.notifyURL = notifyURL
        self.parametersDigest = parametersDigest
        self.createdAt = createdAt
    }
}

extension OrderFlag {
    /// A refund of the order ended CHANGE (WeChat could not pay it back): a person must handle it in
    /// the merchant platform. Set and cleared by the refund door as refunds enter and leave CHANGE.
    public static let refundNeedsAttention: OrderFlag = "refund_needs_attention"
}
