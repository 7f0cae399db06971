// SPDX-License-Identifier: Apache-2.0

/// A downloaded bill: the raw bytes, plain text or gzip, exactly as WeChat sent them.
///
/// A bill is neither XML nor signed, so there is nothing to verify; failures ("No Bill Exist",
/// "Bill Creating", …) come back as XML and surface as a thrown `WeChatPayError` instead. Parsing
/// and decompression belong to the bill module.
public struct DownloadBillResponse: WeChatPayResponse, Sendable, Hashable {
    /// The body, unmodified.
    public var body: [UInt8]

    public init(body: [UInt8]) {
        self.body = body
    }

    /// Whether ``body`` is gzip data (by its magic number, whatever was asked for).
    public var isGzip: Bool {
        body.count >= 2 && body[0] == 0x1F && body[1] == 0x8B
    }

    /// Whether a downloadbill answer is a failure document rather than a bill: its first
    /// non-whitespace byte is `<`. Bills start with a column header or the gzip magic number.
    public static func isXMLDocument(_ body: [UInt8]) -> Bool {
        guard let first = body.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else { return false }
        return first == UInt8(ascii: "<")
    }

    public init?(fileBody: [UInt8]) {
        guard !fileBody.isEmpty, !Self.isXMLDocument(fileBody) else { return nil }
        body = fileBody
    }

    /// A bill never arrives as a successful XML document; one that claims to is refused.
    public init(verifiedFields: Fields) throws(WeChatPayMessageError) {
        throw .invalidField("return_code")
    }
}
