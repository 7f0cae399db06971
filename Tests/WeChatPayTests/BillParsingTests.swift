// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay

struct BillParsingTests {
    private func failure(_ text: String) -> BillError? {
        failure(Array(text.utf8))
    }

    private func failure(_ bytes: [UInt8]) -> BillError? {
        do {
            _ = try Bill.parse(bytes)
            return nil
        } catch {
            return error
        }
    }

    @Test func anAllBillParsesEveryColumnWithExactAmountsAndCommasInFreeText() throws {
        let bill = try Bill.parse(BillFixture.all)
        #expect(bill.layout == .all)
        #expect(bill.rows.count == 2)
        let payment = bill.rows[0]
        #expect(payment.tradeTime == "2019-03-13 10:01:23")
        // 2019-03-13 10:01:23 +08:00 is 1552442483 (Python datetime).
        #expect(payment.tradeDate == Date(timeIntervalSince1970: 1_552_442_483))
        #expect(payment.appID == "wx2421b1c4370ec43b")
        #expect(payment.mchID == "10000100")
        #expect(payment.subMchID == "0")
        #expect(payment.deviceInfo == "")
        #expect(payment.transactionID == "4200000252201903133344758436")
        #expect(payment.outTradeNo == "20190313100121")
        #expect(payment.openid == "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o")
        #expect(payment.tradeType == "APP")
        #expect(payment.tradeState == "SUCCESS")
        #expect(payment.bankType == "CFT")
        #expect(payment.feeType == "CNY")
        #expect(payment.settlementTotalFee == 576)
        #expect(payment.couponFee == 0)
        #expect(payment.refundID == "0")
        #expect(payment.refundFee == 0)
        #expect(payment.body == "会员, 季卡")
        #expect(payment.attach == "cart=1,2,3")
        #expect(payment.serviceFee == BillFee(milliFen: 3_456))
        #expect(payment.rate == "0.60%")
        #expect(payment.totalFee == 576)
        #expect(payment.requestedRefundFee == 0)
        #expect(payment.rateNote == "")
        #expect(payment.refundApplyTime == nil)
        #expect(payment.extra.isEmpty)

        let refund = bill.rows[1]
        #expect(refund.tradeState == "REFUND")
        #expect(refund.refundID == "50000408942019031307145868882")
        #expect(refund.outRefundNo == "R20190313100122")
        #expect(refund.refundFee == 142)
        #expect(refund.refundType == "ORIGINAL")
        #expect(refund.refundStatus == "SUCCESS")
        #expect(refund.attach == "")
        #expect(refund.serviceFee == BillFee(milliFen: -852))
        #expect(refund.requestedRefundFee == 142)

        #expect(bill.summary == BillSummary(tradeCount: 2, settlementTotalFee: 576, refundFee: 142, couponRefundFee: 0,
                                            serviceFee: BillFee(milliFen: 2_604), totalFee: 576, requestedRefundFee: 142))
    }

    @Test func lineEndsAByteOrderMarkAndTrailingBlankLinesDoNotMatter() throws {
        let reference = try Bill.parse(BillFixture.all)
        let variants = [
            BillFixture.lines([BillFixture.allHeader] + BillFixture.allRows + [BillFixture.summaryHeader, BillFixture.summaryLine], ending: "\n"),
            "\u{FEFF}" + BillFixture.all,
            BillFixture.all + "\r\n\r\n\n",
            // "\r\n" is a single Character, so this drops the whole final line end.
            String(BillFixture.all.dropLast()),
        ]
        for (index, variant) in variants.enumerated() {
            #expect(try Bill.parse(variant) == reference, "variant \(index)")
        }
    }

    @Test func successAndRefundBillsMapTheirOwnColumnSetsByName() throws {
        let success = BillFixture.lines([
            "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,商品名称,商户数据包,手续费,费率,订单金额,费率备注",
            "`2019-03-13 10:01:23,`wx2421b1c4370ec43b,`10000100,`0,`,`4200000252201903133344758436,`20190313100121,`oUpF8u,`APP,`SUCCESS,`CFT,`CNY,`5.76,`0.00,`会员,`,`0.03456,`0.60%,`5.76,`",
            BillFixture.summaryHeader, "`1,`5.76,`0.00,`0.00,`0.03456,`5.76,`0.00",
        ])
        let successBill = try Bill.parse(success)
        #expect(successBill.layout == .success)
        #expect(successBill.rows[0].settlementTotalFee == 576)
        #expect(successBill.rows[0].refundFee == nil)
        #expect(successBill.rows[0].refundID == nil)
        #expect(successBill.rows[0].serviceFee == BillFee(milliFen: 3_456))

        let refund = BillFixture.lines([
            "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,退款申请时间,退款成功时间,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注",
            "`2018-08-20 14:40:09,`wx34723380b2d8a699,`1510598081,`1511458511,`,`4200000145201808202300523655,`2018082010,`oDodT0Xc,`NATIVE,`REFUND,`CFT,`CNY,`0.00,`0.00,`2018-08-21 18:13:10,`2018-08-21 18:13:12,`50000707812018082106030155182,`1012413262018082023005236551534846383,`0.01,`0.00,`ORIGINAL,`SUCCESS,`微信下单单元测试-2,`,`0.00000,`1.00%,`0.00,`0.01,`",
            BillFixture.summaryHeader, "`1,`0.00,`0.01,`0.00,`0.00000,`0.00,`0.01",
        ])
        let refundBill = try Bill.parse(refund)
        #expect(refundBill.layout == .refund)
        let row = refundBill.rows[0]
        #expect(row.refundApplyTime == "2018-08-21 18:13:10")
        #expect(row.refundSuccessTime == "2018-08-21 18:13:12")
        #expect(row.refundFee == 1)
        #expect(row.outRefundNo == "1012413262018082023005236551534846383")
        #expect(row.serviceFee == .zero)
    }

    @Test func columnsInAnotherOrderGiveTheSameRows() throws {
        let reference = try Bill.parse(BillFixture.all)
        let header = BillFixture.allHeader.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let permutation = Array(header.indices.reversed())
        func cells(_ line: String) -> [String] {
            line.dropFirst().components(separatedBy: ",`")
        }
        let shuffledRows = BillFixture.allRows.map { line in
            let cells = cells(line)
            return "`" + permutation.map { cells[$0] }.joined(separator: ",`")
        }
        let text = BillFixture.lines([permutation.map { header[$0] }.joined(separator: ",")] + shuffledRows
            + [BillFixture.summaryHeader, BillFixture.summaryLine])
        let bill = try Bill.parse(text)
        #expect(bill.rows == reference.rows)
        #expect(bill.layout.columns == reference.layout.columns.reversed())
    }

    @Test func aLegacyBillWithOldColumnNamesStillParses() throws {
        // The format and example of the old downloadbill page (WxJava and many SDKs quote it),
        // full-width colons in the trade time included.
        let text = BillFixture.lines([
            "交易时间,公众账号ID,商户号,子商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,总金额,代金券或立减优惠金额,微信退款单号,商户退款单号,退款金额,代金券或立减优惠退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率",
            "`2014-11-1016：33：45,`wx2421b1c4370ec43b,`10000100,`0,`1000,`1001690740201411100005734289,`1415640626,`085e9858e3ba5186aafcbaed1,`MICROPAY,`SUCCESS,`CFT,`CNY,`0.01,`0.0,`0,`0,`0,`0,`,`,`被扫支付测试,`订单额外描述,`0,`0.60%",
            "`2014-11-1016：46：14,`wx2421b1c4370ec43b,`10000100,`0,`1000,`1002780740201411100005729794,`1415635270,`085e9858e90ca40c0b5aee463,`MICROPAY,`SUCCESS,`CFT,`CNY,`0.01,`0.0,`0,`0,`0,`0,`,`,`被扫支付测试,`订单额外描述,`0,`0.60%",
            "总交易单数,总交易额,总退款金额,总代金券或立减优惠退款金额,手续费总金额",
            "`2,`0.02,`0.0,`0.0,`0",
        ], ending: "\n")
        let bill = try Bill.parse(text)
        #expect(bill.rows.count == 2)
        #expect(bill.rows[0].settlementTotalFee == 1)
        #expect(bill.rows[0].subMchID == "0")
        #expect(bill.rows[0].couponFee == 0)
        #expect(bill.rows[0].couponRefundFee == 0)
        #expect(bill.rows[0].serviceFee == .zero)
        #expect(bill.rows[0].totalFee == nil)
        #expect(bill.rows[0].tradeTime == "2014-11-1016：33：45")
        #expect(bill.rows[0].tradeDate == nil)
        #expect(bill.summary == BillSummary(tradeCount: 2, settlementTotalFee: 2, refundFee: 0, couponRefundFee: 0, serviceFee: .zero))
    }

    @Test func backtickPrefixedHeadersAreAccepted() throws {
        func backticked(_ header: String) -> String {
            header.split(separator: ",").map { "`" + $0 }.joined(separator: ",")
        }
        let text = BillFixture.lines([backticked(BillFixture.allHeader)] + BillFixture.allRows
            + [backticked(BillFixture.summaryHeader), BillFixture.summaryLine])
        #expect(try Bill.parse(text) == (try Bill.parse(BillFixture.all)))
    }

    @Test func anEmptyBillOfHeaderAndSummaryParses() throws {
        let bill = try Bill.parse(BillFixture.lines([BillFixture.allHeader, BillFixture.summaryHeader,
                                                     "`0,`0.00,`0.00,`0.00,`0.00000,`0.00,`0.00"]))
        #expect(bill.rows.isEmpty)
        #expect(bill.summary.tradeCount == 0)
        #expect(bill.summary.serviceFee == .zero)
    }

    @Test func unknownColumnsAreKeptByHeaderName() throws {
        let text = BillFixture.lines([
            "交易时间,微信订单号,商户订单号,交易状态,应结订单金额,新列",
            "`2019-03-13 10:01:23,`4200,`o1,`SUCCESS,`1.00,`某值",
            "总交易单数,应结订单总金额,退款总金额,手续费总金额,新汇总",
            "`1,`1.00,`0.00,`0.00600,`x",
        ])
        let bill = try Bill.parse(text)
        #expect(bill.rows[0].extra == ["新列": "某值"])
        #expect(bill.summary.extra == ["新汇总": "x"])
        #expect(bill.layout.columns.last == .other("新列"))
        #expect(try bill.render() == Array(text.utf8))
    }

    @Test func anEmptyFileIsRefused() {
        #expect(failure("") == .empty)
        #expect(failure("\u{FEFF}") == .empty)
        #expect(failure("\r\n\n") == .empty)
    }

    @Test func aFileThatStopsBeforeItsSummaryIsRefusedWithTheLineNumber() {
        #expect(failure(BillFixture.allHeader) == .missingSummary(line: 2))
        #expect(failure(BillFixture.lines([BillFixture.allHeader] + BillFixture.allRows)) == .missingSummary(line: 4))
        #expect(failure(BillFixture.lines([BillFixture.allHeader] + BillFixture.allRows + [BillFixture.summaryHeader]))
            == .missingSummary(line: 5))
    }

    @Test func aMalformedAmountIsRefusedWithItsLineAndColumn() throws {
        var rows = BillFixture.allRows
        rows[1] = rows[1].replacingOccurrences(of: "`1.42,", with: "`1.425,")
        let error = try #require(failure(BillFixture.lines([BillFixture.allHeader] + rows + [BillFixture.summaryHeader, BillFixture.summaryLine])))
        #expect(error == .invalidValue(.refundFee, line: 3))
        #expect(error.line == 3)
        #expect(error.shortDescription == "invalid_value")
        #expect(error.description == "bill line 3: 退款金额 is not in its documented form")
        #expect(!error.description.contains("1.425"))
    }

    @Test func aBadSummaryAmountIsRefusedWithItsLine() {
        let text = BillFixture.lines([BillFixture.allHeader] + BillFixture.allRows + [BillFixture.summaryHeader, "`2,`5.76,`1.42,`0.00,`0.02604x,`5.76,`1.42"])
        #expect(failure(text) == .invalidSummaryValue(.serviceFee, line: 5))
    }

    @Test func aCommaBacktickInsideFreeTextChangesTheCellCountAndIsRefused() {
        var rows = BillFixture.allRows
        rows[0] = rows[0].replacingOccurrences(of: "`会员, 季卡", with: "`会员,`季卡")
        #expect(failure(BillFixture.lines([BillFixture.allHeader] + rows + [BillFixture.summaryHeader, BillFixture.summaryLine]))
            == .fieldCount(expected: 27, found: 28, line: 2))
    }

    @Test func structuralDamageIsRefusedWithTheLineNumber() {
        let header = BillFixture.allHeader
        let rows = BillFixture.allRows
        let summary = [BillFixture.summaryHeader, BillFixture.summaryLine]
        #expect(failure(BillFixture.lines([header, String(rows[0].dropFirst())] + summary)) == .missingBacktick(line: 2))
        #expect(failure(BillFixture.lines([header] + rows + summary + ["`extra"])) == .unexpectedLine(6))
        #expect(failure(BillFixture.lines([header, rows[0], "", rows[1]] + summary)) == .unexpectedLine(3))
        #expect(failure(BillFixture.lines([header, rows[0], rows[1].components(separatedBy: ",`").dropLast().joined(separator: ",`")] + summary))
            == .fieldCount(expected: 27, found: 26, line: 3))
        #expect(failure(BillFixture.lines([header] + rows + [BillFixture.summaryHeader, "`2,`5.76"]))
            == .fieldCount(expected: 7, found: 2, line: 5))
    }

    @Test func invalidUTF8IsRefusedWithTheLineNumber() {
        var bytes = Array(BillFixture.all.utf8)
        let secondNewline = bytes.indices.filter { bytes[$0] == UInt8(ascii: "\n") }[1]
        bytes[secondNewline + 5] = 0xFF
        #expect(failure(bytes) == .notUTF8(line: 3))
    }

    @Test func headersMissingRequiredColumnsOrRepeatingOneAreRefused() {
        let withoutOrderNumber = BillFixture.allHeader.replacingOccurrences(of: "商户订单号,", with: "")
        #expect(failure(BillFixture.lines([withoutOrderNumber, BillFixture.summaryHeader, "`0,`0,`0,`0,`0,`0,`0"]))
            == .missingColumn(.outTradeNo, line: 1))
        #expect(failure(BillFixture.lines([BillFixture.allHeader + ",商户订单号", BillFixture.summaryHeader, "`0,`0,`0,`0,`0,`0,`0"]))
            == .duplicateColumn(line: 1))
        // 总金额 is the old name of 应结订单金额: both at once is the same column twice.
        #expect(failure(BillFixture.lines([BillFixture.allHeader + ",总金额", BillFixture.summaryHeader, "`0,`0,`0,`0,`0,`0,`0"]))
            == .duplicateColumn(line: 1))
        #expect(failure(BillFixture.lines([BillFixture.allHeader, "总交易单数,应结订单总金额,退款总金额", "`0,`0,`0"]))
            == .missingSummaryColumn(.serviceFee, line: 2))
    }

    @Test func aRowWithoutAnOrderNumberIsRefused() {
        var rows = BillFixture.allRows
        rows[0] = rows[0].replacingOccurrences(of: "`20190313100121,", with: "`,")
        #expect(failure(BillFixture.lines([BillFixture.allHeader] + rows + [BillFixture.summaryHeader, BillFixture.summaryLine]))
            == .invalidValue(.outTradeNo, line: 2))
    }

    @Test func randomDamageGivesABillOrATypedErrorAndNeverACrash() {
        let original = Array(BillFixture.all.utf8)
        let alphabet: [UInt8] = Array("`,\r\n.0-9总交易单数".utf8) + [0xFF, 0xE4, 0x00]
        var generator = SeededGenerator(seed: 2024)
        var parsed = 0
        var refused = 0
        for _ in 0..<2_000 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[position] = alphabet.randomElement(using: &generator)!
                case 1: bytes.remove(at: position)
                default: bytes.insert(alphabet.randomElement(using: &generator)!, at: position)
                }
            }
            do {
                _ = try Bill.parse(bytes)
                parsed += 1
            } catch {
                refused += 1
                if let line = error.line { #expect(line >= 1 && line <= bytes.count + 1) }
            }
        }
        #expect(parsed + refused == 2_000)
        #expect(refused > 0)
    }
}
