// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay

struct MessagesUnifiedOrderTests {
    static let full = UnifiedOrderRequest(
        body: "腾讯充值中心-QQ会员充值", outTradeNo: "T20240101-001|a*b@c", totalFee: 1, spbillCreateIP: "2001:db8::7",
        notifyURL: "https://pay.example.com/wechat/notify", tradeType: .app, deviceInfo: "WEB",
        detail: #"{"goods_detail":[{"goods_id":"1","quantity":1,"price":1}]}"#, attach: "深圳分店", feeType: "CNY",
        timeStart: BeijingTime.parse("20240101100000"), timeExpire: BeijingTime.parse("20240101103000"),
        goodsTag: "WXG", limitPay: "no_credit", sceneInfo: #"{"store_info":{"id":"1"}}"#,
        additionalFields: ["profit_sharing": "Y", "sign": "forged", "appid": "forged"])

    @Test func aFullRequestRoundTripsThroughItsFields() throws {
        let fields = Self.full.businessFields()
        #expect(fields["time_start"] == "20240101100000")
        #expect(fields["time_expire"] == "20240101103000")
        #expect(fields["total_fee"] == "1")
        #expect(fields["trade_type"] == "APP")
        #expect(fields["profit_sharing"] == "Y")
        // Envelope names in additional fields are the pipeline's, never the request's.
        #expect(fields["sign"] == nil && fields["appid"] == nil)
        var expected = Self.full
        expected.additionalFields = ["profit_sharing": "Y"]
        #expect(try UnifiedOrderRequest(fields: fields) == expected)
    }

    @Test func absentOptionalFieldsAreNotSent() {
        let fields = sampleUnifiedOrder().businessFields()
        #expect(fields.names == ["body", "out_trade_no", "total_fee", "spbill_create_ip", "notify_url", "trade_type"])
    }

    @Test func decodingIgnoresTheEnvelopeAndKeepsUnknownFields() throws {
        var fields = sampleUnifiedOrder().businessFields()
        fields["appid"] = "wx1"
        fields["sign"] = "ABC"
        fields["receipt"] = "Y"
        let request = try UnifiedOrderRequest(fields: fields)
        #expect(request.additionalFields == ["receipt": "Y"])
    }

    @Test(arguments: ["body", "out_trade_no", "total_fee", "spbill_create_ip", "notify_url", "trade_type"])
    func eachMissingRequiredFieldIsLackParamsNamingIt(name: String) {
        var fields = sampleUnifiedOrder().businessFields()
        fields[name] = nil
        let error = #expect(throws: WeChatPayMessageError.self) { try UnifiedOrderRequest(fields: fields) }
        #expect(error == .missingField(name))
        #expect(error?.errorCode == .lackParams)
        #expect(error?.description == "missing field \(name)")
    }

    @Test func anEmptyRequiredFieldCountsAsMissing() {
        var fields = sampleUnifiedOrder().businessFields()
        fields["body"] = ""
        #expect(throws: WeChatPayMessageError.missingField("body")) { try UnifiedOrderRequest(fields: fields) }
    }

    @Test(arguments: [
        ("trade_type", "BITCOIN"), ("trade_type", "MICROPAY"), ("total_fee", "0"), ("total_fee", "-1"),
        ("total_fee", "1.00"), ("total_fee", "01"), ("total_fee", "１"), ("total_fee", "9999999999999999"),
        ("out_trade_no", "has space"), ("out_trade_no", String(repeating: "1", count: 33)), ("out_trade_no", "订单1"),
        ("spbill_create_ip", "localhost"), ("notify_url", "https://example.com/notify?x=1"),
        ("notify_url", "ftp://example.com/notify"), ("time_start", "2024-01-01 10:00:00"),
        ("time_expire", "20240230000000"), ("fee_type", "rmb"), ("limit_pay", "no_debit"),
        ("body", String(repeating: "课", count: 128)),
    ])
    func anInvalidValueIsParamErrorNamingTheField(name: String, value: String) {
        var fields = sampleUnifiedOrder().businessFields()
        fields[name] = value
        let error = #expect(throws: WeChatPayMessageError.self) { try UnifiedOrderRequest(fields: fields) }
        #expect(error == .invalidField(name))
        #expect(error?.errorCode == .paramError)
        #expect(error?.description == "invalid value for \(name)")
    }

    @Test func anExpiryBeforeTheStartIsRefused() {
        var request = sampleUnifiedOrder()
        request.timeStart = BeijingTime.parse("20240101100000")
        request.timeExpire = BeijingTime.parse("20240101090000")
        #expect(throws: WeChatPayMessageError.invalidField("time_expire")) { try request.validate() }
    }

    @Test func jsapiNeedsAnOpenIDAndNativeAProductID() throws {
        var request = sampleUnifiedOrder()
        request.tradeType = .jsapi
        #expect(throws: WeChatPayMessageError.missingField("openid")) { try request.validate() }
        request.openID = "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"
        try request.validate()
        request.tradeType = .native
        #expect(throws: WeChatPayMessageError.missingField("product_id")) { try request.validate() }
    }

    @Test func aResponseDecodesAndKeepsUnknownFields() throws {
        let fields: Fields = [
            "return_code": "SUCCESS", "appid": "wx1", "result_code": "SUCCESS", "trade_type": "APP",
            "prepay_id": "wx201410272009395522657a690389285100", "brand_new": "1",
        ]
        let response = try UnifiedOrderResponse(verifiedFields: fields)
        #expect(response.prepayID == "wx201410272009395522657a690389285100")
        #expect(response.fields == fields)
    }

    @Test func aResponseWithAnUnknownTradeTypeKeepsIt() throws {
        let response = try UnifiedOrderResponse(verifiedFields: ["trade_type": "FACEPAY", "prepay_id": "wx1"])
        #expect(response.tradeType == .unknown("FACEPAY"))
        #expect(response.tradeType.rawValue == "FACEPAY")
    }

    @Test func aResponseWithoutPrepayIDIsRefused() {
        #expect(throws: WeChatPayMessageError.missingField("prepay_id")) {
            try UnifiedOrderResponse(verifiedFields: ["trade_type": "APP"])
        }
    }

    @Test func aBuiltResponseDecodesToItself() throws {
        let built = UnifiedOrderResponse(tradeType: .native, prepayID: "wx1", codeURL: "weixin://wxpay/bizpayurl?pr=1")
        #expect(try UnifiedOrderResponse(verifiedFields: built.businessFields()) == built)
    }
}
