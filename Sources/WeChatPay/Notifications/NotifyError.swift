// SPDX-License-Identifier: Apache-2.0

/// Why a payment or refund notification was refused.
///
/// `shortDescription` is a stable label without data (`missing_sign`, `bad_sign`, `wrong_appid`, …)
/// for metrics and the support timeline. Field names in labels and descriptions come from this
/// module's own string literals, never from the document, so labels stay a bounded set and no
/// description echoes attacker input. Received values (signatures, amounts, app ids) never appear.
///
/// ```swift
/// do { … } catch let error as NotifyError {
///     rejected.labelled(error.shortDescription).increment()   // a counter family by reason
/// }
/// ```
public struct NotifyError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    private enum Code: Sendable, Hashable {
        case malformedXML(FlatXMLError)
        case returnFail
        case signature(SignatureError)
        case wrongAppID
        case wrongMchID
        case missingField(String)
        case invalidField(String)
        case wrongFeeType
        case reqInfoNotBase64
        case reqInfoUndecryptable
    }

    private let code: Code

    private init(_ code: Code) { self.code = code }

    /// The body is not a document the strict XML codec accepts (XXE attempts land here).
    public static func malformedXML(_ underlying: FlatXMLError) -> NotifyError { NotifyError(.malformedXML(underlying)) }
    /// `return_code` is not SUCCESS: a protocol-level failure, never a payment.
    public static let returnFail = NotifyError(.returnFail)
    /// The signature check failed; `underlying` says how (missing, wrong, downgraded algorithm).
    public static func signature(_ underlying: SignatureError) -> NotifyError { NotifyError(.signature(underlying)) }
    /// No `sign` or an empty one (WxJava #828: forged notifies without a signature).
    public static let missingSign = signature(.missingSignature)
    /// The signature does not match the document under our key.
    public static let badSign = signature(.mismatch)
    /// `appid` is not ours.
    public static let wrongAppID = NotifyError(.wrongAppID)
    /// `mch_id` is not ours.
    public static let wrongMchID = NotifyError(.wrongMchID)
    /// A field the notification must carry is absent or empty.
    public static func missingField(_ name: StaticString) -> NotifyError { NotifyError(.missingField(name.description)) }
    /// A field is present but not in its documented form (an amount that is not a whole number of
    /// fen, an impossible time, an unknown `result_code` or `refund_status`).
    public static func invalidField(_ name: StaticString) -> NotifyError { NotifyError(.invalidField(name.description)) }
    /// `fee_type` is present and not CNY.
    public static let wrongFeeType = NotifyError(.wrongFeeType)
    /// Refund notify: `req_info` is not Base64.
    public static let reqInfoNotBase64 = NotifyError(.reqInfoNotBase64)
    /// Refund notify: `req_info` does not decrypt under our key to a `<root>` document. Wrong key,
    /// tampering, truncation and a payment notify posted to the refund URL all look alike here, on
    /// purpose: one answer for every failure leaves no padding oracle.
    public static let reqInfoUndecryptable = NotifyError(.reqInfoUndecryptable)

    /// The signature failure, when that is why the notification was refused.
    public var signatureError: SignatureError? {
        if case .signature(let error) = code { return error }
        return nil
    }

    /// A stable label without data, for metrics and timelines.
    public var shortDescription: String {
        switch code {
        case .malformedXML: "malformed_xml"
        case .returnFail: "return_fail"
        case .signature(let error): error.shortDescription
        case .wrongAppID: "wrong_appid"
        case .wrongMchID: "wrong_mch_id"
        case .missingField(let name): "missing_\(name)"
        case .invalidField(let name): "bad_\(name)"
        case .wrongFeeType: "wrong_fee_type"
        case .reqInfoNotBase64: "req_info_not_base64"
        case .reqInfoUndecryptable: "req_info_undecryptable"
        }
    }

    public var description: String {
        switch code {
        case .malformedXML: "notification is not a well-formed flat XML document"
        case .returnFail: "return_code is not SUCCESS"
        case .signature(let error): "notification signature refused: \(error)"
        case .wrongAppID: "appid is not this merchant's"
        case .wrongMchID: "mch_id is not this merchant's"
        case .missingField(let name): "required field \(name) is missing or empty"
        case .invalidField(let name): "field \(name) is not in its documented form"
        case .wrongFeeType: "fee_type is not CNY"
        case .reqInfoNotBase64: "req_info is not Base64"
        case .reqInfoUndecryptable: "req_info does not decrypt with this merchant's key"
        }
    }

    /// Adds the XML codec's reason for `malformed_xml`; still no document content.
    public var debugDescription: String {
        if case .malformedXML(let underlying) = code { return "\(description) (\(underlying))" }
        return description
    }
}
