// SPDX-License-Identifier: Apache-2.0
// Over 400 lines as one file: it is the console's whole vocabulary, every word in both languages
// side by side, one line each; a translator or a reviewer reads it top to bottom, and a word is
// never looked for in more than one place. It holds no logic (the language itself is chosen in
// ConsoleLanguage.swift).
import Foundation
import Gateway
import StorageCore

/// Every word the console shows, in both languages side by side (`t(chinese, english)`), so
/// neither can be forgotten.
struct ConsoleText: Sendable {
    let language: ConsoleLanguage

    private func t(_ chinese: String, _ english: String) -> String { language == .chinese ? chinese : english }

    // MARK: Chrome
    var brand: String { t("wxpay-gateway 客服控制台", "wxpay-gateway support console") }
    var switchLanguage: String { t("English", "中文") }
    var navSearch: String { t("查找订单", "Find orders") }
    var navAudit: String { t("审计日志", "Audit log") }
    var navAttention: String { t("需要处理", "Needs attention") }
    var logout: String { t("退出登录", "Sign out") }
    func signedIn(as name: String, _ role: ConsoleRole) -> String { t("已登录：\(name)（\(roleName(role))）", "Signed in: \(name) (\(roleName(role)))") }
    func roleName(_ role: ConsoleRole) -> String {
        switch role {
        case .viewer: t("查看员 viewer", "viewer")
        case .refunder: t("退款员 refunder", "refunder")
        case .admin: t("管理员 admin", "admin")
        }
    }
    var footer: String { t("所有时间均为北京时间（UTC+8），金额单位为元（App Store 以其他货币收款的订单注明币种）。每一次查找、查看和操作都记入审计日志。",
                           "All times are Beijing time (UTC+8); amounts are in yuan (an App Store order charged in another currency says which). Every search, view and action is recorded in the audit log.") }

    // MARK: Login
    var loginTitle: String { t("登录", "Sign in") }
    var username: String { t("用户名", "User name") }
    var password: String { t("密码", "Password") }
    var loginButton: String { t("登录", "Sign in") }
    var loginRefused: String { t("用户名或密码不正确。", "Wrong user name or password.") }
    func loginLocked(until: Date) -> String {
        t("这个用户名从你的地址 15 分钟内登录失败 5 次，已锁定到 \(ConsoleFormat.time(until))（北京时间）；其他地址不受影响。",
          "Five failed sign-ins for this name from your address within 15 minutes: it is locked from here until "
              + "\(ConsoleFormat.time(until)) (Beijing time). Other addresses are not affected.")
    }
    func loginPaced(retryAfter: Int) -> String {
        t("这个用户名最近从多个地址登录失败过多，登录需要排队；请 \(retryAfter) 秒后再试。",
          "This name has failed too often lately from many addresses, so its sign-ins take turns: try again in \(retryAfter) s.")
    }
    var loginBusy: String { t("同时登录的人太多，请稍后再试。", "Too many sign-ins at once; try again in a moment.") }
    var loggedOut: String { t("你已退出登录。", "You are signed out.") }
    var signInAgain: String { t("请登录（会话不存在或已过期）。", "Please sign in (no session, or it ended).") }

    // MARK: Search
    var searchTitle: String { t("查找订单", "Find orders") }
    var searchLabel: String {
        t("商户订单号、微信支付单号、用户 ID、退款单号，或 Apple 的交易 ID、原始交易 ID、appAccountToken、订单号（Order ID，MV 开头）",
          "out_trade_no, WeChat transaction_id, user id, out_refund_no, or Apple's transaction id, original transaction id, appAccountToken or Order ID (MV…)")
    }
    var stateLabel: String { t("状态", "State") }
    var anyState: String { t("全部", "Any") }
    var appLabel: String { t("应用", "App") }
    var tradeTypeLabel: String { t("交易类型", "Trade type") }
    var anyApp: String { t("全部", "Any") }
    var anyTradeType: String { t("全部", "Any") }
    var invalidApp: String { t("没有这个应用。", "No such app.") }
    var invalidTradeType: String { t("交易类型只能是 APP、JSAPI、NATIVE 或 MWEB。", "The trade type is APP, JSAPI, NATIVE or MWEB.") }
    /// The app a WeChat order went through, with its app id: `mini (wx2421b1c4370ec43b)`.
    func appName(_ order: OrderRecord) -> String? {
        order.app.map { name in order.appID.map { "\(name) (\($0))" } ?? name }
    }
    /// An order's app and trade type in one cell: `mini · JSAPI`; iOS orders have neither.
    func appAndTradeType(_ order: OrderRecord) -> String {
        guard order.channel == .wechat else { return "" }
        return (order.app.map { $0 + " · " } ?? "") + (order.tradeType ?? "APP")
    }
    var fromLabel: String { t("创建日期从", "Created from") }
    var toLabel: String { t("至", "to") }
    var beijingDateHint: String { t("北京时间日期，含首尾两天", "Beijing dates, both days included") }
    var searchButton: String { t("查找", "Search") }
    var outTradeNo: String { t("商户订单号", "out_trade_no") }
    var state: String { t("状态", "State") }
    var amount: String { t("金额", "Amount") }
    var userID: String { t("用户 ID", "User id") }
    var transactionID: String { t("微信支付单号", "transaction_id") }
    var created: String { t("创建时间", "Created") }
    var paid: String { t("支付时间", "Paid") }
    var noResults: String { t("没有符合条件的订单。", "No order matches.") }
    var unclaimedPurchaseFound: String {
        t("没有订单，但这是一笔尚未认领的 App Store 购买：在它的页面上可以把它分配给用户的订单。",
          "No order, but this is an App Store purchase nobody has claimed yet: its page is where it is assigned to the user's order.")
    }
    var openPurchase: String { t("打开这笔购买", "Open the purchase") }
    var paymentID: String { t("支付单号（微信或 Apple）", "Payment id (WeChat or Apple)") }
    func channelName(_ channel: OrderChannel) -> String {
        switch channel {
        case .wechat: t("微信支付", "WeChat Pay")
        case .apple: t("App Store（iOS）", "App Store (iOS)")
        }
    }
    func appleOrderLookup(_ appleOrderID: String, found: Int) -> String {
        found == 0
            ? t("本地没有找到；已用 Apple 的 Look Up Order ID 查询 \(appleOrderID)：没有属于本应用的交易。",
                "Nothing here; asked Apple's Look Up Order ID about \(appleOrderID): no transaction of this app.")
            : t("本地没有找到；已用 Apple 的 Look Up Order ID 查询 \(appleOrderID)，下面是其交易对应的订单。",
                "Nothing here; asked Apple's Look Up Order ID about \(appleOrderID): these are the orders of its transactions.")
    }
    var appleOrderLookupFailed: String {
        t("本地没有找到；向 Apple 查询这个订单号（Look Up Order ID）失败，请稍后再试。",
          "Nothing here, and asking Apple's Look Up Order ID failed; try again in a moment.")
    }

    // MARK: Needs attention
    var attentionTitle: String { t("需要处理的订单", "Orders that need attention") }
    var attentionHelp: String {
        t("这些订单带有需要人工处理的标记（最新的在前），各标记的含义见下。多数订单钱已收到：请核对后为用户开通或退款；amount_mismatch 的订单没有入账。",
          "These orders carry a flag that needs a person (newest first); what each flag means is below. For most the money arrived: check each, then deliver or refund; an amount_mismatch order was not paid.")
    }
    var anyFlag: String { t("全部标记", "Any flag") }
    var flags: String { t("标记", "Flags") }
    var flagsTitle: String { t("标记的含义", "What the flags mean") }
    var nothingNeedsAttention: String { t("没有需要处理的订单。", "No order needs attention.") }
    func flagExplanation(_ flag: OrderFlag) -> String {
        switch flag {
        case .unknownProduct:
            t("Apple 收了款，但产品不在商品目录中（目录漏了或 App Store Connect 先加了产品）：订单按 Apple 的实收金额记录。",
              "Apple took the money for a product missing from the catalog (a catalog mistake, or a product added in App Store Connect first): the order is recorded at what Apple charged.")
        case .matchedWithoutOrder:
            t("Apple 收了款，但用户没有对应的未支付订单：网关为这笔购买新建了订单。",
              "Apple took the money but the user had no open order for it: the gateway made an order for the purchase.")
        case .refundNeedsAttention:
            t("一笔微信退款为 CHANGE（退款异常），需在商户平台人工处理。",
              "A WeChat refund ended CHANGE and must be handled by hand in the merchant platform.")
        case .paidAfterClose:
            t("订单关闭（或过期）之后才收到付款：钱已到账，请开通或退款。",
              "The payment came after the order was closed (or expired): the money arrived, so deliver or refund.")
        case .refundOutsideGateway:
            t("微信查询显示订单已退款，但微信从未受理过网关发起的退款（在商户平台退的）：订单仍为已支付，请通知业务方。",
              "WeChat reports the order refunded, but it never accepted a refund of it from the gateway (refunded in the merchant platform): the order stays paid; tell the business.")
        case .otherTransactionID:
            t("已支付的订单又以另一个微信交易号报告为已支付（绕过网关的第二次付款，或密钥泄露）：时间线上有另一个交易号，请人工核查。",
              "WeChat reported the paid order paid again under another transaction id (a second payment made around the gateway, or a leaked key): the timeline holds the other id; a person must look.")
        case .amountMismatch:
            t("微信（经验证的通知或查询）报告的支付金额与订单不符，未入账：商户密钥可能泄露，或某一方有缺陷。时间线上有报告的金额，请人工核查。",
              "WeChat (a verified notify or query) reported another amount than the order's, and nothing was settled: the merchant key may have leaked, or either side has a bug. The timeline holds the amount reported; a person must look.")
        default: flag.rawValue
        }
    }
    var unclaimedTitle: String { t("尚未认领的 App Store 购买", "App Store purchases nobody has claimed") }
    var unclaimedHelp: String {
        t("Apple 已收款、但还没有任何订单的购买：通知里没有令牌，或报告只给了交易号或一张无法验证签名的收据，网关无法确定属于哪个用户。它不会自己入账，除非：同一 Apple 账户再为某个用户付款（对账由此得知是谁的），或 App 报告签名交易（StoreKit 2）或可验证的收据。用户可以：用付款的 Apple 账户打开 App 并“恢复购买”；或把 Apple 的收据邮件（订单号 MV…）和自己的订单号发给客服。客服可以：打开这笔购买，把它分配给该用户的订单（必须填写原因，会记入审计日志）；之后 App 再报告它时会被告知完成交易。",
          "Purchases Apple took money for that no order holds yet: the notification carried no token, or a report gave only a transaction id or a receipt whose signature could not be verified, so nothing ties them to a user. They are not credited by themselves unless the same App Store account pays again for a user (the reconciler then knows whose it is) or the app reports the signed transaction (StoreKit 2) or a verifiable receipt. The customer can: open the app signed in to the Apple account that paid and restore purchases; or write to support with Apple's receipt e-mail (order ID MV…) and their order number. Support can: open the purchase and assign it to that user's order (a reason is required; it is audited); the app's next report of it is then told to finish the transaction.")
    }
    // MARK: An unclaimed purchase
    func purchaseTitle(_ id: String) -> String { t("App Store 购买 \(id)", "App Store purchase \(id)") }
    var purchaseNotFound: String { t("网关没有这笔 App Store 交易。", "The gateway has no App Store transaction with this id.") }
    var firstSeenAt: String { t("首次见到", "First seen") }
    var creditedOrder: String { t("已入账订单", "Credited order") }
    var unclaimedState: String { t("尚未认领：没有订单", "Unclaimed: no order holds it") }
    var assignTitle: String { t("分配给订单", "Assign to an order") }
    var assignHelp: String {
        t("确认这笔购买属于谁之后（例如用户发来了 Apple 收据邮件和订单号），填写该用户的 iOS 订单号：订单必须是同一 Apple 产品、尚未支付、属于一个用户；网关会按正常入账流程入账（发出 order.paid）。",
          "Once you know whose purchase this is (the customer sent Apple's receipt e-mail and their order number), give that user's iOS order number: the order must be for the same Apple product, unpaid, and a user's; the gateway credits it as any verified purchase (order.paid goes out).")
    }
    var assignOrderLabel: String { t("订单号（out_trade_no）", "Order number (out_trade_no)") }
    var assignReasonLabel: String { t("原因（必填，记入时间线和审计日志）", "Reason (required; kept on the timeline and in the audit log)") }
    var assignButton: String { t("分配并入账", "Assign and credit") }
    var assignTakesOverLabel: String {
        t("该用户接管这份订阅：仅当确知是该用户付的款（同一 Apple 账户的另一位用户，或转手的手机）。订阅原持有人的会员在这笔付款开始时结束。",
          "This user takes the subscription over: only if you know they paid (another user of the same Apple account, or a phone passed on). The subscription's holder's access ends where this payment begins.")
    }
    var assignNeedsRole: String {
        t("分配购买需要 refunder 或 admin 角色。", "Assigning a purchase needs the refunder or admin role.")
    }
    var notAssignable: String {
        t("这笔购买已入账或已被 Apple 退款，不能再分配。", "This purchase is credited already or refunded by Apple: it cannot be assigned.")
    }
    func assigned(_ id: String) -> String {
        t("App Store 交易 \(id) 已分配给这笔订单并入账。", "App Store transaction \(id) was assigned to this order and credited.")
    }
    var supportReasonInvalid: String {
        t("请填写原因（1 到 200 个字符，不含控制字符、文字方向字符和不可见字符）。", "Give a reason (1 to 200 characters, no control, text-direction or invisible characters).")
    }
    // MARK: Attention handled
    var handleTitle: String { t("标记为已处理", "Mark handled") }
    var handleHelp: String {
        t("已经处理了上面的提醒（例如开通了课程、通知了业务方）后，标记为已处理：订单离开“需要关注”列表，标记保留为 handled.…，时间线和审计日志记下是谁、为什么。",
          "Once the warnings above are dealt with (the course delivered, the business told…), mark them handled: the order leaves the Needs attention list, each flag stays as handled.…, and the timeline and the audit log keep who and why.")
    }
    var handleButton: String { t("标记为已处理", "Mark handled") }
    var handled: String { t("已标记为已处理，订单已离开“需要关注”列表。", "Marked handled: the order left the Needs attention list.") }
    var purchasedAt: String { t("购买时间", "Purchased") }
    var firstSeenVia: String { t("首次来源", "First seen via") }
    func showing(_ first: Int, _ last: Int, more: Bool) -> String {
        more ? t("第 \(first)–\(last) 条，还有更多。", "Orders \(first)–\(last); there are more.")
            : t("第 \(first)–\(last) 条，已全部列出。", "Orders \(first)–\(last); that is all.")
    }
    var nextPage: String { t("下一页", "Next page") }
    var firstPage: String { t("回到第一页", "First page") }
    var invalidDate: String { t("日期应写作 YYYY-MM-DD。", "Dates are written YYYY-MM-DD.") }
    var invalidState: String { t("没有这个状态。", "There is no such state.") }
    var invalidCursor: String { t("翻页参数无效，已回到第一页。", "The page link is not valid; showing the first page.") }

    // MARK: Order
    func orderTitle(_ outTradeNo: String) -> String { t("订单 \(outTradeNo)", "Order \(outTradeNo)") }
    var factsTitle: String { t("订单信息", "Facts") }
    var description: String { t("商品描述", "Description") }
    var product: String { t("产品", "Product") }
    var prepayID: String { t("预支付 ID", "prepay_id") }
    var expires: String { t("过期时间", "Expires") }
    var refunded: String { t("已退款", "Refunded") }
    var refundable: String { t("可退金额", "Left to refund") }
    var signType: String { t("签名方式", "Sign type") }
    var apiVersion: String { t("接口版本", "WeChat Pay API") }
    var attach: String { t("附加数据", "attach") }
    var none: String { t("无", "none") }
    var warningsTitle: String { t("需要注意", "Needs attention") }
    var paidAfterClose: String {
        t("订单关闭后，微信仍收到了这笔付款：钱已到账，请为用户开通课程，或为其退款。",
          "WeChat took this payment after the order was closed: the money arrived, so deliver the course or refund it.")
    }
    var amountMismatch: String {
        t("微信报告的金额与订单金额不一致，订单没有按已支付处理：请在微信支付商户平台核对这笔交易。",
          "WeChat reported a different amount than the order's, so the order was not settled as paid: check this transaction in the WeChat Pay merchant platform.")
    }
    var refundNeedsAttention: String {
        t("有一笔退款为 CHANGE（退款异常）：微信无法原路退回（例如银行卡已冻结或注销），请在商户平台人工处理。",
          "A refund ended CHANGE: WeChat could not pay it back (a frozen or closed card, say). A person must handle it in the merchant platform.")
    }
    var refundOutsideGateway: String {
        t("微信查询显示此订单已转入退款，但微信从未受理过网关对它发起的退款（可能在商户平台手工退款）。订单仍为支付成功，请核实并通知业务方。",
          "WeChat's orderquery says this order is refunded, but WeChat never accepted a refund of it from the gateway (refunded by hand in the merchant platform?). The order stays paid: check, and tell the business.")
    }
    var otherTransactionID: String {
        t("微信对这笔已支付订单又报告了另一个交易号（见时间线）：可能是绕过网关的第二笔支付，或商户密钥泄露。请人工核实。",
          "WeChat reported this paid order paid again under another transaction id (see the timeline): a second payment made around the gateway, or a leaked key. A person must check.")
    }
    var refundDisagreement: String {
        t("微信关于一笔退款的回答与我们的记录不一致，没有采用：请人工核对。",
          "WeChat's answer about a refund disagreed with our record and was not applied: check it by hand.")
    }
    func otherFlag(_ flag: String) -> String { t("标记：\(flag)", "Flag: \(flag)") }
    var applePaidAfterClose: String {
        t("订单在本地关闭（到期未支付）之后，Apple 的交易才到达：钱已到账，请为用户开通课程。",
          "Apple's transaction arrived after the order was closed locally (unpaid at its expiry): the money arrived, so deliver the course.")
    }
    var unknownProduct: String {
        t("这笔 App Store 购买的产品不在商品目录中：订单按 Apple 的实收金额和币种记录（unknown_product）。请核对商品目录，并为用户开通对应课程。",
          "This App Store purchase's product is not in the catalog: the order is recorded at what Apple charged, in its currency (unknown_product). Check the catalog and deliver what the user bought.")
    }
    var matchedWithoutOrder: String {
        t("Apple 收了款，但用户没有对应的未支付订单，网关为这笔购买新建了本订单（matched_without_order）：请确认用户已获得购买的内容。",
          "Apple took the money but the user had no open order for it, so the gateway made this order for the purchase (matched_without_order): make sure the user got what they bought.")
    }
    func partlyRefunded(_ refunded: String, of amount: String) -> String {
        t("REFUND 部分退款（已退 \(refunded)，共 \(amount)）", "REFUND partly refunded (\(refunded) of \(amount))")
    }
    var recheckTitle: String { t("向微信重新查询", "Recheck with WeChat") }
    var recheckHelp: String { t("立即调用 orderquery，并按微信的回答更新订单（已关闭但其实已支付的订单会变为支付成功）。",
                                "Calls orderquery now and settles what WeChat says (a closed order WeChat holds paid becomes paid).") }
    var recheckButton: String { t("重新查询", "Recheck") }
    var recheckAppleTitle: String { t("向 App Store 重新查询", "Recheck with the App Store") }
    var recheckAppleHelp: String {
        t("立即调用 Apple 的 Get Transaction Info（有交易时）或 Get Transaction History（用户的账户），并按 Apple 的回答入账或记录退款。",
          "Asks Apple now — Get Transaction Info for the order's transaction, or Get Transaction History of the user's account — and settles what Apple says (a purchase is credited, a refund recorded).")
    }
    var appleSaid: String { t("App Store 的回答：", "The App Store said:") }
    var appleSaidNothing: String { t("这次查询没有得到 App Store 的回答。", "This recheck got no answer from the App Store.") }
    var wechatSaid: String { t("微信的回答：", "WeChat said:") }
    var wechatSaidNothing: String { t("这次查询没有得到微信的回答。", "This recheck got no answer from WeChat.") }
    var timelineTitle: String { t("时间线", "Timeline") }
    func entitlementsTitle(_ user: String) -> String { t("用户 \(user) 的权益", "Entitlements of user \(user)") }
    var entitlementsHelp: String {
        t("由该用户的全部支付和其 App Store 订阅的状态当场算出（微信会员叠加、全额退款扣回、订阅按 Apple 的到期与宽限期、课程永久）。",
          "Computed now from all of this user's payments and their App Store subscriptions' states (WeChat passes stacked, full refunds taken back, subscriptions to Apple's period end and grace period, courses for ever).")
    }
    var noEntitlements: String { t("该用户没有任何权益。", "This user holds no entitlement.") }
    func subscriptionTitle(_ original: String) -> String { t("自动续期订阅 \(original)", "Auto-renewable subscription \(original)") }
    var subscriptionHelp: String {
        t("Apple 为这个订阅收的每一笔钱（首次购买和每次续期）各是一个订单。",
          "Each payment Apple took for this subscription (the first purchase and every renewal) is an order of its own.")
    }
    var extendHelp: String {
        t("让 Apple 把当前周期的到期日延后若干天，不收费（例如服务中断后的补偿）。每个订阅一年内最多两次；记入审计日志。Apple 确认后（续期延长通知或对账的状态查询），用户的权益随之延长。",
          "Asks Apple to move the current period's end later by some days, free of charge (compensation after an outage, say). At most twice a year per subscription; recorded in the audit log. Once Apple confirms it (its renewal-extended notification, or the reconciler's status read), the user's entitlement ends later too.")
    }
    var subscriptionStateTitle: String { t("Apple 所述的订阅状态", "The subscription as Apple last told of it") }
    func subscriptionStatus(_ status: SubscriptionStatus) -> String {
        switch status {
        case .active: t("有效", "active")
        case .gracePeriod: t("宽限期（扣款失败，Apple 重试中，仍可使用）", "grace period (a charge failed, Apple retries; access kept)")
        case .billingRetry: t("账单重试（扣款失败，Apple 重试中，无权使用）", "billing retry (a charge failed, Apple retries; no access)")
        case .expired: t("已过期", "expired")
        case .revoked: t("已撤销（当期已退款或被撤销）", "revoked (the current period was refunded or revoked)")
        }
    }
    var subscriptionStatusLabel: String { t("状态", "Status") }
    var subscriptionAccessEnds: String { t("权益截止", "Access until") }
    var subscriptionAutoRenew: String { t("自动续期", "Auto-renew") }
    var subscriptionLatest: String { t("最新交易", "Latest transaction") }
    var subscriptionHeard: String { t("最近一次从 Apple 得知", "Last heard from Apple") }
    var subscriptionNoState: String {
        t("尚未收到 Apple 关于此订阅的通知；对账会向 Apple 查询。", "No word from Apple about this subscription yet; the reconciler asks Apple.")
    }
    func yesNo(_ value: Bool) -> String { value ? t("开", "on") : t("关", "off") }
    var extendDays: String { t("天数（1–90）", "Days (1–90)") }
    var extendReason: String { t("原因", "Reason") }
    var extendReasonOutage: String { t("服务问题或中断", "Service issue or outage") }
    var extendReasonSatisfaction: String { t("客户满意", "Customer satisfaction") }
    var extendReasonOther: String { t("其他", "Other") }
    var extendReasonUndeclared: String { t("不说明", "Undeclared") }
    var extendButton: String { t("延长续期日", "Extend renewal date") }
    var extended: String { t("Apple 已延长这个订阅：", "Apple extended this subscription:") }
    var extendInvalid: String { t("天数和原因不对。", "The days or the reason are not valid.") }
    var notASubscription: String { t("这个订单不属于自动续期订阅。", "This order is not part of an auto-renewable subscription.") }
    var entitlementName: String { t("权益", "Entitlement") }
    var entitlementState: String { t("状态", "State") }
    var entitlementExpires: String { t("到期", "Expires") }
    var entitlementSource: String { t("来源订单", "Source order") }
    var entitlementActive: String { t("有效", "active") }
    var entitlementLapsed: String { t("已过期", "lapsed") }
    var entitlementForever: String { t("永久", "for ever") }
    var deliveriesTitle: String { t("业务通知投递（发货与退款 webhook）", "Webhook deliveries (fulfilment and refunds)") }
    var eventID: String { t("事件 ID", "Event id") }
    var type: String { t("类型", "Type") }
    var status: String { t("状态", "Status") }
    var attempts: String { t("尝试次数", "Attempts") }
    var nextAttempt: String { t("下次尝试", "Next attempt") }
    var delivered: String { t("送达时间", "Delivered") }
    var dead: String { t("放弃时间", "Gave up") }
    var lastError: String { t("最近错误", "Last error") }
    func deliveryStatus(_ status: String) -> String {
        switch status {
        case "delivered": t("已送达 delivered", "delivered")
        case "dead": t("已放弃 dead", "dead (given up)")
        default: t("待投递 pending", "pending")
        }
    }
    var redeliverButton: String { t("重新投递", "Redeliver") }
    func redelivered(_ id: String) -> String { t("事件 \(id) 已重新排队，马上投递。", "Event \(id) is queued again and will be delivered now.") }
    var noDeliveries: String { t("没有业务通知（订单未支付，或事件尚未产生）。", "No webhook events (the order is not paid, or none was written yet).") }
    var refundsTitle: String { t("退款", "Refunds") }
    var outRefundNo: String { t("退款单号", "out_refund_no") }
    var reason: String { t("原因", "Reason") }
    var refundID: String { t("微信退款单号", "refund_id") }
    var succeeded: String { t("退款成功时间", "Succeeded") }
    var failure: String { t("失败原因", "Failure") }
    var noRefunds: String { t("没有退款。", "No refunds.") }
    var refundFormTitle: String { t("发起退款", "Refund") }
    var amountYuan: String { t("金额（元）", "Amount (yuan)") }
    var reasonVisible: String { t("原因（用户可见，必填）", "Reason (the payer sees it; required)") }
    var refundButton: String { t("退款", "Refund") }
    var refundsOff: String { t("退款未配置（没有商户 API 证书），这里不能退款。", "Refunds are not configured (no merchant API certificate), so none can be made here.") }
    var notRefundable: String { t("只有已支付的订单可以退款。", "Only a paid order can be refunded.") }
    /// `closed`: WeChat refused it and nothing went back, which "was made" would hide.
    func refundRecorded(_ number: String, _ state: String, closed: Bool) -> String {
        closed
            ? t("退款 \(number) 已关闭，没有退回任何钱：\(state)。", "Refund \(number) was closed without refunding anything: \(state).")
            : t("退款 \(number) 已提交，当前状态：\(state)。", "Refund \(number) was recorded; it is now \(state).")
    }
    var amountInvalid: String { t("金额应以元为单位，最多两位小数，例如 3.50。", "Give the amount in yuan with at most two decimals, e.g. 3.50.") }
    var refundNumberInvalid: String {
        t("表单缺少有效的退款单号（它保证重复提交只退一次）：请在此页重新提交。",
          "The form carries no valid refund number (it makes a repeated post one refund): submit it again from this page.")
    }
    /// Refusals of a refund or a redelivery (`Console.refusal`), in yuan where the API says fen.
    func refundExceeds(left: String?) -> String {
        t("超过可退金额\(left.map { "：最多还能退 \($0)" } ?? "")（处理中和异常（CHANGE）的退款仍占用其金额）。",
          "More than is left to refund\(left.map { ": at most \($0)" } ?? "") (refunds still processing or ended CHANGE keep their amount).")
    }
    var refundNumberUsed: String {
        t("这个退款单号已用于别的金额、原因或订单：此页的表单已换上新单号，核对后再提交。",
          "This refund number was used with another amount, reason or order: the form on this page has a new one; check it and submit again.")
    }
    var appleRefundsItself: String {
        t("App Store 的购买由 Apple 退款（用户向 Apple 申请），网关不能退。", "An App Store purchase is refunded by Apple (the customer asks Apple), not here.")
    }
    func refundLimitReached(_ maximum: Int) -> String {
        t("微信每笔订单最多退款 \(maximum) 次，已经用完。", "WeChat takes at most \(maximum) refunds per order, and they are used up.")
    }
    var apiVersionNotConfigured: String {
        t("此订单所用的微信支付 API 版本没有配置密钥，现在无法就它向微信发送任何请求。",
          "The WeChat Pay API version this order was made with has no keys configured, so nothing about it can be sent to WeChat now.")
    }
    var noSuchOrder: String { t("没有这个订单。", "There is no such order.") }
    var assignRefused: String { t("这笔购买不能分配给这个订单，原因如下（英文）：", "The purchase cannot be assigned to this order:") }
    var noAttentionFlag: String { t("这个订单没有需要处理的标记（可能已被处理）。", "The order carries no flag needing attention (handled already?).") }
    var redeliverNotDead: String {
        t("只有已放弃投递（dead）的事件可以重新投递；这个事件还在投递中或已送达。",
          "Only an event whose delivery was given up (dead) can be delivered again; this one is pending or delivered.")
    }
    var reasonInvalid: String {
        t("退款原因必填，最长 80 字节（约 26 个汉字；付款人会看到它），不能含控制字符、文字方向字符或不可见字符。",
          "Give a reason of at most 80 bytes (about 26 Chinese characters; the payer sees it), with no control, text-direction or invisible characters.")
    }
    var auditForOrder: String { t("这笔订单的审计记录", "Audit entries for this order") }

    // MARK: App Store orders
    var appleProductID: String { t("Apple 产品 ID", "Apple product id") }
    var appleTransactionID: String { t("Apple 交易 ID", "Apple transaction id") }
    var originalTransactionID: String { t("原始交易 ID", "Original transaction id") }
    var appAccountToken: String { t("appAccountToken（下单时发给应用）", "appAccountToken (given to the app)") }
    var environment: String { t("环境", "Environment") }
    func environmentName(_ environment: String) -> String {
        switch environment {
        case "Production": t("Production 正式环境", "Production")
        case "Sandbox": t("Sandbox 沙盒（测试，未真实收款）", "Sandbox (testing, no real money)")
        default: environment
        }
    }
    var storefront: String { t("店面（国家/地区）", "Storefront (country)") }
    var appleCharged: String { t("Apple 实收", "Apple charged") }
    var quantity: String { t("数量", "Quantity") }
    var quantityUnknown: String { t("未知（以 App Store Connect 为准）", "unknown (App Store Connect has it)") }
    var appleRefundState: String { t("App Store 退款", "App Store refund") }
    func appleRefunded(at time: String) -> String { t("Apple 已于 \(time) 退款", "Apple refunded it at \(time)") }
    func appleRefundReversed(at time: String) -> String {
        t("Apple 曾退款，已于 \(time) 撤回退款（REFUND_REVERSED）", "Apple refunded it, then reversed the refund at \(time) (REFUND_REVERSED)")
    }
    var appleNotRefunded: String { t("未退款", "Not refunded") }
    var appleRefundsExplained: String {
        t("App Store 的订单不能在这里退款：只有顾客本人可以向 Apple 申请退款（reportaproblem.apple.com 或 Apple 支持）。Apple 退款后会通知网关，订单随之变为 REFUND；Apple 询问消费情况时，见上方“消费信息”。",
          "An App Store order cannot be refunded here: only the customer can ask Apple for a refund (reportaproblem.apple.com or Apple Support). When Apple refunds, it tells the gateway and the order becomes REFUND; when Apple asks about consumption, see Consumption information above.")
    }
    var consumptionTitle: String { t("消费信息（Apple 的退款询问）", "Consumption information (Apple's refund questions)") }
    var consumptionHelp: String {
        t("顾客向 Apple 申请退款时，Apple 会在 12 小时内询问消费情况。业务系统用 PUT /v1/iap/transactions/{交易 ID}/consumption 回答；没有回答时，按配置的默认值回答。只有顾客同意时才会发送给 Apple。",
          "When a customer asks Apple for a refund, Apple asks within 12 hours how the purchase was used. The business answers with PUT /v1/iap/transactions/{transaction id}/consumption; without an answer, the configured defaults answer. Nothing is sent to Apple without the customer's consent.")
    }
    var noConsumption: String { t("Apple 没有询问过这笔订单的消费情况。", "Apple has not asked about this order's consumption.") }
    func consumptionState(_ state: ConsumptionState) -> String {
        switch state {
        case .requested: t("待回答", "waiting for an answer")
        case .answered: t("已回答，待发送", "answered, to be sent")
        case .sent: t("已发送给 Apple", "sent to Apple")
        case .notSent: t("未发送（顾客未同意）", "not sent (no consent)")
        case .refused: t("Apple 拒绝", "refused by Apple")
        case .expired: t("已过期（12 小时内未发送）", "expired (nothing sent within 12 hours)")
        }
    }
    func consumptionAnsweredBy(_ source: ConsumptionAnswerSource) -> String {
        switch source {
        case .business: t("业务方", "the business")
        case .defaults: t("默认值", "the defaults")
        }
    }
    var requested: String { t("询问时间", "Asked") }
    var deadline: String { t("截止时间", "Deadline") }
    var answeredBy: String { t("回答方", "Answered by") }
    var sentToApple: String { t("发送时间", "Sent") }

    // MARK: Refusals and errors
    var forbiddenTitle: String { t("没有权限", "Not allowed") }
    var forbidden: String { t("你的角色没有这项权限，什么都没有改变。", "Your role does not allow this; nothing was changed.") }
    var csrfTitle: String { t("请求被拒绝", "Request refused") }
    var csrfRefused: String {
        t("这个表单已失效或不是本页面提交的（CSRF 校验失败），什么都没有改变。请回到页面刷新后再试。",
          "This form is stale or did not come from this console (the CSRF check failed); nothing was changed. Go back, reload the page and try again.")
    }
    var formRefusedTitle: String { t("表单无法读取", "The form could not be read") }
    func formRefused(_ refusal: ConsoleHTTP.FormRefusal) -> String {
        switch refusal {
        case .notAForm:
            t("提交的内容不是本控制台的表单，什么都没有改变。请回到页面刷新后再试。",
              "What was sent is not a console form; nothing was changed. Go back, reload the page and try again.")
        case .repeatedField(let name):
            t("表单中的字段\(name.map { "“\($0)”" } ?? "")出现了不止一次，无法确定用哪一个，什么都没有改变。请回到页面刷新后再试。",
              "The form gives a field\(name.map { " (“\($0)”)" } ?? "") more than once, so which one was meant cannot be told; nothing was changed. Go back, reload the page and try again.")
        }
    }
    var notFoundTitle: String { t("找不到", "Not found") }
    var orderNotFound: String { t("没有这笔订单。", "There is no such order.") }
    var eventNotFound: String { t("这笔订单没有这个业务通知事件。", "This order has no such webhook event.") }
    var errorTitle: String { t("出错了", "Something failed") }
    var internalError: String { t("网关出错，没有完成；可以重试。", "The gateway failed and did not finish; it is safe to try again.") }
    var back: String { t("返回", "Back") }

    // MARK: Audit
    var auditTitle: String { t("审计日志", "Audit log") }
    var actor: String { t("操作人", "Who") }
    var role: String { t("角色", "Role") }
    var channel: String { t("渠道", "Channel") }
    var action: String { t("操作", "Action") }
    var order: String { t("订单", "Order") }
    var target: String { t("对象", "Target") }
    var address: String { t("来源地址", "From") }
    var outcome: String { t("结果", "Outcome") }
    var detail: String { t("详情", "Detail") }
    var time: String { t("时间", "When") }
    var filterButton: String { t("筛选", "Filter") }
    var noEntries: String { t("没有记录。", "No entries.") }
    func actionName(_ action: String) -> String {
        switch action {
        case "login": t("登录", "sign in")
        case "logout": t("退出", "sign out")
        case "search": t("查找", "search")
        case "view_order": t("查看订单", "view order")
        case "recheck": t("重新查询", "recheck")
        case "refund": t("退款", "refund")
        case "redeliver": t("重新投递", "redeliver")
        case "view_audit": t("查看审计日志", "view audit log")
        case "api_lookup": t("API 查找", "API lookup")
        case "api_recheck": t("API 重新查询", "API recheck")
        case "api_redrive": t("API 重新投递", "API redrive")
        case "api_read_order": t("API 读取订单", "API read order")
        case "api_read_refund": t("API 读取退款", "API read refund")
        case "api_attention": t("API 读取需要处理的订单", "API attention list")
        case "view_attention": t("查看需要处理的订单", "view attention list")
        default: action
        }
    }

    // MARK: Timeline
    /// A plain-language name for a timeline kind (the kind itself is shown beside it).
    func eventName(_ kind: String) -> String {
        switch kind {
        case "created": t("订单创建", "order created")
        case "prepay": t("微信下单成功", "prepay issued by WeChat")
        case "unifiedorder_failed": t("微信下单失败", "unifiedorder failed")
        case "closeorder_failed": t("关单失败", "closeorder failed")
        case "notify_received": t("收到支付通知", "payment notify received")
        case "notify_refused": t("支付通知无法使用（已拒绝）", "payment notify refused: unusable")
        case "amount_mismatch": t("金额不一致", "amount mismatch")
        case "orderquery": t("向微信查询", "asked WeChat (orderquery)")
        case "orderquery_failed": t("查询失败", "orderquery failed")
        case "recheck": t("客服要求重新查询", "support asked for a recheck")
        case "reconcile": t("对账查询", "reconciler asked WeChat")
        case "reconcile_failed": t("对账查询失败", "reconciler query failed")
        case "bill": t("对账单差异", "bill difference")
        case "bill_failed": t("对账单处理失败", "bill check failed")
        case "fulfilment_delivered": t("发货通知已送达", "fulfilment delivered")
        case "fulfilment_dead": t("发货通知已放弃", "fulfilment given up")
        case "fulfilment_redriven": t("发货通知重新投递", "fulfilment redriven")
        case "state_changed": t("状态变化", "state changed")
        case "refund_requested": t("退款已记录", "refund recorded")
        case "refund_accepted": t("微信受理退款", "refund accepted by WeChat")
        case "refund_failed": t("退款请求失败", "refund call failed")
        case "refund_state_changed": t("退款状态变化", "refund state changed")
        case "refund_amount_mismatch": t("退款金额不一致", "refund amount mismatch")
        case "refund_notify_conflict": t("退款通知与记录不符", "refund notify disagreed")
        case "refund_outside_gateway": t("在网关之外退款", "refunded outside the gateway")
        case "transaction_mismatch": t("另一笔微信交易号", "another WeChat transaction id")
        case "recheck_failed": t("重新查询失败", "recheck failed")
        case "appstore_verified": t("App Store 交易已验证", "App Store transaction verified")
        case "appstore_match": t("App Store 交易匹配订单", "App Store transaction matched")
        case "appstore_report": t("应用上报交易", "the app reported a transaction")
        case "appstore_notification": t("App Store 服务器通知", "App Store server notification")
        case "appstore_refund": t("App Store 退款", "App Store refund")
        case "appstore_quantity": t("App Store 购买数量补全", "App Store quantity filled in")
        case "appstore_product": t("App Store 购买归入目录商品", "App Store purchase credited to a catalog product")
        case "appstore_consumption": t("Apple 询问消费信息", "Apple's consumption request")
        case "attention_handled": t("客服标记为已处理", "marked handled by support")
        default: kind
        }
    }

    /// A timeline line's detail: as written in English, translated phrase by phrase in Chinese;
    /// its amounts in fen with their yuan first (`ConsoleFormat.yuanAmounts`).
    func eventDetail(_ detail: String) -> String {
        let withYuan = ConsoleFormat.yuanAmounts(in: detail)
        return language == .english ? withYuan : ConsoleTimelineWords.chinese(withYuan)
    }

    /// `SUCCESS 支付成功`, with the English gloss in English.
    func stateLabel(_ state: OrderState) -> String {
        let english: String =
            switch state {
            case .notPay: "not paid"
            case .success: "paid"
            case .refund: "refunded"
            case .closed: "closed"
            case .revoked: "revoked"
            case .payError: "payment failed"
            case .userPaying: "paying"
            }
        return t("\(state.rawValue) \(ConsoleFormat.chinese(state))", "\(state.rawValue) \(ConsoleFormat.chinese(state)) · \(english)")
    }

    func refundStateLabel(_ state: RefundState) -> String {
        let english: String =
            switch state {
            case .processing: "processing"
            case .success: "refunded"
            case .change: "needs a person"
            case .refundClose: "closed"
            }
        return t("\(state.rawValue) \(ConsoleFormat.chinese(state))", "\(state.rawValue) \(ConsoleFormat.chinese(state)) · \(english)")
    }
}
