// SPDX-License-Identifier: Apache-2.0
import AppStore
import COpenSSL
import Foundation

/// App receipts as Apple makes them: PKCS #7 signed data (made with OpenSSL's CMS, signed by the
/// simulator's leaf, with the intermediate and root beside it) whose content is the ASN.1 set of
/// receipt attributes in Apple's field numbers — the bundle id (2), the app version (3), the
/// creation date (12), the original app version (19) and one in-app purchase record (17) per
/// purchase: 1701 quantity, 1702 product_id, 1703 transaction_id, 1704 purchase_date,
/// 1705 original_transaction_id, 1706 original_purchase_date, 1708 expires_date, 1711
/// web_order_line_item_id, 1712 cancellation_date. Apple's `ReceiptUtility` and the gateway's
/// `AppReceipt` read them.
public struct ReceiptIssuer: Sendable {
    public let pki: SimulatorPKI
    public let bundleID: String

    public init(pki: SimulatorPKI, bundleID: String) {
        self.pki = pki
        self.bundleID = bundleID
    }

    /// The receipt of an account holding `transactions`, made at `now`, as standard base64.
    public func receipt(for transactions: [AppStoreTransaction], now: Date) -> String {
        var attributes = [
            Self.attribute(2, DER.utf8String(bundleID)), Self.attribute(3, DER.utf8String("1")),
            Self.attribute(12, DER.ia5String(Self.rfc3339(now))), Self.attribute(19, DER.utf8String("1")),
        ]
        for transaction in transactions {
            var fields = [
                Self.attribute(1701, DER.integer(Int64(transaction.quantity))),
                Self.attribute(1702, DER.utf8String(transaction.productID)),
                Self.attribute(1703, DER.utf8String(transaction.transactionID)),
                Self.attribute(1704, DER.ia5String(Self.rfc3339(transaction.purchaseDate))),
                Self.attribute(1705, DER.utf8String(transaction.originalTransactionID)),
                Self.attribute(1706, DER.ia5String(Self.rfc3339(transaction.originalPurchaseDate ?? transaction.purchaseDate))),
            ]
            if let expires = transaction.expiresDate { fields.append(Self.attribute(1708, DER.ia5String(Self.rfc3339(expires)))) }
            if let line = transaction.webOrderLineItemID.flatMap({ Int64($0) }) { fields.append(Self.attribute(1711, DER.integer(line))) }
            if let revoked = transaction.revocationDate { fields.append(Self.attribute(1712, DER.ia5String(Self.rfc3339(revoked)))) }
            attributes.append(Self.attribute(17, DER.set(fields)))
        }
        return Base64.encode(sign(DER.set(attributes)), .standardPadded)
    }

    /// `content` as PKCS #7 SignedData with the content attached (DER): any payload, for tests
    /// that need a receipt Apple would never make.
    public func sign(_ content: [UInt8]) -> [UInt8] {
        func x509(_ certificate: Certificate) -> OpaquePointer {
            guard let x509 = certificate.der.withUnsafeBufferPointer({ wxpay_x509_from_der($0.baseAddress!, $0.count) }) else {
                preconditionFailure("the simulator's own certificate does not decode")
            }
            return x509
        }
        let leaf = x509(pki.leaf)
        let intermediate = x509(pki.intermediate)
        let root = x509(pki.root)
        defer { X509_free(leaf); X509_free(intermediate); X509_free(root) }
        return content.withUnsafeBytes { bytes -> [UInt8] in
            guard let data = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)),
                  let cms = CMS_sign(leaf, pki.leafPKIKey.pointer, nil, data, UInt32(CMS_BINARY))
            else { preconditionFailure("OpenSSL could not sign a receipt") }
            defer { CMS_ContentInfo_free(cms); BIO_free(data) }
            CMS_add1_cert(cms, intermediate)
            CMS_add1_cert(cms, root)
            var out: UnsafeMutablePointer<UInt8>?
            let length = i2d_CMS_ContentInfo(cms, &out)
            defer { wxpay_openssl_free(out) }
            guard length > 0, let out else { preconditionFailure("OpenSSL could not encode a receipt") }
            return Array(UnsafeBufferPointer(start: out, count: Int(length)))
        }
    }

    /// `ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
    static func attribute(_ type: Int64, _ value: [UInt8]) -> [UInt8] {
        DER.sequence([DER.integer(type), DER.integer(1), DER.octetString(value)])
    }

    /// `2026-12-04T09:00:00Z`, as Apple writes receipt dates.
    static func rfc3339(_ date: Date) -> String {
        Date.ISO8601FormatStyle().format(date)
    }
}

/// The few DER encodings a receipt needs (definite lengths, SET OF sorted as DER wants).
enum DER {
    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var bytes = [tag]
        if content.count < 0x80 {
            bytes.append(UInt8(content.count))
        } else {
            var length = content.count
            var digits: [UInt8] = []
            while length > 0 {
                digits.insert(UInt8(length & 0xFF), at: 0)
                length >>= 8
            }
            bytes.append(0x80 | UInt8(digits.count))
            bytes += digits
        }
        return bytes + content
    }

    static func integer(_ value: Int64) -> [UInt8] {
        var bytes = withUnsafeBytes(of: value.bigEndian) { Array($0) }
        // The shortest two's complement form.
        while bytes.count > 1 && ((bytes[0] == 0 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xFF && bytes[1] & 0x80 != 0)) {
            bytes.removeFirst()
        }
        return element(0x02, bytes)
    }

    static func octetString(_ content: [UInt8]) -> [UInt8] { element(0x04, content) }
    static func utf8String(_ text: String) -> [UInt8] { element(0x0C, Array(text.utf8)) }
    static func ia5String(_ text: String) -> [UInt8] { element(0x16, Array(text.utf8)) }
    static func sequence(_ elements: [[UInt8]]) -> [UInt8] { element(0x30, elements.flatMap { $0 }) }
    static func set(_ elements: [[UInt8]]) -> [UInt8] {
        element(0x31, elements.sorted { $0.lexicographicallyPrecedes($1) }.flatMap { $0 })
    }
}
