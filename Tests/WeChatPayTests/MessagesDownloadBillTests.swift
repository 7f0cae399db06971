// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay

struct MessagesDownloadBillTests {
    @Test func aRequestRoundTripsAndAsksForGzipOnlyWhenWanted() throws {
        let plain = DownloadBillRequest(billDate: "20240101")
        #expect(plain.businessFields() == ["bill_date": "20240101", "bill_type": "ALL"])
        let gzip = DownloadBillRequest(billDate: "20240101", billType: .refund, gzip: true)
        #expect(gzip.businessFields() == ["bill_date": "20240101", "bill_type": "REFUND", "tar_type": "GZIP"])
        #expect(try DownloadBillRequest(fields: gzip.businessFields()) == gzip)
    }

    @Test func theDayIsTheBeijingDay() {
        let lateUTC = Date(timeIntervalSince1970: 1_704_126_600)  // 2024-01-01 16:30 UTC
        #expect(DownloadBillRequest(day: lateUTC).billDate == "20240102")
    }

    @Test func anAbsentBillTypeMeansAll() throws {
        #expect(try DownloadBillRequest(fields: ["bill_date": "20240101"]).billType == .all)
    }

    @Test func aMissingDateIsLackParams() {
        #expect(throws: WeChatPayMessageError.missingField("bill_date")) { try DownloadBillRequest(fields: ["bill_type": "ALL"]) }
    }

    @Test(arguments: [("bill_date", "2024-01-01"), ("bill_date", "20240231"), ("bill_type", "EVERYTHING"), ("tar_type", "ZIP")])
    func anInvalidValueIsParamError(name: String, value: String) {
        var fields: Fields = ["bill_date": "20240101"]
        fields[name] = value
        #expect(throws: WeChatPayMessageError.invalidField(name)) { try DownloadBillRequest(fields: fields) }
    }

    @Test func aFileBodyIsKeptAsIsAndXMLIsNotAFile() {
        let text = Array("交易时间,公众账号ID\n".utf8)
        #expect(DownloadBillResponse(fileBody: text)?.body == text)
        #expect(DownloadBillResponse(fileBody: text)?.isGzip == false)
        #expect(DownloadBillResponse(fileBody: [0x1F, 0x8B, 0x08])?.isGzip == true)
        #expect(DownloadBillResponse(fileBody: Array(" \n<xml></xml>".utf8)) == nil)
        #expect(DownloadBillResponse(fileBody: []) == nil)
    }

    @Test func xmlDetectionLooksAtTheFirstNonWhitespaceByte() {
        #expect(DownloadBillResponse.isXMLDocument(Array("<xml>".utf8)))
        #expect(DownloadBillResponse.isXMLDocument(Array("\r\n\t <xml>".utf8)))
        #expect(!DownloadBillResponse.isXMLDocument(Array("`2024".utf8)))
        #expect(!DownloadBillResponse.isXMLDocument([0x1F, 0x8B]))
        #expect(!DownloadBillResponse.isXMLDocument([]))
    }

    @Test func aSuccessfulXMLDocumentIsNeverABill() {
        #expect(throws: WeChatPayMessageError.self) { try DownloadBillResponse(verifiedFields: ["return_code": "SUCCESS"]) }
    }
}
