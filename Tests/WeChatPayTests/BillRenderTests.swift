// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

struct BillRenderTests {
    @Test func renderingAParsedBillReproducesItByteForByte() throws {
        let bill = try Bill.parse(BillFixture.all)
        #expect(try bill.render() == Array(BillFixture.all.utf8))
    }

    /// A row with a value for every column of `layout` (and none for the others), so that parsing
    /// the rendered text gives back an equal row.
    private func row(_ index: Int, layout: BillLayout) -> BillRow {
        var row = BillRow(tradeTime: "2024-02-29 23:59:\(10 + index % 50)", transactionID: "42000\(index)",
                          outTradeNo: "order-\(index)", tradeState: index % 3 == 0 ? "REFUND" : "SUCCESS",
                          settlementTotalFee: index * 7 + 1)
        for column in layout.columns {
            switch column {
            case .appID: row.appID = "wxd930ea5d5a258f4f"
            case .mchID: row.mchID = "10000100"
            case .subMchID: row.subMchID = "0"
            case .deviceInfo: row.deviceInfo = ""
            case .openid: row.openid = "oUpF8u\(index)"
            case .tradeType: row.tradeType = "APP"
            case .bankType: row.bankType = "CFT"
            case .feeType: row.feeType = "CNY"
            case .couponFee: row.couponFee = index % 5
            case .refundApplyTime: row.refundApplyTime = "2024-03-01 10:00:00"
            case .refundSuccessTime: row.refundSuccessTime = ""
            case .refundID: row.refundID = index % 3 == 0 ? "5030\(index)" : "0"
            case .outRefundNo: row.outRefundNo = index % 3 == 0 ? "R\(index)" : "0"
            case .refundFee: row.refundFee = index % 3 == 0 ? index : 0
            case .couponRefundFee: row.couponRefundFee = nil
            case .refundType: row.refundType = index % 3 == 0 ? "ORIGINAL" : ""
            case .refundStatus: row.refundStatus = index % 3 == 0 ? "PROCESSING" : ""
            case .body: row.body = "课程, 第\(index)讲 ,含逗号,"
            case .attach: row.attach = "`k=v,a=b"
            case .serviceFee: row.serviceFee = BillFee(milliFen: index * 37 - 100)
            case .rate: row.rate = "0.60%"
            case .totalFee: row.totalFee = index * 7 + 1
            case .requestedRefundFee: row.requestedRefundFee = index % 3 == 0 ? index : 0
            case .rateNote: row.rateNote = ""
            case .tradeTime, .transactionID, .outTradeNo, .tradeState, .settlementTotalFee, .other: break
            }
        }
        return row
    }

    @Test(arguments: [BillLayout.all, .success, .refund])
    func everyLayoutRoundTripsThroughRenderAndParse(_ layout: BillLayout) throws {
        let rows = (0..<500).map { row($0, layout: layout) }
        let summary = BillSummary(tradeCount: rows.count, settlementTotalFee: rows.reduce(0) { $0 + $1.settlementTotalFee },
                                  refundFee: 3, couponRefundFee: 0, serviceFee: BillFee(milliFen: 12_345),
                                  totalFee: 99, requestedRefundFee: 3)
        let bytes = try Bill.render(rows: rows, summary: summary, layout: layout)
        let parsed = try Bill.parse(bytes)
        #expect(parsed.layout == layout)
        #expect(parsed.rows == rows)
        #expect(parsed.summary == summary)
    }

    @Test func aGzippedRenderedBillParsesBackAsTheSimulatorServesIt() throws {
        let bill = try Bill.parse(BillFixture.all)
        let body = Gzip.compress(try bill.render())
        #expect(try Bill.parse(Gzip.decompress(body, maximumOutput: 1 << 20)) == bill)
    }

    @Test func renderingWritesTheDocumentedSummaryLine() throws {
        let summary = BillSummary(tradeCount: 48, settlementTotalFee: 576, refundFee: 142, couponRefundFee: 0,
                                  serviceFee: BillFee(milliFen: 1_000), totalFee: 576, requestedRefundFee: 142)
        let text = String(decoding: try Bill.render(rows: [], summary: summary), as: UTF8.self)
        #expect(text == BillFixture.allHeader + "\r\n" + BillFixture.summaryHeader + "\r\n`48,`5.76,`1.42,`0.00,`0.01000,`5.76,`1.42\r\n")
    }

    @Test func cellsTheFormatCannotCarryAreRefused() {
        let summary = BillSummary(tradeCount: 1, settlementTotalFee: 1, refundFee: 0, serviceFee: .zero)
        var row = row(1, layout: .all)
        row.body = "a,`b"
        #expect(throws: BillError.unrenderableValue(.body)) { try Bill.render(rows: [row], summary: summary) }
        row = self.row(1, layout: .all)
        row.attach = "line\nbreak"
        #expect(throws: BillError.unrenderableValue(.attach)) { try Bill.render(rows: [row], summary: summary) }
        row = self.row(1, layout: .all)
        row.outTradeNo = "o\r1"
        #expect(throws: BillError.unrenderableValue(.outTradeNo)) { try Bill.render(rows: [row], summary: summary) }
    }

    @Test func aLayoutThatCouldNotBeParsedBackIsRefused() {
        let summary = BillSummary(tradeCount: 0, settlementTotalFee: 0, refundFee: 0, serviceFee: .zero)
        let withoutOrderNumber = BillLayout(columns: BillLayout.all.columns.filter { $0 != .outTradeNo })
        #expect(throws: BillError.missingColumn(.outTradeNo, line: 1)) {
            try Bill.render(rows: [], summary: summary, layout: withoutOrderNumber)
        }
        let summaryNotFirst = BillLayout(columns: BillLayout.all.columns, summaryColumns: [.settlementTotalFee, .tradeCount])
        #expect(throws: BillError.missingSummaryColumn(.tradeCount, line: 2)) {
            try Bill.render(rows: [], summary: summary, layout: summaryNotFirst)
        }
        let commaInHeader = BillLayout(columns: BillLayout.all.columns + [.other("a,b")])
        #expect(throws: BillError.unrenderableHeader) { try Bill.render(rows: [], summary: summary, layout: commaInHeader) }
    }
}
