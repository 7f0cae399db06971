// SPDX-License-Identifier: Apache-2.0

/// A marker on an order that needs a human or a follow-up, e.g. "paid after we closed it".
///
/// A flag is a short lowercase identifier (`[a-z0-9_.-]`, 1–64 characters), so flags can be stored,
/// shown and used as metric labels without escaping.
public struct OrderFlag: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public let rawValue: String

    /// WeChat reported the order paid after we had closed it locally: the money arrived, so the
    /// order is settled as SUCCESS and must be delivered or refunded by a person.
    public static let paidAfterClose: OrderFlag = "paid_after_close"

    /// An App Store purchase credited to an order made for it: no open order of its user and product
    /// was found (the app never created one, or it had expired). Paid, never dropped; for support to
    /// look at.
    public static let matchedWithoutOrder: OrderFlag = "matched_without_order"

    /// WeChat's orderquery reports the order REFUND while WeChat never accepted a refund of it from
    /// the gateway: refunded elsewhere (the merchant platform). The order stays SUCCESS, since
    /// its state follows its own refunds; a person must tell the business.
    public static let refundOutsideGateway: OrderFlag = "refund_outside_gateway"

    /// WeChat reported the paid order paid again under another transaction id (a verified notify or
    /// orderquery answer): a second payment made around the gateway, or a leaked key. The timeline
    /// holds the other id; a person must look.
    public static let otherTransactionID: OrderFlag = "other_transaction_id"

    /// WeChat (a verified notify or orderquery answer) reported a payment of another amount than
    /// the order's: a leaked key or a bug at either end. Nothing is settled; the timeline holds the
    /// reported amount; a person must look (and rotate the key if it leaked).
    public static let amountMismatch: OrderFlag = "amount_mismatch"

    /// An App Store purchase of a product the catalog does not have (a catalog mistake, a product
    /// added in App Store Connect first): Apple took the money, so it is recorded on an order made
    /// for it, at the price and in the currency Apple charged, and a person decides what it buys.
    public static let unknownProduct: OrderFlag = "unknown_product"

    /// The flags that need a person: the support attention list (`GET /v1/support/attention`, the
    /// console's page of the same name).
    public static let needingAttention: Set<OrderFlag> = [
        .unknownProduct, .matchedWithoutOrder, .refundNeedsAttention, .paidAfterClose, .refundOutsideGateway,
        .otherTransactionID, .amountMismatch,
    ]

    /// The marker that replaces an attention flag support marked handled (`handled.unknown_product`):
    /// the order leaves the attention list and still says what it was. The flag set again later
    /// (a refund needing attention a second time) brings the order back.
    public var handled: OrderFlag { OrderFlag(rawValue: "handled." + rawValue) ?? self }

    /// Returns `nil` unless `rawValue` is a valid flag name.
    public init?(rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// For literals written in code; an invalid literal is a programming error.
    public init(stringLiteral value: String) {
        precondition(Self.isValid(value), "invalid order flag literal")
        self.rawValue = value
    }

    public static func < (lhs: OrderFlag, rhs: OrderFlag) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { rawValue }

    static func isValid(_ name: String) -> Bool {
        let bytes = name.utf8
        guard (1...64).contains(bytes.count) else { return false }
        return bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
        }
    }
}
