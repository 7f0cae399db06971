// SPDX-License-Identifier: Apache-2.0
@testable import AppStore
import Foundation
import JSON
import Testing

/// How many a purchase sold, as Apple's evidence says it: an `in_app` entry of verifyReceipt's
/// answer, a signed transaction's payload. A count Apple did not give is unknown, never 1.
struct ReceiptEntryTests {
    @Test("A receipt entry's quantity is a count from 1 to 1,000,000 written in digits, and otherwise unknown (0), absent included: never guessed",
          arguments: [(#""3""#, 3), ("10", 10), (nil, 0), (#""1000000""#, 1_000_000), (#""abc""#, 0), (#""3.5""#, 0),
                      (#"" 3""#, 0), (#""0""#, 0), (#""-1""#, 0), (#""1000001""#, 0), (#""99999999999999999999""#, 0),
                      (#""+3""#, 0), (#""""#, 0)] as [(String?, Int)])
    func theQuantityIsACountOrUnknown(_ written: String?, _ read: Int) throws {
        let quantity = written.map { #","quantity":"# + $0 } ?? ""
        let json = try JSONValue.parse(Array(#"{"transaction_id":"1000000000000001","product_id":"coins","purchase_date_ms":"1700000000000"\#(quantity)}"#.utf8))
        #expect(ReceiptTransaction(json)?.quantity == read)
    }

    @Test("A signed transaction's quantity is 1 to 1,000,000, unknown (0) when the payload has none, and anything else is refused",
          arguments: [("3", 3), ("1000000", 1_000_000), (nil, 0), ("null", 0)] as [(String?, Int)])
    func aSignedQuantityIsACountOrUnknown(_ written: String?, _ read: Int) throws {
        #expect(try AppStoreTransaction(payload: Self.payload(written)).quantity == read)
    }

    @Test(arguments: ["0", "-1", "1000001", "\"3\"", "3.5"])
    func aSignedQuantityOutsideAppleRangeIsRefused(_ written: String) throws {
        #expect(throws: SignedDataError.self) { try AppStoreTransaction(payload: Self.payload(written)) }
    }

    static func payload(_ quantity: String?) throws -> JSONValue {
        let member = quantity.map { #","quantity":"# + $0 } ?? ""
        return try JSONValue.parse(Array(("""
            {"transactionId":"2000000000000001","originalTransactionId":"2000000000000001","bundleId":"com.example",\
            "productId":"coins","purchaseDate":1700000000000,"signedDate":1700000000000,"environment":"Production"
            """ + member + "}").utf8))
    }
}
