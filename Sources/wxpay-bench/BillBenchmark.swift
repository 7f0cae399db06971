// SPDX-License-Identifier: Apache-2.0
import WeChatPay

/// `wxpay-bench bill [rows]`: render, gzip, gunzip and parse an ALL bill of `rows` lines
/// (default 100,000, a busy merchant's day), reporting medians of 5 rounds.
enum BillBenchmark {
    static func run(_ arguments: [String]) throws {
        let count = arguments.first.flatMap(Int.init) ?? 100_000
        let rows = (0..<count).map(row)
        let summary = BillSummary(
            tradeCount: count, settlementTotalFee: rows.reduce(0) { $0 + $1.settlementTotalFee }, refundFee: 0,
            couponRefundFee: 0, serviceFee: rows.reduce(BillFee.zero) { $0 + ($1.serviceFee ?? .zero) },
            totalFee: rows.reduce(0) { $0 + $1.settlementTotalFee }, requestedRefundFee: 0)

        var text: [UInt8] = []
        let render = try medianDuration(rounds: 5) { text = try Bill.render(rows: rows, summary: summary) }
        var gzip: [UInt8] = []
        let compress = medianDuration(rounds: 5) { gzip = Gzip.compress(text) }
        var inflated: [UInt8] = []
        let decompress = try medianDuration(rounds: 5) { inflated = try Gzip.decompress(gzip, maximumOutput: 1 << 30) }
        var parsed: Bill?
        let parse = try medianDuration(rounds: 5) { parsed = try Bill.parse(inflated) }
        guard let parsed, parsed.rows == rows, parsed.summary == summary else {
            print("bill: round trip FAILED")
            return
        }
        let megabytes = Double(text.count) / 1_048_576
        print("bill: \(count) rows, \(formatted(megabytes)) MiB text, \(formatted(Double(gzip.count) / 1_048_576, decimals: 2)) MiB gzip")
        for (name, duration) in [("render", render), ("gzip", compress), ("gunzip", decompress), ("parse", parse)] {
            let seconds = duration.seconds
            print("  \(name): \(formatted(seconds * 1000)) ms, \(formatted(Double(count) / seconds / 1000)) k rows/s, \(formatted(megabytes / seconds)) MiB/s")
        }
    }

    private static func row(_ index: Int) -> BillRow {
        var row = BillRow(tradeTime: "2024-02-29 12:34:56", transactionID: "42000002522024022933447\(index)",
                          outTradeNo: "202402291234\(index)", tradeState: "SUCCESS", settlementTotalFee: 100 + index % 9_900)
        row.appID = "wxd930ea5d5a258f4f"
        row.mchID = "10000100"
        row.subMchID = "0"
        row.deviceInfo = ""
        row.openid = "oUpF8uMuAJO_M2pxb1Q9zNjWeS\(index % 1000)"
        row.tradeType = "APP"
        row.bankType = "CFT"
        row.feeType = "CNY"
        row.couponFee = 0
        row.refundID = "0"
        row.outRefundNo = "0"
        row.refundFee = 0
        row.couponRefundFee = 0
        row.refundType = ""
        row.refundStatus = ""
        row.body = "会员服务-月卡, 自动续费"
        row.attach = "channel=android,v=3.2.1"
        row.serviceFee = BillFee(milliFen: (100 + index % 9_900) * 6)
        row.rate = "0.60%"
        row.totalFee = row.settlementTotalFee
        row.requestedRefundFee = 0
        row.rateNote = ""
        return row
    }
}
