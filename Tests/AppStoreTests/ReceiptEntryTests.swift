// SPDX-License-Identifier: Apache-2.0
@testable import AppStore
import Foundation
import JSON
import Testing

/// An `in_app` entry of verifyReceipt's answer, as the client reads it.
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
}
