// SPDX-License-Identifier: Apache-2.0
import WeChatPay

/// The merchant of the official signature example, signing with HMAC-SHA256 like production.
enum TestMerchant {
    static let key = APIKey("192006250b4c09247ec02edce69f6a2d")
    static let credentials = MerchantCredentials(
        appID: "wxd930ea5d5a258f4f", mchID: "10000100", key: key, signType: .hmacSHA256)
    static let sandboxKey = APIKey("013467007045764sandboxkey0000000")
}

/// Re-signs `fields` after a change, with the given key and algorithm.
func resigned(_ fields: Fields, key: APIKey = TestMerchant.key, type: SignType) -> Fields {
    var fields = fields
    fields["sign"] = Signer(key: key).signature(for: fields, type: type)
    return fields
}

/// A unifiedorder request that passes every rule.
func sampleUnifiedOrder(outTradeNo: String = "T20240101001", totalFee: Int = 1200) -> UnifiedOrderRequest {
    UnifiedOrderRequest(
        body: "腾讯充值中心-QQ会员充值", outTradeNo: outTradeNo, totalFee: totalFee, spbillCreateIP: "203.0.113.7",
        notifyURL: "https://pay.example.com/wechat/notify")
}
