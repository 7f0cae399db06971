// SPDX-License-Identifier: Apache-2.0

/// The sandbox key. It reportedly expires after about three days; fetch it again then.
public struct GetSignKeyResponse: WeChatPayResponse, Sendable, Hashable {
    public var mchID: String?
    /// The key every other sandbox call is signed with (MD5). Never printed.
    public var sandboxSignKey: APIKey
    /// Every field received, known or not, in document order, except `sandbox_signkey`: the key
    /// lives only in ``sandboxSignKey``, so printing the response never prints it.
    public var fields: Fields

    public init(mchID: String?, sandboxSignKey: APIKey) {
        self.mchID = mchID
        self.sandboxSignKey = sandboxSignKey
        fields = Fields()
        fields = businessFields()
        fields["sandbox_signkey"] = nil
    }

    public init(verifiedFields: Fields) throws(WeChatPayMessageError) {
        let reader = FieldReader(verifiedFields)
        mchID = try reader.optional("mch_id")
        sandboxSignKey = APIKey(try reader.required("sandbox_signkey", .text(maxLength: 64)))
        fields = verifiedFields
        fields["sandbox_signkey"] = nil
    }

    /// The fields a server sends (wrap them with ``ResponseEnvelope/unsignedSuccess(_:)``).
    public func businessFields() -> Fields {
        var writer = FieldWriter()
        writer.add("mch_id", mchID)
        writer.add("sandbox_signkey", sandboxSignKey.withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
        return writer.fields
    }
}
