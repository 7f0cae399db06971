// SPDX-License-Identifier: Apache-2.0
import AppStore
import Crypto
import Foundation

/// App receipts as Apple makes them: PKCS #7 signed data (made with Crypto's `CMSSignedData`,
/// signed by the simulator's leaf, with the intermediate and root beside it) whose content is the ASN.1 set of
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
        CMSSignedData.sign(content, signer: pki.leaf, key: pki.leafPrivateKey, certificates: [pki.intermediate, pki.root])
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
