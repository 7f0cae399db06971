// SPDX-License-Identifier: Apache-2.0

/// The answer to a successful unifiedorder: the `prepay_id` (valid two hours) the app pays with.
public struct UnifiedOrderResponse: WeChatPayResponse, Sendable, Hashable {
    public var tradeType: TradeType
    /// What the app passes to the WeChat SDK (after the gateway signs the APP parameters).
    public var prepayID: String
    /// NATIVE only: the QR code content.
    public var codeURL: String?
    /// MWEB only: the H5 payment page.
    public var mwebURL: String?
    public var deviceInfo: String?
    /// Every field received, known or not, in document order.
    public var fields: Fields

    public init(tradeType: TradeType, prepayID: String, codeURL: String? = nil, mwebURL: String? = nil, deviceInfo: String? = nil) {
        self.tradeType = tradeType
        self.prepayID = prepayID
        self.codeURL = codeURL
        self.mwebURL = mwebURL
        self.deviceInfo = deviceInfo
        fields = Fields()
        fields = businessFields()
    }

    public init(verifiedFields: Fields) throws(WeChatPayMessageError) {
        let reader = FieldReader(verifiedFields)
        tradeType = TradeType(rawValue: try reader.required("trade_type"))
        prepayID = try reader.required("prepay_id", .text(maxLength: 64))
        codeURL = try reader.optional("code_url")
        mwebURL = try reader.optional("mweb_url")
        deviceInfo = try reader.optional("device_info")
        fields = verifiedFields
    }

    /// The response's own fields for a server to send (wrap them with ``ResponseEnvelope``).
    public func businessFields() -> Fields {
        var writer = FieldWriter()
        writer.add("device_info", deviceInfo)
        writer.add("trade_type", tradeType.rawValue)
        writer.add("prepay_id", prepayID)
        writer.add("code_url", codeURL)
        writer.add("mweb_url", mwebURL)
        return writer.fields
    }
}
