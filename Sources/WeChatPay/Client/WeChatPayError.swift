// SPDX-License-Identifier: Apache-2.0

/// Why a WeChat Pay call did not return a result, and what to do about it.
///
/// Every failure of the client pipeline is one of these, in the order the pipeline meets them:
/// the request could not be built, the transport failed, the HTTP status was not 2xx, the body
/// was not a valid document, `return_code` was FAIL (protocol failure), the response signature
/// was missing or wrong, the response named another merchant, `result_code` was FAIL with an
/// `err_code` (business error), the fields could not be decoded, or the answer is about another
/// order than the one asked about.
///
/// Two questions answer what the caller should do: ``advice`` (retry as is, query, settle, use a
/// new `out_trade_no`, fix something) and ``mayHaveTakenEffect`` (whether WeChat may have acted on
/// the request, so that a different request must not replace it).
///
/// ```swift
/// do {
///     let prepay = try await client.send(order)
/// } catch where error.advice == .retrySameParameters {
///     // resend `order` unchanged
/// } catch where error.advice == .treatAsPaid {
///     // settle via orderquery
/// }
/// ```
///
/// Descriptions never contain the key, a signature, or more than a short sanitized excerpt of
/// what WeChat (or an attacker in its place) sent.
public struct WeChatPayError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The failure category, for switching; details are on the error's properties.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case invalidRequest = "invalid_request"
        case transport
        case httpStatus = "http_status"
        case malformedResponse = "malformed_response"
        case protocolFailure = "protocol_failure"
        case badSignature = "bad_signature"
        case merchantMismatch = "merchant_mismatch"
        case invalidResponse = "invalid_response"
        case business
        /// A signed, well-formed answer about another order (or refund) than the request's.
        case answerMismatch = "answer_mismatch"
    }

    private enum Code: Sendable, Hashable {
        case invalidRequest(WeChatPayMessageError)
        case invalidConfiguration(field: String)
        case invalidNonce
        case unencodableRequest(FlatXMLError)
        case transport(TransportError)
        case httpStatus(Int)
        case malformedResponse(FlatXMLError)
        case protocolFailure(returnMessage: String?)
        case signature(SignatureError)
        case merchantMismatch(field: String)
        case invalidResponse(WeChatPayMessageError)
        case business(WeChatPayErrorCode, description: String?)
        case answerMismatch(field: String)
    }

    private let code: Code
    /// The endpoint that was called.
    public let api: WeChatPayAPI

    private init(_ code: Code, api: WeChatPayAPI) {
        self.code = code
        self.api = api
    }

    // MARK: - Constructors

    /// The request breaks a rule of the endpoint; nothing was sent.
    public static func invalidRequest(_ error: WeChatPayMessageError, api: WeChatPayAPI) -> Self {
        Self(.invalidRequest(error), api: api)
    }
    /// The merchant credentials lack `field` (`appid`, `mch_id` or `key`); nothing was sent.
    public static func invalidConfiguration(field: String, api: WeChatPayAPI) -> Self {
        Self(.invalidConfiguration(field: ["appid", "mch_id", "key"].contains(field) ? field : "credentials"), api: api)
    }
    /// The nonce source produced something that is not 1–32 ASCII letters and digits; nothing was sent.
    public static func invalidNonce(api: WeChatPayAPI) -> Self { Self(.invalidNonce, api: api) }
    /// A value cannot be carried by XML 1.0; nothing was sent.
    public static func unencodableRequest(_ error: FlatXMLError, api: WeChatPayAPI) -> Self {
        Self(.unencodableRequest(error), api: api)
    }
    public static func transport(_ error: TransportError, api: WeChatPayAPI) -> Self { Self(.transport(error), api: api) }
    public static func httpStatus(_ status: Int, api: WeChatPayAPI) -> Self { Self(.httpStatus(status), api: api) }
    public static func malformedResponse(_ error: FlatXMLError, api: WeChatPayAPI) -> Self {
        Self(.malformedResponse(error), api: api)
    }
    /// `return_code=FAIL`; `returnMessage` is sanitized and shortened here.
    public static func protocolFailure(returnMessage: String?, api: WeChatPayAPI) -> Self {
        Self(.protocolFailure(returnMessage: returnMessage.map { DisplayText.sanitized($0) }), api: api)
    }
    public static func badSignature(_ error: SignatureError, api: WeChatPayAPI) -> Self { Self(.signature(error), api: api) }
    /// The signed response names another `appid` or `mch_id` than the merchant's.
    public static func merchantMismatch(field: String, api: WeChatPayAPI) -> Self {
        Self(.merchantMismatch(field: field == "appid" ? "appid" : "mch_id"), api: api)
    }
    public static func invalidResponse(_ error: WeChatPayMessageError, api: WeChatPayAPI) -> Self {
        Self(.invalidResponse(error), api: api)
    }
    /// The signed response is about another order or refund than the request asked about: its
    /// `field` (`out_trade_no`, `transaction_id`, `out_refund_no`) differs from the request's.
    public static func answerMismatch(field: String, api: WeChatPayAPI) -> Self {
        Self(.answerMismatch(field: FlatXML.isPlainName(field) && field.utf8.count <= 40 ? field : "<field>"), api: api)
    }
    /// `result_code=FAIL`; `description` (`err_code_des`) is sanitized and shortened here.
    public static func business(_ code: WeChatPayErrorCode, description: String?, api: WeChatPayAPI) -> Self {
        Self(.business(code, description: description.map { DisplayText.sanitized($0) }), api: api)
    }

    // MARK: - What it means

    public var kind: Kind {
        switch code {
        case .invalidRequest, .invalidConfiguration, .invalidNonce, .unencodableRequest: .invalidRequest
        case .transport: .transport
        case .httpStatus: .httpStatus
        case .malformedResponse: .malformedResponse
        case .protocolFailure: .protocolFailure
        case .signature: .badSignature
        case .merchantMismatch: .merchantMismatch
        case .invalidResponse: .invalidResponse
        case .business: .business
        case .answerMismatch: .answerMismatch
        }
    }

    /// What the caller should do.
    ///
    /// | failure | advice |
    /// |---|---|
    /// | invalid request (nothing sent) | fix the request |
    /// | empty appid, mch_id or key (nothing sent) | fix the configuration |
    /// | transport failure, HTTP 5xx | retry with the same parameters |
    /// | HTTP 429 | retry later |
    /// | other HTTP statuses | fix the configuration (certificate, URL) |
    /// | malformed or undecodable body, bad or missing signature | retry with the same parameters: the outcome is unknown and an identical resend is safe |
    /// | merchant mismatch | fix the configuration |
    /// | an answer about another order or refund | retry with the same parameters: what was asked has no answer yet |
    /// | `return_code=FAIL` | by `return_msg`: "No Bill Exist" → does not exist, "Bill Creating" → retry later, system busy → retry; otherwise fix the configuration |
    /// | `result_code=FAIL` | ``WeChatPayErrorCode/advice(for:)`` of the err_code on this endpoint |
    public var advice: WeChatPayAdvice {
        switch code {
        case .invalidRequest, .invalidNonce, .unencodableRequest: return .fixRequest
        case .invalidConfiguration: return .fixConfiguration
        case .transport: return .retrySameParameters
        case .httpStatus(let status):
            if status >= 500 && status < 600 { return .retrySameParameters }
            return status == 429 ? .retryLater : .fixConfiguration
        case .malformedResponse, .invalidResponse, .signature, .answerMismatch: return .retrySameParameters
        case .merchantMismatch: return .fixConfiguration
        case .protocolFailure(let message): return Self.advice(forReturnMessage: message)
        case .business(let errorCode, _): return errorCode.advice(for: api)
        }
    }

    /// Whether WeChat may have acted on the request, so that the order or refund must be treated
    /// as possibly created, paid or refunded until a query says otherwise.
    ///
    /// False only when the request certainly had no effect: it was never sent, the transport knows
    /// it was not delivered, WeChat refused it at the HTTP level (4xx) or the protocol level
    /// (`return_code=FAIL`, except "system busy"), or it answered a documented err_code that
    /// rejects the request.
    public var mayHaveTakenEffect: Bool {
        switch code {
        case .invalidRequest, .invalidConfiguration, .invalidNonce, .unencodableRequest: false
        case .transport(let error): error.mayHaveBeenDelivered
        case .httpStatus(let status): !(400..<500).contains(status)
        case .malformedResponse, .invalidResponse, .signature, .merchantMismatch, .answerMismatch: true
        // WeChat refused to process the request, unless it reports being busy, which is read
        // conservatively: the request may have gone through before the error.
        case .protocolFailure: advice == .retrySameParameters
        case .business(let errorCode, _): errorCode.mayHaveTakenEffect
        }
    }

    /// Whether resending the identical request is the right reaction.
    public var isRetryable: Bool { advice.isRetryable }

    /// The `err_code` of a business error.
    public var errorCode: WeChatPayErrorCode? {
        if case .business(let errorCode, _) = code { return errorCode }
        return nil
    }

    /// `err_code_des` of a business error, sanitized and at most 128 characters.
    public var errorCodeDescription: String? {
        if case .business(_, let description) = code { return description }
        return nil
    }

    /// `return_msg` of a protocol failure, sanitized and at most 128 characters.
    public var returnMessage: String? {
        if case .protocolFailure(let message) = code { return message }
        return nil
    }

    public var transportError: TransportError? {
        if case .transport(let error) = code { return error }
        return nil
    }

    public var httpStatus: Int? {
        if case .httpStatus(let status) = code { return status }
        return nil
    }

    public var signatureError: SignatureError? {
        if case .signature(let error) = code { return error }
        return nil
    }

    /// The XML codec's error for a malformed response or an unencodable request.
    public var xmlError: FlatXMLError? {
        switch code {
        case .malformedResponse(let error), .unencodableRequest(let error): error
        default: nil
        }
    }

    /// The field error of an invalid request or an undecodable response.
    public var messageError: WeChatPayMessageError? {
        switch code {
        case .invalidRequest(let error), .invalidResponse(let error): error
        default: nil
        }
    }

    // MARK: - Descriptions

    /// A stable label without data, for metrics and timelines.
    public var shortDescription: String {
        switch code {
        case .invalidRequest: "invalid_request"
        case .invalidConfiguration: "invalid_configuration"
        case .invalidNonce: "invalid_nonce"
        case .unencodableRequest: "unencodable_request"
        case .transport(let error): "transport_" + error.kind.rawValue
        case .httpStatus: "http_status"
        case .malformedResponse: "malformed_response"
        case .protocolFailure: "protocol_failure"
        case .signature(let error): error.shortDescription
        case .merchantMismatch: "merchant_mismatch"
        case .invalidResponse: "invalid_response"
        case .business: "business_error"
        case .answerMismatch: "answer_mismatch"
        }
    }

    public var description: String {
        "\(api): " + detail + " (advice: \(advice))"
    }

    /// As ``description``, plus `err_code_des` for business errors. Still free of secrets.
    public var debugDescription: String {
        if case .business(_, let description?) = code { return self.description + " — " + description }
        return description
    }

    private var detail: String {
        switch code {
        case .invalidRequest(let error): "request not sent: \(error)"
        case .invalidConfiguration(let field): "request not sent: the merchant credentials have no \(field)"
        case .invalidNonce: "request not sent: the nonce source produced an invalid nonce_str"
        case .unencodableRequest(let error): "request not sent: \(error)"
        case .transport(let error): "\(error)"
        case .httpStatus(let status): "HTTP status \(status)"
        case .malformedResponse(let error): "malformed response: \(error)"
        case .protocolFailure(let message): "return_code FAIL" + (message.map { ": \($0)" } ?? "")
        case .signature(let error): "response signature refused: \(error)"
        case .merchantMismatch(let field): "response names another merchant (\(field))"
        case .invalidResponse(let error): "undecodable response: \(error)"
        case .business(let errorCode, _): "business error \(errorCode)"
        case .answerMismatch(let field): "response is about another \(field) than the request's"
        }
    }

    /// `return_msg` values whose meaning is known. downloadbill answers "No Bill Exist" for a day
    /// without transactions (docs spell it "NO Bill Exist"), "Bill Creating" before about 10:00.
    private static func advice(forReturnMessage message: String?) -> WeChatPayAdvice {
        guard let message else { return .fixConfiguration }
        let lower = message.lowercased()
        if lower.contains("no bill exist") { return .doesNotExist }
        if lower.contains("bill creating") { return .retryLater }
        if lower.contains("systemerror") || message.contains("系统繁忙") || message.contains("系统错误") {
            return .retrySameParameters
        }
        return .fixConfiguration
    }
}
