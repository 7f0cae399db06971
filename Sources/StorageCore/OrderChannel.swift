// SPDX-License-Identifier: Apache-2.0

/// How an order is paid: one order model for both channels, the same door to SUCCESS, the same
/// outbox and webhook.
public enum OrderChannel: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// WeChat Pay (the Android app): `unifiedorder`, the notify, orderquery.
    case wechat
    /// Apple In-App Purchase (the iOS app): credited by a verified App Store transaction.
    case apple

    public var description: String { rawValue }
}

/// The App Store transaction that paid an order, written by the one door in the same statement as
/// the move to SUCCESS (`OrderTransition.apple`), and never changed after.
public struct AppleTransactionFields: Sendable, Hashable {
    /// Apple's `transactionId`: unique among orders (the database refuses a second order with it).
    public var transactionID: String
    /// Apple's `originalTransactionId` (shared by a subscription's renewals).
    public var originalTransactionID: String
    /// `Production` or `Sandbox`.
    public var environment: String
    /// How many of the product it sold, when the evidence said.
    public var quantity: Int?

    public init(transactionID: String, originalTransactionID: String, environment: String, quantity: Int? = nil) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.environment = environment
        self.quantity = quantity
    }
}
