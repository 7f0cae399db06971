// SPDX-License-Identifier: Apache-2.0

/// Where an order stands, in WeChat Pay's own `trade_state` vocabulary, so a state read from an
/// `orderquery` answer maps onto the store without translation.
public enum OrderState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Created, not paid (yet).
    case notPay = "NOTPAY"
    /// Paid. Only `OrderStore.transition` may move an order here.
    case success = "SUCCESS"
    /// Paid, then (partly) refunded.
    case refund = "REFUND"
    /// Closed before payment (by us or by WeChat after `time_expire`).
    case closed = "CLOSED"
    /// A micropay order cancelled by the merchant.
    case revoked = "REVOKED"
    /// The payment failed (e.g. the bank refused it).
    case payError = "PAYERROR"
    /// The payer is entering a password; a transient state.
    case userPaying = "USERPAYING"

    /// Whether no further payment can happen on the order. A final order is not swept by the
    /// reconciler and is never handed out by `claimOpenOrders`.
    public var isFinal: Bool {
        switch self {
        case .success, .refund, .closed, .revoked, .payError: true
        case .notPay, .userPaying: false
        }
    }

    /// The states in which the order may still be paid.
    public static let open: Set<OrderState> = [.notPay, .userPaying]

    public var description: String { rawValue }
}
