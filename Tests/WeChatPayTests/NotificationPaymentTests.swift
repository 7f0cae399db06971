// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay

struct NotificationPaymentTests {
    let merchant = NotifyFixture.merchant
    let signer = NotifyFixture.signer

    private func verify(_ fields: Fields, expecting type: SignType = .md5) throws(NotifyError) -> PaymentNotifyOutcome {
        try PaymentNotification.verify(fields, merchant: merchant, signer: signer, expectedSignType: type)
    }

    private func paid(_ fields: Fields, expecting type: SignType = .md5) throws -> PaymentNotification {
        try #require(try verify(fields, expecting: type).payment)
    }

    /// Re-signs after an edit, as an attacker holding the key (or WeChat) would.
    private func resigned(_ fields: Fields, type: SignType = .md5, _ edit: (inout Fields) -> Void) -> Fields {
        var fields = fields
        edit(&fields)
        fields["sign"] = signer.signature(for: fields, type: type)
        return fields
    }

    @Test func aSignedPaymentNotifyVerifiesAndExposesEveryTypedField() throws {
        let fields = NotifyFixture.payment { $0.attach = "cart=42"; $0.cashFee = 90 }
            .fields(signedWith: signer, signType: .md5)
        let payment = try paid(fields)
        #expect(payment.outTradeNo == "1409811653")
        #expect(payment.transactionID == "1004400740201409030005092168")
        #expect(payment.totalFee == 100)
        #expect(payment.cashFee == 90)
        #expect(payment.feeType == "CNY")
        #expect(payment.timeEnd == "20141027200939")
        #expect(payment.timeEndDate == NotifyFixture.paidAt)
        #expect(payment.openid == "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o")
        #expect(payment.bankType == "CFT")
        #expect(payment.tradeType == "APP")
        #expect(payment.attach == "cart=42")
        #expect(payment.signType == .md5)
        #expect(payment.fields == fields)
    }

    @Test func aNotifyTravelsThroughTheStrictXMLCodecAndStillVerifies() throws {
        let body = try FlatXML.encode(NotifyFixture.payment().fields(signedWith: signer, signType: .hmacSHA256))
        let fields = try PaymentNotification.decode(body)
        #expect(PaymentNotification.claimedOutTradeNo(in: fields) == "1409811653")
        #expect(try paid(fields, expecting: .hmacSHA256).totalFee == 100)
    }

    @Test func anHMACNotifyWithoutSignTypeVerifiesWithTheOrdersAlgorithm() throws {
        let fields = NotifyFixture.payment().fields(signedWith: signer, signType: .hmacSHA256, declaresSignType: false)
        #expect(fields["sign_type"] == nil)
        #expect(fields["sign"]?.count == 64)
        #expect(try paid(fields, expecting: .hmacSHA256).signType == .hmacSHA256)
    }

    @Test func anHMACNotifyWithoutSignTypeIsRefusedForAnMD5Order() {
        let fields = NotifyFixture.payment().fields(signedWith: signer, signType: .hmacSHA256, declaresSignType: false)
        #expect(throws: NotifyError.badSign) { try verify(fields, expecting: .md5) }
    }

    @Test func aNotifyDeclaringMD5ForAnHMACOrderIsRefusedAsADowngrade() {
        let fields = NotifyFixture.payment().fields(signedWith: signer, signType: .md5)
        #expect(throws: NotifyError.signature(.signTypeMismatch(expected: .hmacSHA256))) {
            try verify(fields, expecting: .hmacSHA256)
        }
    }

    @Test func aNotifyWithoutSignOrWithAnEmptySignIsRejectedAsMissingSign() {
        var fields = NotifyFixture.payment().fields(signedWith: signer, signType: .md5)
        fields["sign"] = nil
        #expect(throws: NotifyError.missingSign) { try verify(fields) }
        fields["sign"] = ""
        #expect(throws: NotifyError.missingSign) { try verify(fields) }
        #expect(NotifyError.missingSign.shortDescription == "missing_sign")
    }

    @Test func aNotifyWhoseAmountWasRaisedAfterSigningFailsTheSignature() {
        var fields = NotifyFixture.payment().fields(signedWith: signer, signType: .md5)
        fields["total_fee"] = "100000"
        #expect(throws: NotifyError.badSign) { try verify(fields) }
        #expect(NotifyError.badSign.shortDescription == "bad_sign")
    }

    @Test func aNotifySignedWithAnotherKeyIsRejected() {
        let forger = Signer(key: APIKey("00000000000000000000000000000000"))
        let fields = NotifyFixture.payment().fields(signedWith: forger, signType: .md5)
        #expect(throws: NotifyError.badSign) { try verify(fields) }
    }

    @Test func aCorrectlySignedNotifyForAnotherAppOrMerchantIsRejected() {
        let otherApp = NotifyFixture.payment { $0.merchant.appID = "wx0000000000000000" }.fields(signedWith: signer, signType: .md5)
        #expect(throws: NotifyError.wrongAppID) { try verify(otherApp) }
        let otherMerchant = NotifyFixture.payment { $0.merchant.mchID = "10000999" }.fields(signedWith: signer, signType: .md5)
        #expect(throws: NotifyError.wrongMchID) { try verify(otherMerchant) }
        #expect(NotifyError.wrongAppID.shortDescription == "wrong_appid")
        #expect(NotifyError.wrongMchID.shortDescription == "wrong_mch_id")
    }

    @Test func aReturnCodeFailIsNeverAPaymentEvenWithoutASignature() {
        let fields: Fields = ["return_code": "FAIL", "return_msg": "签名失败"]
        #expect(throws: NotifyError.returnFail) { try verify(fields) }
        #expect(throws: NotifyError.returnFail) { try verify(["return_msg": "OK"]) }
    }

    @Test func aFailResultIsAnAuthenticFailureAndNotAPayment() throws {
        let fields = NotifyFixture.payment { $0.result = .fail(errCode: "NOTENOUGH", errCodeDescription: "余额不足") }
            .fields(signedWith: signer, signType: .md5)
        let outcome = try verify(fields)
        #expect(outcome.payment == nil)
        #expect(outcome.outTradeNo == "1409811653")
        guard case .failed(let failure) = outcome else {
            Issue.record("expected a failure outcome")
            return
        }
        #expect(failure.errCode == "NOTENOUGH")
        #expect(failure.errCodeDescription == "余额不足")
    }

    @Test func anUnknownOrMissingResultCodeIsRefused() {
        let base = NotifyFixture.payment().fields(signedWith: signer, signType: .md5)
        #expect(throws: NotifyError.invalidField("result_code")) { try verify(resigned(base) { $0["result_code"] = "MAYBE" }) }
        #expect(throws: NotifyError.missingField("result_code")) { try verify(resigned(base) { $0["result_code"] = nil }) }
    }

    @Test(arguments: ["1.00", "-1", "0", "01", "1e2", " 1", "１", "9999999999999999", "12345678901234567890"])
    func aTotalFeeThatIsNotAWholePositiveNumberOfFenIsRefused(_ value: String) {
        let fields = resigned(NotifyFixture.payment().fields(signedWith: signer, signType: .md5)) { $0["total_fee"] = value }
        #expect(throws: NotifyError.invalidField("total_fee")) { try verify(fields) }
    }

    @Test func aMissingTotalFeeOrTransactionIDIsRefused() {
        let base = NotifyFixture.payment().fields(signedWith: signer, signType: .md5)
        #expect(throws: NotifyError.missingField("total_fee")) { try verify(resigned(base) { $0["total_fee"] = nil }) }
        #expect(throws: NotifyError.missingField("transaction_id")) { try verify(resigned(base) { $0["transaction_id"] = "" }) }
        #expect(throws: NotifyError.missingField("out_trade_no")) { try verify(resigned(base) { $0["out_trade_no"] = nil }) }
        #expect(NotifyError.missingField("out_trade_no").shortDescription == "missing_out_trade_no")
    }

    @Test func aForeignCurrencyIsRefusedAndAnAbsentFeeTypeMeansCNY() throws {
        let usd = NotifyFixture.payment { $0.feeType = "USD" }.fields(signedWith: signer, signType: .md5)
        #expect(throws: NotifyError.wrongFeeType) { try verify(usd) }
        let absent = resigned(NotifyFixture.payment().fields(signedWith: signer, signType: .md5)) { $0["fee_type"] = nil }
        #expect(try paid(absent).feeType == "CNY")
    }

    @Test(arguments: ["20141327200939", "20230229120000", "2014102720093", "2014-10-27 20:09", "20141027246000"])
    func anImpossibleTimeEndIsRefused(_ value: String) {
        let fields = resigned(NotifyFixture.payment().fields(signedWith: signer, signType: .md5)) { $0["time_end"] = value }
        #expect(throws: NotifyError.invalidField("time_end")) { try verify(fields) }
    }

    @Test func timeEndIsReadAsBeijingTimeIncludingLeapDays() throws {
        let fields = resigned(NotifyFixture.payment().fields(signedWith: signer, signType: .md5)) {
            $0["time_end"] = "20240229235959"
        }
        // 2024-02-29 23:59:59 +08:00, computed independently with Python's datetime.
        #expect(try paid(fields).timeEndDate == Date(timeIntervalSince1970: 1_709_222_399))
    }

    @Test func theBuilderWritesTimeEndInBeijingTime() {
        let builder = NotifyFixture.payment { $0.timeEnd = Date(timeIntervalSince1970: 1_412_000_000.75) }
        // 1412000000 is 2014-09-29 14:13:20 UTC.
        #expect(builder.unsignedFields["time_end"] == "20140929221320")
    }

    @Test func unknownAndCouponFieldsTakePartInTheSignature() throws {
        let fields = NotifyFixture.payment {
            $0.cashFee = 80
            $0.extraFields = ["coupon_count": "1", "coupon_fee": "20", "coupon_id_0": "10000", "coupon_fee_0": "20", "some_future_field": "x"]
        }.fields(signedWith: signer, signType: .hmacSHA256)
        #expect(try paid(fields, expecting: .hmacSHA256).cashFee == 80)
        var dropped = fields
        dropped["some_future_field"] = nil
        #expect(throws: NotifyError.badSign) { try verify(dropped, expecting: .hmacSHA256) }
    }

    @Test func matchesAmountComparesTheExactAmountInFen() throws {
        let payment = try paid(NotifyFixture.payment(totalFee: 1999).fields(signedWith: signer, signType: .md5))
        #expect(payment.matches(amount: 1999))
        #expect(!payment.matches(amount: 1998))
        #expect(!payment.matches(amount: 2000))
    }

    @Test func hostileXMLIsRefusedAsMalformedBeforeAnyVerification() {
        let xxe = Array("""
            <?xml version="1.0"?><!DOCTYPE xml [<!ENTITY k SYSTEM "file:///etc/passwd">]><xml><attach>&k;</attach></xml>
            """.utf8)
        #expect {
            try PaymentNotification.decode(xxe)
        } throws: { error in
            (error as? NotifyError)?.shortDescription == "malformed_xml"
        }
        #expect(throws: NotifyError.self) { try PaymentNotification.decode([UInt8]()) }
    }

    @Test func theClaimedOrderNumberIsOfferedOnlyWhenItHasTheDocumentedShape() {
        #expect(PaymentNotification.claimedOutTradeNo(in: ["out_trade_no": "A-1_b|c*d@e"]) == "A-1_b|c*d@e")
        #expect(PaymentNotification.claimedOutTradeNo(in: ["out_trade_no": "1' OR '1'='1"]) == nil)
        #expect(PaymentNotification.claimedOutTradeNo(in: ["out_trade_no": String(repeating: "9", count: 33)]) == nil)
        #expect(PaymentNotification.claimedOutTradeNo(in: ["out_trade_no": "订单1"]) == nil)
        #expect(PaymentNotification.claimedOutTradeNo(in: ["out_trade_no": ""]) == nil)
        #expect(PaymentNotification.claimedOutTradeNo(in: [:]) == nil)
    }

    @Test func errorDescriptionsNeverEchoReceivedValues() {
        let hostileAppID = "wx<script>" + String(repeating: "A", count: 200)
        let fields = NotifyFixture.payment { $0.merchant.appID = hostileAppID }.fields(signedWith: signer, signType: .md5)
        do {
            _ = try verify(fields)
            Issue.record("a foreign appid was accepted")
        } catch {
            #expect(error == .wrongAppID)
            #expect(!error.description.contains("script"))
            #expect(!error.debugDescription.contains("AAAA"))
        }
        let sign = fields["sign"] ?? ""
        #expect(!NotifyError.badSign.description.contains(sign))
    }
}
