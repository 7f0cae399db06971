// SPDX-License-Identifier: Apache-2.0

/// `refund_account`: which funds a refund is paid from (merchants on the old fund flow only).
public enum RefundAccount: String, Sendable, Hashable, CaseIterable {
    /// Unsettled funds (the default).
    case unsettledFunds = "REFUND_SOURCE_UNSETTLED_FUNDS"
    /// The merchant's recharge balance.
    case rechargeFunds = "REFUND_SOURCE_RECHARGE_FUNDS"
}
