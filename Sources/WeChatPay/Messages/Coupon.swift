// SPDX-License-Identifier: Apache-2.0

/// One coupon applied to a payment (`coupon_id_$n`, `coupon_type_$n`, `coupon_fee_$n`).
public struct Coupon: Sendable, Hashable {
    public var id: String
    /// `CASH` or `NO_CASH` when WeChat says; absent on some responses.
    public var type: String?
    /// The coupon's amount in fen.
    public var fee: Int

    public init(id: String, type: String? = nil, fee: Int) {
        self.id = id
        self.type = type
        self.fee = fee
    }

    /// Reads `coupon_count` coupons; nil count means none were reported.
    static func readAll(from reader: FieldReader) throws(WeChatPayMessageError) -> [Coupon] {
        guard let count = try reader.optionalCount("coupon_count") else { return [] }
        var coupons: [Coupon] = []
        for n in 0..<count {
            coupons.append(Coupon(
                id: try reader.required("coupon_id_\(n)"),
                type: try reader.optional("coupon_type_\(n)"),
                fee: try reader.requiredAmount("coupon_fee_\(n)")))
        }
        return coupons
    }

    static func write(_ coupons: [Coupon], to writer: inout FieldWriter) {
        guard !coupons.isEmpty else { return }
        writer.add("coupon_count", coupons.count)
        for (n, coupon) in coupons.enumerated() {
            writer.add("coupon_type_\(n)", coupon.type)
            writer.add("coupon_id_\(n)", coupon.id)
            writer.add("coupon_fee_\(n)", coupon.fee)
        }
    }
}
