// SPDX-License-Identifier: Apache-2.0

/// Bill texts shared by the bill tests, written the way WeChat serves them.
enum BillFixture {
    static let allHeader = "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注"
    static let summaryHeader = "总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额"

    /// A payment whose 商品名称 and 商户数据包 hold commas, and a refund.
    static let allRows = [
        "`2019-03-13 10:01:23,`wx2421b1c4370ec43b,`10000100,`0,`,`4200000252201903133344758436,`20190313100121,`oUpF8uMuAJO_M2pxb1Q9zNjWeS6o,`APP,`SUCCESS,`CFT,`CNY,`5.76,`0.00,`0,`0,`0.00,`0.00,`,`,`会员, 季卡,`cart=1,2,3,`0.03456,`0.60%,`5.76,`0.00,`",
        "`2019-03-13 11:00:00,`wx2421b1c4370ec43b,`10000100,`0,`,`4200000252201903133344758437,`20190313100122,`oUpF8uMuAJO_M2pxb1Q9zNjWeS6o,`APP,`REFUND,`CFT,`CNY,`0.00,`0.00,`50000408942019031307145868882,`R20190313100122,`1.42,`0.00,`ORIGINAL,`SUCCESS,`课程,`,`-0.00852,`0.60%,`0.00,`1.42,`",
    ]
    static let summaryLine = "`2,`5.76,`1.42,`0.00,`0.02604,`5.76,`1.42"

    static func lines(_ lines: [String], ending: String = "\r\n") -> String {
        lines.map { $0 + ending }.joined()
    }

    static let all = lines([allHeader] + allRows + [summaryHeader, summaryLine])
}
