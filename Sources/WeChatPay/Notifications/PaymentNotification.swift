// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A verified payment result notify (`result_code` SUCCESS) that WeChat posted to our notify URL.
///
/// Verification takes two steps so the gateway can look the order up in between (it needs the
/// order's signature algorithm, and an unknown order is answered without further work):
///
/// ```swift
/// let fields = try PaymentNotification.decode(body)
/// guard let outTradeNo = PaymentNotification.claimedOutTradeNo(in: fields),
///       let order = try await store.order(outTradeNo) else { return NotifyReply.fail("unknown order") }
/// switch try PaymentNotification.verify(fields, merchant: merchant, signer: signer,
///                                       expectedSignType: order.signType) {
/// case .paid(let payment) where payment.matches(amount: order.totalFee): try await settle(payment)
/// case .paid: flagAmountMismatch()       // a leaked key, or a bug: never fulfil
/// case .failed(let failure): record(failure)
/// }
/// ```
public struct PaymentNotification: Sendable, Hashable {
    /// `out_trade_no`: our order number.
    public let outTradeNo: String
    /// `transaction_id`: WeChat's order number, to store with the payment.
    public let transactionID: String
    /// `total_fee`: the order amount in fen. Compare it with the stored order (`matches(amount:)`).
    public let totalFee: Int
    /// `cash_fee`: what the user paid in cash, in fen (less than `totalFee` when coupons applied).
    public let cashFee: Int?
    /// `fee_type`; always `CNY` (verification refuses anything else; absent means CNY).
    public let feeType: String
    /// `time_end` as received: `yyyyMMddHHmmss`, Beijing time.
    public let timeEnd: String
    /// `time_end` as an instant (UTC+8, no daylight saving).
    public let timeEndDate: Date
    /// `openid`: the payer within our AppID.
    public let openid: String?
    /// `bank_type`, e.g. `CFT` (change balance) or a bank code.
    public let bankType: String?
    /// `trade_type`, `APP` for this gateway.
    public let tradeType: String?
    /// `attach`: the merchant data sent with unifiedorder, echoed back.
    public let attach: String?
    /// The algorithm the signature was verified with.
    public let signType: SignType
    /// Every received field, known or not, exactly as signed.
    public let fields: Fields

    /// Parses a notify body with the strict XML codec, for callers that want one error type.
    /// - Throws: `NotifyError.malformedXML` wrapping the codec's reason.
    public static func decode(_ body: some Collection<UInt8>) throws(NotifyError) -> Fields {
        do {
            return try FlatXML.decode(body)
        } catch {
            throw .malformedXML(error)
        }
    }

    /// The `out_trade_no` the document claims, before any verification, for looking up the order.
    ///
    /// Nil unless it has the documented shape (1–32 characters of `[0-9A-Za-z_-|*@]`), so a hostile
    /// value never reaches a database query or a log line. Nothing here is authenticated yet.
    public static func claimedOutTradeNo(in fields: Fields) -> String? {
        guard let value = fields.nonEmpty("out_trade_no"), value.utf8.count <= 32,
              value.utf8.allSatisfy(MerchantNumber.allows)
        else { return nil }
        return value
    }

    /// Verifies a decoded payment notify and reads its typed fields.
    ///
    /// In order: `return_code` must be SUCCESS; `sign` must be present and valid under `signer`'s key
    /// with `expectedSignType` (a different declared `sign_type` is refused, a missing one is
    /// verified with `expectedSignType`); `appid` and `mch_id` must be `merchant`'s; then
    /// `result_code` decides between a payment and a failure. A payment must carry
    /// `out_trade_no`, `transaction_id`, a whole positive `total_fee`, a valid `time_end`, and
    /// `fee_type` CNY if present.
    ///
    /// The amount is not compared here: the gateway holds the order; use `matches(amount:)`.
    /// - Parameters:
    ///   - fields: the decoded document, every field kept (they all take part in the signature).
    ///   - merchant: our AppID and merchant number.
    ///   - signer: holds our API key.
    ///   - expectedSignType: the algorithm the order was created with.
    /// - Returns: `.paid` or `.failed`; a failure is authentic but is not a payment.
    public static func verify(
        _ fields: Fields, merchant: MerchantIdentity, signer: Signer, expectedSignType: SignType
    ) throws(NotifyError) -> PaymentNotifyOutcome {
        guard fields["return_code"] == "SUCCESS" else { throw .returnFail }
        do {
            try signer.verify(fields, expected: expectedSignType)
        } catch {
            throw .signature(error)
        }
        guard fields["appid"] == merchant.appID else { throw .wrongAppID }
        guard fields["mch_id"] == merchant.mchID else { throw .wrongMchID }

        switch fields["result_code"] {
        case "SUCCESS":
            return .paid(try PaymentNotification(verified: fields, signType: expectedSignType))
        case "FAIL":
            guard let outTradeNo = fields.nonEmpty("out_trade_no") else { throw .missingField("out_trade_no") }
            return .failed(FailedPaymentNotification(
                outTradeNo: outTradeNo, errCode: fields.nonEmpty("err_code"),
                errCodeDescription: fields.nonEmpty("err_code_des"), fields: fields))
        case nil, "":
            throw .missingField("result_code")
        default:
            throw .invalidField("result_code")
        }
    }

    /// Reads the typed fields of a document whose signature and merchant were already checked.
    private init(verified fields: Fields, signType: SignType) throws(NotifyError) {
        guard let outTradeNo = fields.nonEmpty("out_trade_no") else { throw .missingField("out_trade_no") }
        guard let transactionID = fields.nonEmpty("transaction_id") else { throw .missingField("transaction_id") }
        guard let totalFeeText = fields.nonEmpty("total_fee") else { throw .missingField("total_fee") }
        guard let totalFee = NotifyAmount.fen(totalFeeText), totalFee > 0 else { throw .invalidField("total_fee") }
        var cashFee: Int?
        if let text = fields.nonEmpty("cash_fee") {
            guard let value = NotifyAmount.fen(text) else { throw .invalidField("cash_fee") }
            cashFee = value
        }
        if let feeType = fields.nonEmpty("fee_type"), feeType != "CNY" { throw .wrongFeeType }
        guard let timeEnd = fields.nonEmpty("time_end") else { throw .missingField("time_end") }
        guard let timeEndDate = BeijingTime.parse( timeEnd) else { throw .invalidField("time_end") }

        self.outTradeNo = outTradeNo
        self.transactionID = transactionID
        self.totalFee = totalFee
        self.cashFee = cashFee
        self.feeType = "CNY"
        self.timeEnd = timeEnd
        self.timeEndDate = timeEndDate
        self.openid = fields.nonEmpty("openid")
        self.bankType = fields.nonEmpty("bank_type")
        self.tradeType = fields.nonEmpty("trade_type")
        self.attach = fields.nonEmpty("attach")
        self.signType = signType
        self.fields = fields
    }

    /// Whether this payment is for exactly `amount` fen in CNY: the check that stops a notify signed
    /// with a leaked key (or replayed from a cheaper order) from settling a dearer one.
    public func matches(amount: Int) -> Bool {
        totalFee == amount && feeType == "CNY"
    }
}

/// An authentic payment notify whose `result_code` is FAIL: WeChat says the payment did not succeed.
/// Not a payment; record it on the order's timeline and keep the order open.
public struct FailedPaymentNotification: Sendable, Hashable {
    /// `out_trade_no`: our order number.
    public let outTradeNo: String
    /// `err_code`, when given.
    public let errCode: String?
    /// `err_code_des`, when given (WeChat's text; show it to staff, not to customers).
    public let errCodeDescription: String?
    /// Every received field.
    public let fields: Fields
}

/// What a verified payment notify says.
public enum PaymentNotifyOutcome: Sendable, Hashable {
    /// `result_code` SUCCESS: a payment, still to be compared with the stored amount.
    case paid(PaymentNotification)
    /// `result_code` FAIL: authentic, but not a payment.
    case failed(FailedPaymentNotification)

    /// The order the notify is about.
    public var outTradeNo: String {
        switch self {
        case .paid(let payment): payment.outTradeNo
        case .failed(let failure): failure.outTradeNo
        }
    }

    /// The payment, when this is one.
    public var payment: PaymentNotification? {
        if case .paid(let payment) = self { return payment }
        return nil
    }
}

/// Amounts in notifications are whole fen written as plain decimal digits.
enum NotifyAmount {
    /// The value of a plain run of 1–15 ASCII digits without a leading zero (except "0" itself);
    /// nil for signs, spaces, decimals, exponents or anything else. 15 digits bound the value far
    /// beyond any real amount and far below `Int.max`.
    static func fen(_ text: String) -> Int? {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= 15 else { return nil }
        if bytes.count > 1, bytes.first == UInt8(ascii: "0") { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}
