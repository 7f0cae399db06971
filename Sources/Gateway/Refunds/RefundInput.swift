// SPDX-License-Identifier: Apache-2.0
import JSON
import WeChatPay

/// A validated `POST /v1/orders/{out_trade_no}/refunds` body:
/// `{"amount": fen, "reason": "1–80 bytes", "out_refund_no"?: "1–64 of [0-9A-Za-z_-|*@]"}`.
/// What WeChat would refuse is refused here first, so an invalid refund is never recorded.
public struct RefundInput: Sendable, Hashable {
    public var amount: Int
    public var reason: String
    /// Generated when absent (then every request is a new refund).
    public var outRefundNo: String?

    static let allowedFields: Set<String> = ["amount", "reason", "out_refund_no"]

    public init(amount: Int, reason: String, outRefundNo: String? = nil) {
        self.amount = amount
        self.reason = reason
        self.outRefundNo = outRefundNo
    }

    /// Parses and validates a JSON body; the error names the first offending field.
    public init(json body: [UInt8]) throws(APIError) {
        let object = try CreateOrderInput.members(of: body)
        if let unknown = object.keys.sorted().first(where: { !Self.allowedFields.contains($0) }) {
            throw .invalid(CreateOrderInput.printableField(unknown), "unknown field")
        }
        amount = try CreateOrderInput.integer(object, "amount", required: true, range: 1...1_000_000_000) ?? 0
        reason = try CreateOrderInput.string(object, "reason", required: true, bytes: 1...80) ?? ""
        outRefundNo = try CreateOrderInput.string(object, "out_refund_no", required: false, bytes: 1...64)
        if let outRefundNo, !Self.isValidOutRefundNo(outRefundNo) {
            throw .invalid("out_refund_no", "out_refund_no may contain only 0-9 A-Z a-z _ - | * @")
        }
    }

    /// The canonical form of the client's parameters, for idempotency: the same out_refund_no with
    /// another digest (or on another order) is a conflict. Length-prefixed so no two sets collide.
    public var parametersDigest: String {
        [String(amount), reason].map { "\($0.utf8.count):\($0)" }.joined(separator: "|")
    }

    public static func isValidOutRefundNo(_ value: String) -> Bool {
        (1...64).contains(value.utf8.count) && value.utf8.allSatisfy(MerchantNumber.allows)
    }
}
