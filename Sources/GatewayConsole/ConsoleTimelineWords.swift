// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway

/// The timeline's details in Chinese. The gateway writes each line once, in English (the API
/// returns it as written, and people grep logs for it); the zh-CN console translates its fixed
/// words phrase by phrase and keeps the values as written: ids, amounts, times, states, and the
/// names of WeChat's and Apple's calls and codes (`orderquery`, `Get Transaction Info`,
/// `REFUND_REVERSED`), which support staff look up by those names.
///
/// A phrase matches whole words only (never inside `paid_after_close` or an id), the longest
/// first; a line with words not listed here keeps them in English, so a new line is readable
/// before its words are added. ConsolePagesTests renders a line of every kind the gateway writes
/// and fails on an English word left over.
enum ConsoleTimelineWords {
    static func chinese(_ detail: String) -> String {
        let characters = Array(detail)
        var output = ""
        output.reserveCapacity(detail.utf8.count)
        var index = 0
        while index < characters.count {
            if startsWord(characters, at: index), let (length, chinese) = phrase(in: characters, at: index) {
                output += chinese
                index += length
            } else {
                output.append(characters[index])
                index += 1
            }
        }
        return output
    }

    /// The longest phrase at `index` that ends at a word's end, as (its length, its Chinese).
    private static func phrase(in characters: [Character], at index: Int) -> (Int, String)? {
        guard let candidates = byFirst[characters[index]] else { return nil }
        for (english, chinese) in candidates where index + english.count <= characters.count {
            guard characters[index..<(index + english.count)].elementsEqual(english) else { continue }
            let end = index + english.count
            if let last = english.last, isWordCharacter(last), end < characters.count, isWordCharacter(characters[end]) { continue }
            return (english.count, chinese)
        }
        return nil
    }

    private static func startsWord(_ characters: [Character], at index: Int) -> Bool {
        guard isWordCharacter(characters[index]) else { return true }
        return index == 0 || !isWordCharacter(characters[index - 1])
    }

    /// A letter, a digit, `_`, or one of the characters ids are written with, so that no phrase
    /// matches inside `com.example.course_1`, `/v1/iap` or `2026-11-30`.
    static func isWordCharacter(_ character: Character) -> Bool {
        character.isLetter || character.isNumber || character == "_" || character == "." || character == "/" || character == "-"
            || character == "="
    }

    /// The phrases by first character, longest first.
    private static let byFirst: [Character: [([Character], String)]] = {
        var table: [Character: [([Character], String)]] = [:]
        for (english, chinese) in phrases {
            table[english.first!, default: []].append((Array(english), chinese))
        }
        return table.mapValues { $0.sorted { $0.0.count > $1.0.count } }
    }()

    /// English → Chinese, for the words of every line the gateway writes on a timeline.
    static let phrases: [(String, String)] = [
        // Orders (WeChat Pay)
        ("prepay_id issued", "已获得 prepay_id"),
        ("answered", "回答"),
        ("confirming with orderquery", "正在用 orderquery 确认"),
        ("reconcile after ORDERPAID", "ORDERPAID 之后的对账"),
        ("reconcile", "对账"),
        ("expired unpaid", "过期未支付"),
        ("expired", "已过期"),
        ("closed locally", "已在本地关闭"),
        ("closed on request", "按请求关闭"),
        ("iOS order for", "iOS 订单，产品"),
        ("iOS order", "iOS 订单"),
        ("requested by", "请求人"),
        ("redriven by", "重新投递，操作人"),
        ("wait", "等待支付结果"),
        ("support recheck", "客服重新查询"),
        ("support", "客服"),
        ("bill comparison", "对账单核对"),
        ("bill says paid", "对账单显示已支付"),
        ("bill", "对账单"),
        ("settled", "已入账"),
        ("duplicate", "重复"),
        ("paid after close", "关单后支付"),
        ("reported", "报告"),
        ("order is", "订单为"),
        ("fen", "分"),
        ("yuan", "元"),
        ("acknowledged", "已确认收到"),
        ("transport failure", "传输失败"),
        ("given up after", "已放弃，共尝试"),
        ("attempts", "次"),
        ("redrive to retry", "可重新投递"),
        ("locally", "（本地）"),
        ("paid at", "支付时间"),
        ("Beijing", "北京时间"),
        ("not in the bill", "不在对账单中"),
        ("a refund of", "一笔退款："),
        ("this gateway never requested", "本网关从未发起"),
        ("refunded by hand in the merchant platform?", "是否在商户平台手工退款？"),
        ("for", "，对应"),
        ("local", "本地"),
        ("not applied", "未采用"),
        ("not settled", "未入账"),
        ("requested", "申请时间"),
        ("line for an order this gateway never created", "行，订单不是本网关创建的"),
        ("an order this gateway never created", "订单不是本网关创建的"),
        ("paid", "已支付"),
        ("at", "于"),
        ("was", "原为"),
        ("orderquery confirmed the payment", "orderquery 确认已支付"),
        ("refundquery confirmed it", "refundquery 已确认"),
        ("bill says SUCCESS", "对账单显示 SUCCESS"),
        ("refundquery left it", "refundquery 仍为"),
        ("flagged", "已标记"),
        ("failed", "失败"),
        ("left", "仍为"),
        ("nothing", "没有回答"),
        ("order", "订单"),
        ("local transaction", "本地交易号"),
        ("none", "无"),
        // Refunds (WeChat Pay)
        ("notify says", "通知称"),
        ("the refund is", "退款为"),
        ("sending it again", "重新发送"),
        ("same out_refund_no, same parameters", "同一 out_refund_no、同样参数"),
        ("reports", "报告"),
        ("shows it accepted", "显示已受理"),
        ("the answer names another refund or amount", "回答里是另一笔退款或另一金额"),
        ("accepted by WeChat", "微信已受理"),
        ("refund", "退款"),
        ("the reconciler will ask", "对账会再查询"),
        ("WeChat refused", "微信拒绝"),
        ("request", "请求"),
        ("succeeded", "成功"),
        // App Store: orders and transactions
        ("made for App Store", "为 App Store"),
        ("no open order of", "没有未支付订单：用户"),
        ("its product", "其产品"),
        ("is not in the catalog", "不在商品目录中"),
        ("recorded at what Apple charged", "按 Apple 实收金额记录"),
        ("in the minor unit of", "，最小货币单位，币种"),
        ("not in the catalog", "不在商品目录中"),
        ("App Store product", "App Store 产品"),
        ("transaction", "交易"),
        ("transactions", "笔交易"),
        ("purchased", "购买时间"),
        ("original", "原始交易"),
        ("quantity", "数量"),
        ("price", "价格"),
        ("storefront", "店面"),
        ("signed_transaction (StoreKit 2 JWS) verified locally", "signed_transaction（StoreKit 2 JWS）已在本地验证"),
        ("chain to the configured root, Apple's OIDs, ES256, bundle id", "证书链至配置的根证书、Apple 的 OID、ES256、bundle id"),
        ("looked up with the App Store Server API", "已用 App Store Server API 查询"),
        ("its signedTransactionInfo verified", "其 signedTransactionInfo 已验证"),
        ("its signed transaction verified", "其签名交易已验证"),
        ("the transaction is in the app receipt", "这笔交易在应用收据中"),
        ("read locally", "在本地读取"),
        ("purchases", "笔购买"),
        ("receipt verified with verifyReceipt", "收据已用 verifyReceipt 验证"),
        ("status", "状态"),
        ("the transaction is in its in_app list", "这笔交易在其 in_app 列表中"),
        ("verified, with its signedTransactionInfo", "已验证，含 signedTransactionInfo"),
        ("read from Get Notification History", "读取自 Get Notification History"),
        ("read from the notification history", "读取自通知历史"),
        ("found with Get Transaction History of", "用 Get Transaction History 找到："),
        ("'s App Store account", " 的 App Store 账户"),
        ("'s account", " 的账户"),
        ("from transaction", "从交易"),
        ("verified when first seen", "首次见到时已验证"),
        ("tried again by the reconciler", "对账重试"),
        ("found with Get Refund History (daily check)", "用 Get Refund History 找到（每日检查）"),
        ("found with Look Up Order ID", "用 Look Up Order ID 找到"),
        ("matched by app_account_token", "按 app_account_token 匹配"),
        ("the transaction carries this order's token", "交易带有本订单的 token"),
        ("came from", "来自"),
        ("but the token names this order of", "但 token 指向本订单，其用户为"),
        ("the account was switched", "切换过账户"),
        ("credited to", "已记入"),
        ("credited to catalog product", "已记入目录商品"),
        ("which now sells its App Store product", "目录现在以它销售此 App Store 产品"),
        ("matched by out_trade_no", "按 out_trade_no 匹配"),
        ("the transaction carries no usable token", "交易没有可用的 token"),
        ("the app named this open order of", "应用指明了这笔未支付订单，用户"),
        ("matched by user and product", "按用户和产品匹配"),
        ("no usable token or out_trade_no", "没有可用的 token 或 out_trade_no"),
        ("the oldest open order of", "最早的未支付订单，用户"),
        ("this order was made for the purchase and flagged", "为这笔购买新建了本订单，并标记"),
        ("a payment Apple took by itself for", "Apple 自动扣款，属于"),
        ("'s subscription", " 的订阅"),
        ("this order was made for it", "为此新建了本订单"),
        ("auto-renew on", "自动续期开"),
        ("auto-renew off", "自动续期关"),
        ("subscription", "订阅"),
        ("until", "至"),
        ("never dropped; for support to look at", "付款从不丢弃；请客服查看"),
        ("the order had been closed locally (unpaid at its expiry)", "订单此前已在本地关闭（到期未支付）"),
        ("its token names order", "其 token 指向订单"),
        ("which sells", "该订单的产品是"),
        ("another product", "另一产品"),
        ("passed over", "已跳过"),
        ("which another transaction paid already", "该订单已被另一笔交易支付"),
        ("its appAccountToken names no order of this gateway", "其 appAccountToken 不对应本网关的任何订单"),
        ("the out_trade_no given", "给出的 out_trade_no"),
        ("is not an open iOS order of", "不是这位用户该产品的未支付 iOS 订单：用户"),
        ("via", "来源"),
        ("App Store report", "App Store 上报"),
        ("notification history", "通知历史"),
        ("notification", "通知"),
        ("reported by", "上报人"),
        ("reported again by", "再次上报，上报人"),
        ("its token names this order of", "其 token 指向本订单，用户"),
        ("credited to this order before", "此前已记入本订单"),
        ("assigned by support", "由客服分配"),
        ("the purchase was unclaimed", "这笔购买此前无人认领"),
        ("first seen via", "首次来源"),
        ("credited to this order of", "已记入本订单，用户"),
        ("as recorded when first seen", "按首次见到时的记录"),
        ("marked handled by", "已标记为已处理，操作人"),
        ("console user", "控制台用户"),
        ("support token", "客服令牌"),
        ("answered finish_transaction true", "回答 finish_transaction true"),
        ("refused 409", "已拒绝 409"),
        ("it credited this order of", "它已记入本订单，用户"),
        ("about transaction", "关于交易"),
        ("which credited this order already", "它已记入本订单"),
        ("unmatched purchase", "未匹配的购买"),
        ("original transaction", "原始交易"),
        ("credited", "已记入"),
        ("'s order", " 的订单"),
        ("another purchase of the same App Store account", "同一 App Store 账户的另一笔购买"),
        ("daily Get Refund History", "每日 Get Refund History"),
        // App Store: refunds
        ("Apple refunded or revoked transaction", "Apple 已退款或撤销交易"),
        ("a refund of transaction", "交易的一笔退款："),
        ("dated", "日期"),
        ("arrived via", "来自"),
        ("but Apple reversed that refund at", "但 Apple 已于以下时间撤回该退款："),
        ("Apple reversed a refund of transaction", "Apple 撤回了一笔退款，交易"),
        ("the order is", "订单为"),
        ("and a newer refund stands: nothing changed", "且有更新的退款仍有效：未改变"),
        ("nothing to change", "无需改变"),
        ("Apple reversed its refund of transaction", "Apple 撤回了对交易的退款"),
        // App Store: support and the reconciler
        ("the App Store Server API is not configured", "没有配置 App Store Server API"),
        ("nothing to ask", "无从查询"),
        ("not revoked", "未撤销"),
        ("revoked", "已撤销"),
        ("support recheck (Get Transaction Info)", "客服重新查询（Get Transaction Info）"),
        ("an iOS order has nothing to close at Apple", "iOS 订单在 Apple 那边没有需要关闭的东西"),
        ("a transaction arriving later still settles it", "之后到达的交易仍会使它入账"),
        ("no App Store transaction of", "还没有已入账的 App Store 交易：用户"),
        ("credited yet", ""),
        ("no account to ask Get Transaction History about", "没有可用 Get Transaction History 查询的账户"),
        ("no purchase of", "没有尚未入账的购买："),
        ("that credits nothing yet", ""),
        ("Get Transaction History of", "Get Transaction History 查询"),
        ("transactions of", "笔交易，产品"),
        ("of", "的"),
        // App Store: consumption information
        ("Apple asks for consumption information about transaction", "Apple 请求交易的消费信息："),
        ("the customer asked for a refund", "顾客申请了退款"),
        ("no reason given", "未给出原因"),
        ("answer with PUT", "请用 PUT"),
        ("before", "回答，截止"),
        ("unless answered, the configured defaults", "若无回答，配置的默认值"),
        ("go at", "将于以下时间发送："),
        ("without an answer nothing is sent (APPSTORE_CONSUMPTION_DEFAULTS is not set)",
         "没有回答就不发送（未设置 APPSTORE_CONSUMPTION_DEFAULTS）"),
        ("the business answered", "业务方已回答"),
        ("without the customer's consent nothing is sent", "没有顾客同意，不发送"),
        ("customer consented", "顾客已同意"),
        ("no consent", "顾客未同意"),
        ("consumed", "已消费"),
        ("sample content provided", "已提供试用内容"),
        ("sample content not provided", "未提供试用内容"),
        ("refund preference", "退款倾向"),
        ("Apple's 12 hours for transaction", "Apple 给交易的 12 小时"),
        ("passed at", "已于以下时间截止："),
        ("before an answer was sent: nothing was sent", "回答未发出：什么都没有发送"),
        ("no answer from the business by", "业务方在以下时间前没有回答："),
        ("the configured defaults answer", "以配置的默认值回答"),
        ("sent to Apple", "已发送给 Apple"),
        ("'s answer", " 的回答"),
        ("accepted", "已接受"),
        ("Apple refused the answer", "Apple 拒绝了回答"),
        ("not sent again", "不再发送"),
        ("sending to Apple failed", "发送给 Apple 失败"),
        ("tried again in", "将在以下秒数后重试："),
        ("not sent", "未发送"),
        ("business", "业务方"),
        ("defaults", "默认值"),
        // Small words
        ("and", "和"),
        ("the", ""),
        ("a", ""),
        ("which", "其"),
        ("is", "为"),
        ("by", "由"),
        ("to", "至"),
        ("its", "其"),
        ("with", "用"),
        ("this", "本"),
    ]
}
