// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation

/// An app receipt (StoreKit 1's `Bundle.main.appStoreReceiptURL`), read locally: PKCS #7 signed
/// data whose content is Apple's ASN.1 `SET OF ReceiptAttribute ::= SEQUENCE { type INTEGER,
/// version INTEGER, value OCTET STRING }`; attribute 2 is the bundle id, each attribute 17 one
/// in-app purchase (itself such a set: 1701 quantity, 1702 product_id, 1703 transaction_id,
/// 1704 purchase_date, 1705 original_transaction_id).
///
/// **Nothing here is verified** — not the signature, not a certificate — exactly as Apple's own
/// `ReceiptUtility` does not: the ids read from a receipt are only worth asking the App Store
/// Server API about (Get Transaction Info), whose signed answer is what is believed.
///
/// Hostile input is bounded: at most 384 KiB of DER (512 KiB of base64), parsed by OpenSSL's CMS
/// and ASN.1 decoders (`d2i_CMS_ContentInfo`, `ASN1_get_object`, `d2i_ASN1_INTEGER`), definite
/// lengths only, a fixed shape walked without recursion, at most 10,000 purchases, and ids of at
/// most 64 bytes. Fuzzed by `scripts/fuzz receipt`.
///
/// ```swift
/// let receipt = try AppReceipt(base64: body.receipt)
/// guard receipt.contains(transactionID: reported) else { … not in the receipt … }
/// ```
public struct AppReceipt: Sendable, Hashable {
    /// One in-app purchase record of the receipt.
    public struct Purchase: Sendable, Hashable {
        public var transactionID: String
        public var originalTransactionID: String?
        public var productID: String?
        public var quantity: Int?
        public var purchaseDate: Date?

        public init(transactionID: String, originalTransactionID: String? = nil, productID: String? = nil, quantity: Int? = nil,
                    purchaseDate: Date? = nil) {
            self.transactionID = transactionID
            self.originalTransactionID = originalTransactionID
            self.productID = productID
            self.quantity = quantity
            self.purchaseDate = purchaseDate
        }
    }

    /// Attribute 2, when present.
    public var bundleID: String?
    public var purchases: [Purchase]

    public static let maximumBase64 = 512 * 1024
    public static let maximumDER = 384 * 1024
    public static let maximumPurchases = 10_000
    /// Apple's ids and product ids are far shorter.
    static let maximumText = 256

    // Apple's attribute numbers.
    static let bundleIDType: Int64 = 2
    static let inAppType: Int64 = 17
    static let quantityType: Int64 = 1701
    static let productIDType: Int64 = 1702
    static let transactionIDType: Int64 = 1703
    static let purchaseDateType: Int64 = 1704
    static let originalTransactionIDType: Int64 = 1705

    public init(bundleID: String?, purchases: [Purchase]) {
        self.bundleID = bundleID
        self.purchases = purchases
    }

    /// Whether the receipt holds a purchase with this transaction id (or, for a subscription's
    /// first purchase, this original transaction id).
    public func contains(transactionID: String) -> Bool {
        purchases.contains { $0.transactionID == transactionID || $0.originalTransactionID == transactionID }
    }

    /// The receipt as the app sends it: standard base64 (line breaks allowed, as
    /// `base64EncodedString(options:)` may write them).
    public init(base64: String) throws(AppReceiptError) {
        guard base64.utf8.count <= Self.maximumBase64 else { throw AppReceiptError(.tooLarge) }
        var compact = [UInt8]()
        compact.reserveCapacity(base64.utf8.count)
        for byte in base64.utf8 where byte != 0x0A && byte != 0x0D { compact.append(byte) }
        guard let der = Base64.decode(compact, .standardPadded), !der.isEmpty else { throw AppReceiptError(.notBase64) }
        try self.init(der: der)
    }

    /// The receipt's DER (PKCS #7 ContentInfo).
    public init(der: [UInt8]) throws(AppReceiptError) {
        guard der.count <= Self.maximumDER else { throw AppReceiptError(.tooLarge) }
        let content = try Self.signedContent(der)
        self = try Self.decodePayload(content)
    }

    // MARK: - PKCS #7 / CMS

    /// The encapsulated content of the SignedData in `der`, through OpenSSL's CMS decoder.
    static func signedContent(_ der: [UInt8]) throws(AppReceiptError) -> [UInt8] {
        do {
            return try CMSSignedData.content(of: der)
        } catch {
            throw AppReceiptError(error)
        }
    }

    // MARK: - The ASN.1 payload

    static func decodePayload(_ content: [UInt8]) throws(AppReceiptError) -> AppReceipt {
        let result = content.withUnsafeBytes { buffer -> Result<AppReceipt, AppReceiptError> in
            do throws(AppReceiptError) {
                return .success(try decodePayload(DERReader(buffer)))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private static func decodePayload(_ reader: DERReader) throws(AppReceiptError) -> AppReceipt {
        let buffer = reader.buffer
        var top = try read { () throws(DERError) in try reader.element(in: 0..<buffer.count) }
        var end = buffer.count
        // Receipts made by Xcode's StoreKit testing wrap the set in one more OCTET STRING.
        if top.tag == DER.Tag.octetString && !top.constructed && top.end == end {
            end = top.content.upperBound
            top = try read { () throws(DERError) in try reader.element(in: top.content) }
        }
        guard top.tag == DER.Tag.set, top.constructed, top.end == end else {
            throw AppReceiptError(.malformed, "the receipt payload is not a SET of attributes")
        }
        var bundleID: String?
        var purchases: [Purchase] = []
        for attribute in try read({ () throws(DERError) in try reader.attributes(in: top.content) }) {
            switch attribute.type {
            case bundleIDType:
                bundleID = try read { () throws(DERError) in try reader.text(in: attribute.value) }
            case inAppType:
                guard purchases.count < maximumPurchases else { throw AppReceiptError(.tooManyPurchases) }
                if let purchase = try read({ () throws(DERError) in try purchase(in: attribute.value, reader: reader) }) {
                    purchases.append(purchase)
                }
            default:
                continue
            }
        }
        return AppReceipt(bundleID: bundleID, purchases: purchases)
    }

    /// One in-app purchase record; nil when it carries no transaction id (nothing to ask about).
    private static func purchase(in range: Range<Int>, reader: DERReader) throws(DERError) -> Purchase? {
        let set = try reader.element(in: range)
        guard set.tag == DER.Tag.set, set.constructed, set.end == range.upperBound else {
            throw DERError("an in-app purchase record is not a SET of attributes")
        }
        var transactionID: String?
        var purchase = Purchase(transactionID: "")
        for attribute in try reader.attributes(in: set.content) {
            switch attribute.type {
            case transactionIDType: transactionID = try reader.text(in: attribute.value)
            case originalTransactionIDType: purchase.originalTransactionID = try reader.text(in: attribute.value)
            case productIDType: purchase.productID = try reader.text(in: attribute.value)
            case quantityType: purchase.quantity = Int(exactly: try reader.integer(in: attribute.value))
            case purchaseDateType: purchase.purchaseDate = try reader.text(in: attribute.value).flatMap(Self.date)
            default: continue
            }
        }
        guard let transactionID, !transactionID.isEmpty else { return nil }
        purchase.transactionID = transactionID
        return purchase
    }

    /// DER the reader refuses is a malformed receipt, for the reader's reason.
    private static func read<T>(_ body: () throws(DERError) -> T) throws(AppReceiptError) -> T {
        do {
            return try body()
        } catch {
            throw AppReceiptError(error)
        }
    }

    /// Apple writes dates as RFC 3339 in an IA5String (`2026-12-04T09:00:00Z`).
    static func date(_ text: String) -> Date? {
        try? Date(text, strategy: .iso8601)
    }
}

/// Why a receipt could not be read. The description never holds the receipt.
public struct AppReceiptError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case tooLarge = "too_large"
        case notBase64 = "not_base64"
        case malformed
        case tooManyPurchases = "too_many_purchases"
    }

    public let kind: Kind
    let reason: StaticString?

    init(_ kind: Kind, _ reason: StaticString? = nil) {
        self.kind = kind
        self.reason = reason
    }

    /// DER or PKCS #7 the reader refused: malformed, for its reason.
    init(_ error: DERError) {
        self.init(.malformed, error.reason)
    }

    public static func == (lhs: AppReceiptError, rhs: AppReceiptError) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    public var description: String {
        switch kind {
        case .tooLarge: "app receipt: larger than 512 KiB of base64"
        case .notBase64: "app receipt: not standard base64"
        case .malformed: "app receipt: " + (reason.map { "\($0)" } ?? "malformed")
        case .tooManyPurchases: "app receipt: more than 10,000 in-app purchase records"
        }
    }
}

/// Apple's receipt attributes, read from DER.
extension DERReader {
    /// A receipt attribute: its `type` and the range of its `value` OCTET STRING's content.
    struct Attribute {
        var type: Int64
        var value: Range<Int>
    }

    /// The `ReceiptAttribute` sequences of a SET's content.
    func attributes(in range: Range<Int>) throws(DERError) -> [Attribute] {
        var attributes: [Attribute] = []
        for sequence in try children(in: range) {
            guard sequence.tag == DER.Tag.sequence, sequence.constructed else {
                throw DERError("a receipt attribute is not a SEQUENCE")
            }
            let fields = try children(in: sequence.content)
            guard fields.count == 3, fields[0].tag == DER.Tag.integer, fields[1].tag == DER.Tag.integer,
                  fields[2].tag == DER.Tag.octetString, !fields[2].constructed
            else { throw DERError("a receipt attribute is not (INTEGER, INTEGER, OCTET STRING)") }
            attributes.append(Attribute(type: try integer(fields[0]), value: fields[2].content))
        }
        return attributes
    }

    /// The INTEGER a value OCTET STRING holds.
    func integer(in range: Range<Int>) throws(DERError) -> Int64 {
        let inner = try element(in: range)
        guard inner.end == range.upperBound else { throw DERError("trailing bytes after a value") }
        return try integer(inner)
    }

    /// The UTF8String or IA5String a value OCTET STRING holds; nil for another type (Apple keeps
    /// opaque values in some attributes).
    func text(in range: Range<Int>) throws(DERError) -> String? {
        let inner = try element(in: range)
        guard inner.end == range.upperBound else { throw DERError("trailing bytes after a value") }
        guard !inner.constructed, inner.tag == DER.Tag.utf8String || inner.tag == DER.Tag.ia5String else { return nil }
        guard inner.content.count <= AppReceipt.maximumText else { throw DERError("a text value longer than 256 bytes") }
        guard let text = String(validating: bytes(inner), as: UTF8.self) else { throw DERError("a text value that is not UTF-8") }
        return text
    }
}
