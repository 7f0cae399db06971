// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import Testing

/// App receipts read locally (PKCS #7 through OpenSSL's CMS decoder, the ASN.1 inside through its
/// ASN.1 decoder): Apple's shape is read, anything else is refused quickly with a short reason.
struct AppReceiptTests {
    static let issuer = ReceiptIssuer(pki: SimulatorPKI(), bundleID: "com.example.courses")

    static func transaction(_ id: String, original: String? = nil, product: String = "course.1") -> AppStoreTransaction {
        AppStoreTransaction(transactionID: id, originalTransactionID: original ?? id, bundleID: "com.example.courses",
                            productID: product, type: .nonConsumable, quantity: 2, environment: .production,
                            purchaseDate: Date(timeIntervalSince1970: 1_764_460_800), signedDate: Date())
    }

    /// DER tag-length-value with a short length.
    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        precondition(content.count < 128)
        return [tag, UInt8(content.count)] + content
    }

    /// A `ReceiptAttribute` of `type` (below 32,768).
    static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
        let integer: [UInt8] = type < 128 ? [UInt8(type)] : [UInt8(type >> 8), UInt8(type & 0xFF)]
        return tlv(0x30, tlv(0x02, integer) + tlv(0x02, [1]) + tlv(0x04, value))
    }

    @Test func everyPurchaseOfAnIssuedReceiptIsReadWithTheBundleId() throws {
        let receipt = try AppReceipt(base64: Self.issuer.receipt(
            for: [Self.transaction("2000000000000001"), Self.transaction("2000000000000002", original: "2000000000000001",
                                                                          product: "vip.monthly")],
            now: Date()))
        #expect(receipt.bundleID == "com.example.courses")
        #expect(receipt.purchases.map(\.transactionID).sorted() == ["2000000000000001", "2000000000000002"])
        let renewal = try #require(receipt.purchases.first { $0.transactionID == "2000000000000002" })
        #expect(renewal.originalTransactionID == "2000000000000001")
        #expect(renewal.productID == "vip.monthly")
        #expect(renewal.quantity == 2)
        #expect(renewal.purchaseDate == Date(timeIntervalSince1970: 1_764_460_800))
        #expect(receipt.contains(transactionID: "2000000000000002"))
        #expect(!receipt.contains(transactionID: "2000000000000003"))
        // Base64 with line breaks, as Data.base64EncodedString(options: .lineLength64Characters) writes it.
        let der = try #require(Data(base64Encoded: Self.issuer.receipt(for: [Self.transaction("2000000000000004")], now: Date())))
        let wrapped = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithCarriageReturn, .endLineWithLineFeed])
        #expect(try AppReceipt(base64: wrapped).purchases.map(\.transactionID) == ["2000000000000004"])
    }

    @Test func aReceiptWithoutPurchasesAndAnXcodeReceiptWrappedInAnOctetStringAreRead() throws {
        #expect(try AppReceipt(base64: Self.issuer.receipt(for: [], now: Date())).purchases.isEmpty)
        let inApp = Self.tlv(0x31, Self.attribute(1703, Self.tlv(0x0C, Array("2000000000000009".utf8))))
        let payload = Self.tlv(0x31, Self.attribute(17, inApp))
        let nested = try AppReceipt(der: Self.issuer.sign(Self.tlv(0x04, payload)))
        #expect(nested.purchases.map(\.transactionID) == ["2000000000000009"])
        #expect(try AppReceipt(der: Self.issuer.sign(payload)).purchases.map(\.transactionID) == ["2000000000000009"])
    }

    @Test func hostileReceiptsAreRefusedWithAShortReasonThatNeverHoldsTheInput() throws {
        let valid = try #require(Data(base64Encoded: Self.issuer.receipt(for: [Self.transaction("2000000000000001")], now: Date())))
        var cases: [(String, () throws(AppReceiptError) -> AppReceipt)] = [
            ("empty", { () throws(AppReceiptError) in try AppReceipt(base64: "") }),
            ("not base64", { () throws(AppReceiptError) in try AppReceipt(base64: "not*base64!") }),
            ("too large", { () throws(AppReceiptError) in try AppReceipt(base64: String(repeating: "A", count: 600 * 1024)) }),
            ("truncated", { () throws(AppReceiptError) in try AppReceipt(der: Array(valid.prefix(valid.count / 2))) }),
            ("trailing", { () throws(AppReceiptError) in try AppReceipt(der: Array(valid) + [0]) }),
            ("a certificate", { () throws(AppReceiptError) in try AppReceipt(der: Self.issuer.pki.leaf.der) }),
            ("not a set", { () throws(AppReceiptError) in try AppReceipt(der: Self.issuer.sign(Self.tlv(0x30, []))) }),
            ("an attribute of two fields", { () throws(AppReceiptError) in
                try AppReceipt(der: Self.issuer.sign(Self.tlv(0x31, Self.tlv(0x30, Self.tlv(0x02, [2]) + Self.tlv(0x02, [1]))))) }),
            ("indefinite length", { () throws(AppReceiptError) in
                try AppReceipt(der: Self.issuer.sign([0x31, 0x80, 0x00, 0x00])) }),
            ("a length past the end", { () throws(AppReceiptError) in
                try AppReceipt(der: Self.issuer.sign([0x31, 0x7F, 0x30, 0x00])) }),
            ("an in-app record that is not a set", { () throws(AppReceiptError) in
                try AppReceipt(der: Self.issuer.sign(Self.tlv(0x31, Self.attribute(17, Self.tlv(0x0C, [0x41]))))) }),
            ("an id that is not UTF-8", { () throws(AppReceiptError) in
                try AppReceipt(der: Self.issuer.sign(Self.tlv(0x31, Self.attribute(17, Self.tlv(0x31, Self.attribute(1703, Self.tlv(0x0C, [0xFF, 0xFE])))))))
            }),
            ("a huge integer", { () throws(AppReceiptError) in
                try AppReceipt(der: Self.issuer.sign(Self.tlv(0x31, Self.tlv(0x30, Self.tlv(0x02, [0x7F] + [UInt8](repeating: 0xFF, count: 20))
                    + Self.tlv(0x02, [1]) + Self.tlv(0x04, []))))) }),
        ]
        // More purchase records than any receipt holds.
        let record = Self.attribute(17, Self.tlv(0x31, Self.attribute(1703, Self.tlv(0x0C, [0x31]))))
        var many = [UInt8]()
        for _ in 0...AppReceipt.maximumPurchases { many += record }
        let count = many.count
        let set: [UInt8] = [0x31, 0x83, UInt8(count >> 16), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)] + many
        cases.append(("too many purchases", { () throws(AppReceiptError) in try AppReceipt(der: Self.issuer.sign(set)) }))
        for (name, read) in cases {
            do {
                let read = try read()
                Issue.record("\(name) was read: \(read.purchases.count) purchases")
            } catch {
                #expect("\(error)".utf8.count < 100, "\(name)")
                #expect(!"\(error)".contains("2000000000000001"), "\(name)")
            }
        }
    }
}
