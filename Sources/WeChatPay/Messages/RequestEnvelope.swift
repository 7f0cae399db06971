// SPDX-License-Identifier: Apache-2.0

/// The fields every request carries around its business fields: `appid`, `mch_id`, `nonce_str`,
/// `sign_type` and `sign` (`getsignkey`: `mch_id`, `nonce_str` and an MD5 `sign` only).
///
/// The client builds it and calls ``signedFields(business:signer:)``; the simulator reads it back
/// with ``init(fields:api:)`` and verifies the signature with ``signType``.
public struct RequestEnvelope: Sendable, Hashable {
    /// The names the envelope owns. A business field with one of these names is never sent.
    public static let fieldNames: Set<String> = ["appid", "mch_id", "nonce_str", "sign_type", "sign"]

    /// `appid`; nil only for `getsignkey`.
    public var appID: String?
    public var mchID: String
    public var nonceStr: String
    /// The `sign_type` field as sent; nil means absent.
    public var declaredSignType: SignType?

    /// The algorithm the request is signed with: the declared one, MD5 when none is declared.
    public var signType: SignType { declaredSignType ?? .md5 }

    public init(appID: String?, mchID: String, nonceStr: String, declaredSignType: SignType?) {
        self.appID = appID
        self.mchID = mchID
        self.nonceStr = nonceStr
        self.declaredSignType = declaredSignType
    }

    /// Whether `nonce` is a valid `nonce_str`: 1 to 32 ASCII letters and digits (what the official
    /// SDK generates; anything else risks a signature disagreement).
    public static func isValidNonce(_ nonce: String) -> Bool {
        !nonce.isEmpty && FieldFormat.alphanumeric(maxLength: 32).accepts(nonce)
    }

    /// Reads the envelope of a received request (simulator side). The signature itself is not
    /// checked here: verify it with `Signer.verify(_:expected:)` and ``signType``.
    /// - Throws: `LACK_PARAMS` for a missing `appid` (except getsignkey), `mch_id`, `nonce_str` or
    ///   `sign`; `PARAM_ERROR` for a malformed nonce or a `sign_type` that is neither MD5 nor
    ///   HMAC-SHA256 (or not MD5 for getsignkey).
    public init(fields: Fields, api: WeChatPayAPI) throws(WeChatPayMessageError) {
        let reader = FieldReader(fields)
        appID = api.usesAppIDAndSignType ? try reader.required("appid", .text(maxLength: 32)) : nil
        mchID = try reader.required("mch_id", .text(maxLength: 32))
        nonceStr = try reader.required("nonce_str", .alphanumeric(maxLength: 32))
        _ = try reader.required("sign")
        if let declared = fields.nonEmpty("sign_type") {
            guard let type = SignType(rawValue: declared), api.usesAppIDAndSignType || type == .md5 else {
                throw .invalidField("sign_type")
            }
            declaredSignType = type
        } else {
            declaredSignType = nil
        }
    }

    /// The complete request: envelope first, then the business fields (any that collide with an
    /// envelope name are dropped), then `sign` over all of them with ``signType``.
    public func signedFields(business: Fields, signer: Signer) -> Fields {
        var elements: [Fields.Field] = []
        elements.reserveCapacity(business.count + 5)
        if let appID { elements.append(.init(name: "appid", value: appID)) }
        elements.append(.init(name: "mch_id", value: mchID))
        elements.append(.init(name: "nonce_str", value: nonceStr))
        if let declaredSignType { elements.append(.init(name: "sign_type", value: declaredSignType.rawValue)) }
        for field in business where !Self.fieldNames.contains(field.name) && !field.value.isEmpty {
            elements.append(field)
        }
        var fields = Fields(elements)
        fields["sign"] = signer.signature(for: fields, type: signType)
        return fields
    }
}
