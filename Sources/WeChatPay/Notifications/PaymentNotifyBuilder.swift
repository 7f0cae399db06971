// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Builds a signed payment notify the way WeChat sends one, for the simulator and for tests, so
/// both produce notifies with the same code the gateway verifies.
///
/// Fields come out in ASCII order, as in real notifies. Nonce and time are inputs: this module
/// never reads the clock or a random source.
///
/// ```swift
/// var builder = PaymentNotifyBuilder(merchant: merchant, outTradeNo: "o1", transactionID: "4200…",
///                                    totalFee: 100, timeEnd: paidAt, nonce: nonce)
/// builder.attach = "cart=42"
/// let body = try FlatXML.encode(builder.fields(signedWith: signer, signType: .hmacSHA256))
/// ```
public struct PaymentNotifyBuilder: Sendable, Hashable {
    /// What `result_code` says.
    public enum ResultCode: Sendable, Hashable {
        case success
        case fail(errCode: String, errCodeDescription: String)
    }

    public var merchant: MerchantIdentity
    public var outTradeNo: String
    public var transactionID: String
    /// `total_fee` in fen.
    public var totalFee: Int
    /// `cash_fee` in fen; defaults to `totalFee` (no coupon).
    public var cashFee: Int
    public var feeType: String = "CNY"
    /// Written as `time_end` in Beijing time.
    public var timeEnd: Date
    public var nonce: String
    public var openid: String = "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"
    public var bankType: String = "CFT"
    public var tradeType: String = "APP"
    public var isSubscribe: String = "N"
    public var attach: String?
    public var result: ResultCode = .success
    /// Fields WeChat may add (coupons, `sub_*`, future fields); they are signed like the rest.
    public var extraFields: Fields = Fields()

    /// - Parameters:
    ///   - merchant: the AppID and merchant number the notify names.
    ///   - outTradeNo: our order number.
    ///   - transactionID: WeChat's order number.
    ///   - totalFee: the amount in fen; `cashFee` starts equal to it.
    ///   - timeEnd: when the payment completed.
    ///   - nonce: `nonce_str`, at most 32 characters.
    public init(
        merchant: MerchantIdentity, outTradeNo: String, transactionID: String, totalFee: Int,
        timeEnd: Date, nonce: String
    ) {
        self.merchant = merchant
        self.outTradeNo = outTradeNo
        self.transactionID = transactionID
        self.totalFee = totalFee
        self.cashFee = totalFee
        self.timeEnd = timeEnd
        self.nonce = nonce
    }

    /// The notify's fields before signing, in ASCII order of name.
    public var unsignedFields: Fields {
        var pairs: [(String, String)] = [
            ("appid", merchant.appID),
            ("bank_type", bankType),
            ("cash_fee", String(cashFee)),
            ("fee_type", feeType),
            ("is_subscribe", isSubscribe),
            ("mch_id", merchant.mchID),
            ("nonce_str", nonce),
            ("openid", openid),
            ("out_trade_no", outTradeNo),
            ("return_code", "SUCCESS"),
            ("time_end", BeijingTime.format(timeEnd)),
            ("total_fee", String(totalFee)),
            ("trade_type", tradeType),
            ("transaction_id", transactionID),
        ]
        if let attach { pairs.append(("attach", attach)) }
        switch result {
        case .success:
            pairs.append(("result_code", "SUCCESS"))
        case .fail(let errCode, let description):
            pairs.append(("result_code", "FAIL"))
            pairs.append(("err_code", errCode))
            pairs.append(("err_code_des", description))
        }
        for field in extraFields where !pairs.contains(where: { $0.0 == field.name }) {
            pairs.append((field.name, field.value))
        }
        pairs.sort { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
        return Fields(pairs.map { Fields.Field(name: $0.0, value: $0.1) })
    }

    /// The notify, signed.
    /// - Parameters:
    ///   - signer: holds the merchant's API key.
    ///   - signType: the order's algorithm.
    ///   - declaresSignType: whether `sign_type` is sent. Real HMAC-SHA256 notifies often omit it
    ///     (WxJava #1585); tests need both forms. An omitted `sign_type` is not signed either.
    public func fields(signedWith signer: Signer, signType: SignType, declaresSignType: Bool = true) -> Fields {
        var elements = unsignedFields.elements.filter { $0.name != "sign_type" && $0.name != "sign" }
        if declaresSignType { elements.append(Fields.Field(name: "sign_type", value: signType.rawValue)) }
        let sign = signer.signature(for: Fields(elements), type: signType)
        elements.append(Fields.Field(name: "sign", value: sign))
        elements.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        return Fields(elements)
    }
}
