// SPDX-License-Identifier: Apache-2.0
import WeChatPay

/// Realistic documents for the protocol benchmarks, shaped like production traffic.
enum ProtocolFixtures {
    /// A 32-character API key, as WeChat issues them.
    static let key = APIKey("8c1bd9e6a3f04b7d92e5c6a1f0d3b7e4")

    /// A 12-field APP unifiedorder request as the gateway signs it (no `sign` yet).
    static func unifiedOrder(signType: SignType) -> Fields {
        [
            "appid": "wx8888888888888888",
            "mch_id": "1900000109",
            "nonce_str": "5K8264ILTKCH16CQ2502SI8ZNMTM67VS",
            "sign_type": signType.rawValue,
            "body": "极客学院-Swift 服务端开发实战 年度会员",
            "out_trade_no": "20261130153045000123456789",
            "total_fee": "19900",
            "spbill_create_ip": "223.104.63.218",
            "notify_url": "https://pay.example.com/wechat/notify",
            "trade_type": "APP",
            "time_expire": "20261130160045",
            "attach": #"{"uid":"u_1008611","sku":"vip-annual","channel":"android"}"#,
        ]
    }

    /// A payment notify with `coupons` coupons (two: 25 fields, 1.2 KB; one: 22 fields,
    /// 1.1 KB; none: 17 fields, 0.9 KB), signed with `signType` (HMAC notifies often omit
    /// `sign_type`, as this one does), encoded the way WeChat sends it: every value in CDATA.
    static func notify(signType: SignType, coupons: Int = 2) throws -> [UInt8] {
        try notify(signType: signType, coupons: coupons, number: 0)
    }

    /// `count` notifies of that shape for as many different payments: out_trade_no,
    /// transaction_id, nonce, openid, amounts, time and so the signature differ, as in a real
    /// stream of notifies, so a benchmark does not read one document from the cache again and again.
    static func notifies(signType: SignType, coupons: Int = 2, count: Int) throws -> [[UInt8]] {
        try (0..<count).map { try notify(signType: signType, coupons: coupons, number: $0) }
    }

    private static func notify(signType: SignType, coupons: Int, number: Int) throws -> [UInt8] {
        var fields: Fields = [
            "appid": "wx8888888888888888",
            "attach": #"{"uid":"u_1008611","sku":"vip-annual"}"#,
            "bank_type": "CMB_CREDIT",
            "cash_fee": "18900",
            "coupon_count": "2",
            "coupon_fee": "1000",
            "coupon_fee_0": "800",
            "coupon_fee_1": "200",
            "coupon_id_0": "10000000000000000000000000001",
            "coupon_id_1": "10000000000000000000000000002",
            "coupon_type_0": "CASH",
            "coupon_type_1": "NO_CASH",
            "fee_type": "CNY",
            "is_subscribe": "N",
            "mch_id": "1900000109",
            "nonce_str": "a8f3c1d9e2b74a6f9c0d1e2f3a4b5c6d",
            "openid": "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o",
            "out_trade_no": "20261130153045000123456789",
            "result_code": "SUCCESS",
            "return_code": "SUCCESS",
            "time_end": "20261130153112",
            "total_fee": "19900",
            "trade_type": "APP",
            "transaction_id": "4200001234202611301234567890",
        ]
        if coupons < 2 {
            for name in ["coupon_fee_1", "coupon_id_1", "coupon_type_1"] { fields[name] = nil }
            fields["coupon_count"] = "1"
            fields["coupon_fee"] = "800"
            fields["cash_fee"] = "19100"
        }
        if coupons < 1 {
            for name in ["coupon_count", "coupon_fee", "coupon_fee_0", "coupon_id_0", "coupon_type_0"] { fields[name] = nil }
            fields["cash_fee"] = "19900"
        }
        if number > 0 {
            // Same lengths as number 0, so every notify of a shape has the same size.
            func digits(_ width: Int) -> String { String(String(number).suffix(width)).leftPadded(to: width, with: "0") }
            fields["out_trade_no"] = "2026113015304500012345" + digits(4)
            fields["transaction_id"] = "420000123420261130123456" + digits(4)
            fields["nonce_str"] = "a8f3c1d9e2b74a6f9c0d1e2f3a4b" + digits(4)
            fields["openid"] = "oUpF8uMuAJO_M2pxb1Q9zNjW" + digits(4)
            fields["time_end"] = "2026113015" + digits(4)
            let fee = 20_000 + number % 79_000
            let coupon = Int(fields["coupon_fee"] ?? "0") ?? 0
            fields["total_fee"] = String(fee)
            fields["cash_fee"] = String(fee - coupon)
        }
        fields["sign"] = Signer(key: key).signature(for: fields, type: signType)
        return try FlatXML.encode(fields)
    }
}
