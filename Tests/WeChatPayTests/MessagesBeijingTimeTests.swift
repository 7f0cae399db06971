// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay

struct MessagesBeijingTimeTests {
    // Expected values computed independently with Python's datetime and a fixed +08:00 zone.
    static let vectors: [(String, Double)] = [
        ("20141030133525", 1_414_647_325),
        ("20000229235959", 951_839_999),
        ("19700101000000", -28_800),
        ("16001231235959", -11_644_502_401),
        ("99991231235959", 253_402_271_999),
        ("00010101000000", -62_135_625_600),
    ]

    @Test func theEpochIsEightOClockInBeijing() {
        #expect(BeijingTime.format(Date(timeIntervalSince1970: 0)) == "19700101080000")
    }

    @Test(arguments: vectors)
    func knownInstantsFormatAndParseBothWays(text: String, seconds: Double) {
        #expect(BeijingTime.parse(text) == Date(timeIntervalSince1970: seconds))
        #expect(BeijingTime.format(Date(timeIntervalSince1970: seconds)) == text)
    }

    @Test func everyDayOfSeveralLeapCyclesRoundTrips() {
        // Every day at 23:59:59 from 1899 to 2101: crosses the 1900 and 2100 non-leap centuries and 2000.
        let start = BeijingTime.parse("18990101235959")!.timeIntervalSince1970
        var previous = ""
        for day in 0..<(203 * 366) {
            let date = Date(timeIntervalSince1970: start + Double(day) * 86_400)
            let text = BeijingTime.format(date)
            #expect(BeijingTime.parse(text) == date)
            #expect(text > previous)
            previous = text
            if text.hasPrefix("2102") { break }
        }
        #expect(previous.hasPrefix("2102"))
    }

    @Test func subSecondsRoundTowardsThePast() {
        #expect(BeijingTime.format(Date(timeIntervalSince1970: 0.999)) == "19700101080000")
        #expect(BeijingTime.format(Date(timeIntervalSince1970: -0.5)) == "19700101075959")
    }

    @Test func datesOutsideFourDigitYearsAreClamped() {
        #expect(BeijingTime.format(Date(timeIntervalSince1970: 1e15)) == "99991231235959")
        #expect(BeijingTime.format(Date(timeIntervalSince1970: -1e15)) == "00010101000000")
        #expect(BeijingTime.format(Date.distantFuture) == "40010101080000")
    }

    @Test(arguments: [
        "", "2014103013352", "201410301335250", "20140230000000", "20150229000000", "20001301000000",
        "20001200000000", "20141030240000", "20141030136000", "20141030133560", "2014103013352a",
        "+0141030133525", "２０１４1030133525", "00000101000000", " 20141030133525",
    ])
    func malformedOrImpossibleTimesAreRejected(text: String) {
        #expect(BeijingTime.parse(text) == nil)
    }

    @Test func leapDaysExistOnlyInLeapYears() {
        #expect(BeijingTime.parse("20160229000000") != nil)
        #expect(BeijingTime.parse("20000229000000") != nil)
        #expect(BeijingTime.parse("19000229000000") == nil)
        #expect(BeijingTime.parse("21000229000000") == nil)
    }

    @Test func theSeparatedFormOfRefundTimesParsesAndFormats() {
        let date = BeijingTime.parse("20160725152626")!
        #expect(BeijingTime.parseWithSeparators("2016-07-25 15:26:26") == date)
        #expect(BeijingTime.formatWithSeparators(date) == "2016-07-25 15:26:26")
        #expect(BeijingTime.parseWithSeparators("2016-07-25T15:26:26") == nil)
        #expect(BeijingTime.parseWithSeparators("20160725152626") == nil)
    }

    @Test func billDaysAreBeijingCalendarDays() {
        // 2024-01-01 16:30 UTC is already 2 January in Beijing.
        let date = Date(timeIntervalSince1970: 1_704_126_600)
        #expect(BeijingTime.formatDay(date) == "20240102")
        #expect(BeijingTime.parseDay("20240102") == BeijingTime.parse("20240102000000"))
        #expect(BeijingTime.parseDay("20240132") == nil)
    }

    @Test func rfc3339TimestampsCarryMillisecondsAndTheBeijingOffset() {
        let date = Date(timeIntervalSince1970: 1_704_126_600.339)
        #expect(BeijingTime.formatRFC3339(date) == "2024-01-02T00:30:00.339+08:00")
        #expect(BeijingTime.formatRFC3339(Date(timeIntervalSince1970: 0)) == "1970-01-01T08:00:00.000+08:00")
    }
}
