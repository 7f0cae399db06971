// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

struct BillAmountTests {
    @Test(arguments: [
        ("5.76", 576), ("0.01", 1), ("0.29", 29), ("1.1", 110), ("0", 0), ("0.0", 0), ("100", 10_000),
        ("5.760", 576), ("-1.00", -100), ("-0.00", 0), ("9999999999999.99", 999_999_999_999_999), ("0.10000", 10),
    ])
    func yuanConvertsToExactFen(_ text: String, _ fen: Int) {
        #expect(BillAmount.fen(fromYuan: text) == fen)
    }

    @Test(arguments: ["0.015", "0.001", "5.", ".5", "", "-", "+1", " 1", "1 ", "1,000.00", "1e3", "１", "5.7.6", "--1",
                      "0x10", "12345678901234", "NaN", "1.0a"])
    func anythingButAnExactYuanAmountIsRefused(_ text: String) {
        #expect(BillAmount.fen(fromYuan: text) == nil)
    }

    @Test func fenIsWrittenAsYuanWithTwoDecimals() {
        #expect(BillAmount.yuan(fromFen: 576) == "5.76")
        #expect(BillAmount.yuan(fromFen: 1) == "0.01")
        #expect(BillAmount.yuan(fromFen: 0) == "0.00")
        #expect(BillAmount.yuan(fromFen: 10) == "0.10")
        #expect(BillAmount.yuan(fromFen: -100) == "-1.00")
        #expect(BillAmount.yuan(fromFen: -5) == "-0.05")
    }

    @Test func everyFenValueRoundTripsThroughItsYuanText() {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2_000 {
            let fen = Int.random(in: -10_000_000...10_000_000_000, using: &generator)
            #expect(BillAmount.fen(fromYuan: BillAmount.yuan(fromFen: fen)) == fen)
        }
    }

    @Test func serviceFeesKeepFiveDecimalsExactly() throws {
        #expect(BillFee(yuan: "0.01000")?.milliFen == 1_000)
        #expect(BillFee(yuan: "0.00600")?.milliFen == 600)
        #expect(BillFee(yuan: "0.00001")?.milliFen == 1)
        #expect(BillFee(yuan: "0")?.milliFen == 0)
        #expect(BillFee(yuan: "-0.00852")?.milliFen == -852)
        #expect(BillFee(yuan: "0.000001") == nil)
        #expect(BillFee(yuan: "0.0000100")?.milliFen == 1)
        #expect(try #require(BillFee(yuan: "0.01000")).yuan == "0.01000")
        #expect(BillFee(milliFen: -852).yuan == "-0.00852")
        #expect(BillFee(milliFen: 600) + BillFee(milliFen: 400) == BillFee(milliFen: 1_000))
    }

    @Test func feesRoundToFenHalfAwayFromZero() {
        #expect(BillFee(milliFen: 500).roundedToFen() == 1)
        #expect(BillFee(milliFen: 499).roundedToFen() == 0)
        #expect(BillFee(milliFen: 1_500).roundedToFen() == 2)
        #expect(BillFee(milliFen: 3_456).roundedToFen() == 3)
        #expect(BillFee(milliFen: -500).roundedToFen() == -1)
        #expect(BillFee(milliFen: -499).roundedToFen() == 0)
    }
}
