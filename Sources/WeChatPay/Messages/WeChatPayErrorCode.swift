// SPDX-License-Identifier: Apache-2.0

/// A business `err_code`, with what each documented one means for the caller.
///
/// A struct rather than an enum because WeChat adds codes: an unknown code keeps its raw value and
/// maps to the conservative ``WeChatPayAdvice/query``.
///
/// ```swift
/// switch code.advice(for: .unifiedOrder) {
/// case .retrySameParameters: …
/// case .treatAsPaid: …
/// default: …
/// }
/// ```
public struct WeChatPayErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    // Codes common to every endpoint (the request itself or the configuration is wrong).

    /// System error or timeout inside WeChat.
    public static let systemError = Self(rawValue: "SYSTEMERROR")
    /// The merchant lacks permission for this API.
    public static let noAuth = Self(rawValue: "NOAUTH")
    public static let appIDNotExist = Self(rawValue: "APPID_NOT_EXIST")
    public static let mchIDNotExist = Self(rawValue: "MCHID_NOT_EXIST")
    public static let appIDMchIDNotMatch = Self(rawValue: "APPID_MCHID_NOT_MATCH")
    /// A required parameter is missing.
    public static let lackParams = Self(rawValue: "LACK_PARAMS")
    public static let signError = Self(rawValue: "SIGNERROR")
    public static let xmlFormatError = Self(rawValue: "XML_FORMAT_ERROR")
    public static let requirePostMethod = Self(rawValue: "REQUIRE_POST_METHOD")
    public static let postDataEmpty = Self(rawValue: "POST_DATA_EMPTY")
    public static let notUTF8 = Self(rawValue: "NOT_UTF8")
    /// A parameter has a wrong value.
    public static let paramError = Self(rawValue: "PARAM_ERROR")
    /// Illegal parameters, or a re-entry whose parameters differ from the original request.
    public static let invalidRequest = Self(rawValue: "INVALID_REQUEST")

    // Orders (unifiedorder, orderquery, closeorder).

    public static let orderPaid = Self(rawValue: "ORDERPAID")
    public static let orderClosed = Self(rawValue: "ORDERCLOSED")
    /// The `out_trade_no` was already submitted (with other parameters).
    public static let outTradeNoUsed = Self(rawValue: "OUT_TRADE_NO_USED")
    /// Balance insufficient: the payer's on unifiedorder, the merchant's refundable balance on refund.
    public static let notEnough = Self(rawValue: "NOTENOUGH")
    public static let orderNotExist = Self(rawValue: "ORDERNOTEXIST")
    /// The order's state does not allow the operation (closeorder).
    public static let tradeStateError = Self(rawValue: "TRADE_STATE_ERROR")

    // Refunds (refund, refundquery).

    /// Concurrent requests were rejected; resend the same refund.
    public static let bizErrNeedRetry = Self(rawValue: "BIZERR_NEED_RETRY")
    /// The payment is more than a year old.
    public static let tradeOverdue = Self(rawValue: "TRADE_OVERDUE")
    /// A business error described only in `err_code_des`.
    public static let error = Self(rawValue: "ERROR")
    /// The payer's account is closed or frozen.
    public static let userAccountAbnormal = Self(rawValue: "USER_ACCOUNT_ABNORMAL")
    /// Too many invalid requests; wait a minute.
    public static let invalidReqTooMuch = Self(rawValue: "INVALID_REQ_TOO_MUCH")
    public static let invalidTransactionID = Self(rawValue: "INVALID_TRANSACTIONID")
    /// Rate limit (refunds of orders older than two months).
    public static let frequencyLimited = Self(rawValue: "FREQUENCY_LIMITED")
    public static let refundNotExist = Self(rawValue: "REFUNDNOTEXIST")

    /// Every code documented for the endpoints in ``WeChatPayAPI``.
    public static let documented: [WeChatPayErrorCode] = [
        .systemError, .noAuth, .appIDNotExist, .mchIDNotExist, .appIDMchIDNotMatch, .lackParams, .signError,
        .xmlFormatError, .requirePostMethod, .postDataEmpty, .notUTF8, .paramError, .invalidRequest,
        .orderPaid, .orderClosed, .outTradeNoUsed, .notEnough, .orderNotExist, .tradeStateError,
        .bizErrNeedRetry, .tradeOverdue, .error, .userAccountAbnormal, .invalidReqTooMuch,
        .invalidTransactionID, .frequencyLimited, .refundNotExist,
    ]

    /// Whether this is one of the ``documented`` codes.
    public var isDocumented: Bool { Self.documented.contains(self) }

    /// What to do when `api` answered with this code.
    ///
    /// A few codes mean different things per endpoint: `ORDERCLOSED` asks for a new `out_trade_no`
    /// on unifiedorder but is the goal of closeorder; `NOTENOUGH` is the payer's problem on
    /// unifiedorder and the merchant's balance on refund; `INVALID_REQUEST` on unifiedorder usually
    /// means a re-entry with changed parameters. Pass nil when the endpoint is unknown.
    /// Unknown codes answer ``WeChatPayAdvice/query``.
    public func advice(for api: WeChatPayAPI?) -> WeChatPayAdvice {
        switch self {
        case .systemError, .bizErrNeedRetry: .retrySameParameters
        case .invalidReqTooMuch, .frequencyLimited: .retryLater
        case .orderPaid: .treatAsPaid
        case .orderClosed: api == .closeOrder ? .treatAsClosed : .useNewOutTradeNo
        case .outTradeNoUsed: .useNewOutTradeNo
        case .invalidRequest: api == .unifiedOrder ? .useNewOutTradeNo : .fixRequest
        case .notEnough: api == .refund ? .topUpBalance : .payerAction
        case .orderNotExist, .refundNotExist: .doesNotExist
        case .tradeStateError: .query
        case .tradeOverdue, .userAccountAbnormal: .refundOffline
        case .error: .manualReview
        case .lackParams, .paramError, .invalidTransactionID: .fixRequest
        case .noAuth, .appIDNotExist, .mchIDNotExist, .appIDMchIDNotMatch, .signError, .xmlFormatError,
            .requirePostMethod, .postDataEmpty, .notUTF8:
            .fixConfiguration
        default: .query
        }
    }

    /// ``advice(for:)`` when the endpoint is not known.
    public var advice: WeChatPayAdvice { advice(for: nil) }

    /// Whether the request may still have had its effect when WeChat answered with this code:
    /// true for `SYSTEMERROR` (WeChat itself timed out) and for unknown codes, false for codes
    /// that reject the request.
    public var mayHaveTakenEffect: Bool {
        self == .systemError || !isDocumented
    }

    /// The raw code when it looks like one (`[A-Z0-9_]`, at most 40 characters); otherwise a
    /// placeholder, so hostile input never reaches a log line through the description.
    public var description: String {
        let bytes = rawValue.utf8
        let plain = !bytes.isEmpty && bytes.count <= 40 && bytes.allSatisfy { byte in
            (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "_")
        }
        return plain ? rawValue : "<unrecognized err_code>"
    }
}
