// SPDX-License-Identifier: Apache-2.0

/// `bill_type` of downloadbill.
public enum BillType: String, Sendable, Hashable, CaseIterable {
    /// Every successful payment and refund of the day (the default).
    case all = "ALL"
    /// Successful payments only.
    case success = "SUCCESS"
    /// Refunds only.
    case refund = "REFUND"
    /// Refunds of recharge coupons.
    case rechargeRefund = "RECHARGE_REFUND"
}
