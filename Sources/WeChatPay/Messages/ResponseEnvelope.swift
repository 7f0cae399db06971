// SPDX-License-Identifier: Apache-2.0

/// Builds complete response documents the way WeChat does, for the simulator and for tests: the
/// two result levels (`return_code`, then `result_code`/`err_code`), the merchant echo, a fresh
/// `nonce_str` and the signature.
///
/// ```swift
/// let reply = ResponseEnvelope.success(
///     response.businessFields(), appID: merchant.appID, mchID: merchant.mchID,
///     nonceStr: nonce, signer: Signer(key: merchant.key), signType: request.signType)
/// let body = try FlatXML.encode(reply)
/// ```
public enum ResponseEnvelope {
    /// The names the envelope owns; a typed response's `businessFields()` never contains them.
    public static let fieldNames: Set<String> = [
        "return_code", "return_msg", "appid", "mch_id", "nonce_str", "sign", "sign_type",
        "result_code", "err_code", "err_code_des",
    ]

    /// `return_code=SUCCESS`, `result_code=SUCCESS`, the business fields, signed with `signType`
    /// (WeChat signs a response with the algorithm of the request, and does not send `sign_type`).
    public static func success(
        _ business: Fields, appID: String?, mchID: String, nonceStr: String, signer: Signer, signType: SignType
    ) -> Fields {
        signed(
            header: [.init(name: "result_code", value: "SUCCESS")], business: business,
            appID: appID, mchID: mchID, nonceStr: nonceStr, signer: signer, signType: signType)
    }

    /// `return_code=SUCCESS`, `result_code=FAIL` with `err_code` and `err_code_des`, signed.
    /// - Parameter business: fields WeChat still returns with the failure (often none).
    public static func businessFailure(
        _ code: WeChatPayErrorCode, description: String, business: Fields = Fields(),
        appID: String?, mchID: String, nonceStr: String, signer: Signer, signType: SignType
    ) -> Fields {
        signed(
            header: [
                .init(name: "result_code", value: "FAIL"), .init(name: "err_code", value: code.rawValue),
                .init(name: "err_code_des", value: description),
            ],
            business: business, appID: appID, mchID: mchID, nonceStr: nonceStr, signer: signer, signType: signType)
    }

    /// `return_code=FAIL` with `return_msg`, unsigned, as WeChat answers a request it could not
    /// process at all (bad signature, malformed XML, missing parameters).
    public static func protocolFailure(message: String) -> Fields {
        Fields([.init(name: "return_code", value: "FAIL"), .init(name: "return_msg", value: message)])
    }

    /// `return_code=SUCCESS` without a business level or a signature: the documented shape of a
    /// `getsignkey` answer.
    public static func unsignedSuccess(_ business: Fields) -> Fields {
        var elements: [Fields.Field] = [.init(name: "return_code", value: "SUCCESS"), .init(name: "return_msg", value: "OK")]
        elements.append(contentsOf: business.elements.filter { !fieldNames.contains($0.name) || $0.name == "mch_id" })
        return Fields(elements)
    }

    private static func signed(
        header: [Fields.Field], business: Fields,
        appID: String?, mchID: String, nonceStr: String, signer: Signer, signType: SignType
    ) -> Fields {
        var elements: [Fields.Field] = [.init(name: "return_code", value: "SUCCESS"), .init(name: "return_msg", value: "OK")]
        if let appID { elements.append(.init(name: "appid", value: appID)) }
        elements.append(.init(name: "mch_id", value: mchID))
        elements.append(.init(name: "nonce_str", value: nonceStr))
        elements.append(contentsOf: header)
        elements.append(contentsOf: business.elements.filter { !fieldNames.contains($0.name) && !$0.value.isEmpty })
        var fields = Fields(elements)
        fields["sign"] = signer.signature(for: fields, type: signType)
        return fields
    }
}
