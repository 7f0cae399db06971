// SPDX-License-Identifier: Apache-2.0

/// A typed request to one v2 endpoint, usable in both directions.
///
/// The client turns it into fields with ``businessFields()`` and lets the pipeline add the
/// envelope (`appid`, `mch_id`, `nonce_str`, `sign_type`, `sign`); the simulator turns received
/// fields back into it with ``init(fields:)``, which validates them as WeChat would.
///
/// ```swift
/// let order = UnifiedOrderRequest(body: "Shop-Coffee", outTradeNo: "T20240101001", totalFee: 1200,
///                                 spbillCreateIP: "203.0.113.7", notifyURL: "https://pay.example.com/wechat/notify")
/// let response = try await client.send(order)   // UnifiedOrderResponse
/// ```
public protocol WeChatPayRequest: Sendable, Hashable {
    /// What a successful call returns.
    associatedtype Response: WeChatPayResponse

    /// The endpoint this request goes to.
    static var api: WeChatPayAPI { get }

    /// Decodes the business fields of a received request (envelope fields are ignored).
    /// - Throws: ``WeChatPayMessageError`` naming the first missing (`LACK_PARAMS`) or invalid
    ///   (`PARAM_ERROR`) field.
    init(fields: Fields) throws(WeChatPayMessageError)

    /// The request's own fields, without the envelope, absent and empty values left out.
    func businessFields() -> Fields

    /// The field by which a verified `response` is about something else than this request asked
    /// about (another order's answer, mixed in by a proxy or a confused connection pool), or nil
    /// when it is about the same thing. The pipeline refuses such an answer
    /// (``WeChatPayError/Kind/answerMismatch``). Default: nil (the answer names nothing to compare).
    func mismatchedField(in response: Response) -> String?
}

extension WeChatPayRequest {
    public func mismatchedField(in response: Response) -> String? { nil }
}

extension WeChatPayRequest {
    /// Checks the request against the same rules the simulator applies to a received one; the
    /// client calls it before sending so WeChat never sees a request it would refuse.
    public func validate() throws(WeChatPayMessageError) {
        _ = try Self(fields: businessFields())
    }
}

/// A typed response, decoded by the pipeline after every check on the envelope has passed.
public protocol WeChatPayResponse: Sendable {
    /// Decodes a response whose `return_code` was SUCCESS, whose signature has been verified and
    /// whose `result_code` was SUCCESS. `verifiedFields` holds every received field, known or not.
    init(verifiedFields: Fields) throws(WeChatPayMessageError)

    /// A business failure (`result_code=FAIL`) that this endpoint reports as an outcome rather
    /// than an error, e.g. closeorder's `ORDERPAID`. Nil (the default) makes it a thrown
    /// ``WeChatPayError``.
    static func acceptingBusinessFailure(_ code: WeChatPayErrorCode, verifiedFields: Fields) -> Self?

    /// A successful answer that is a file rather than XML (downloadbill only). Nil (the default)
    /// means the endpoint never answers with a file.
    init?(fileBody: [UInt8])
}

extension WeChatPayResponse {
    public static func acceptingBusinessFailure(_ code: WeChatPayErrorCode, verifiedFields: Fields) -> Self? { nil }

    public init?(fileBody: [UInt8]) { nil }
}
