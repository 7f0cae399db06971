// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
@testable import GatewayConsole
import StorageCore
import Synchronization
import Testing

/// The console's pages rendered without a browser or a server: escaping, amounts, times, state
/// names, warnings, what each role is offered, both languages.
struct ConsolePagesTests {
    static let created = Date(timeIntervalSince1970: 1_796_019_823)  // 2026-11-30 14:23:43 Beijing time

    static func order(_ state: OrderState = .success, flags: Set<OrderFlag> = [], description: String = "Swift 入门课")
        -> OrderRecord
    {
        var order = OrderRecord(
            outTradeNo: "demo-0001", amount: 990, description: description, clientIP: "203.0.113.7", userID: "u-42",
            signType: "HMAC-SHA256", timeExpire: "20261130162343", expiresAt: created.addingTimeInterval(7200),
            createdAt: created, parametersDigest: "d")
        order.state = state
        order.flags = flags
        if state == .success || state == .refund {
            order.transactionID = "4200001234"
            order.paidAt = created.addingTimeInterval(30)
        }
        return order
    }

    static func chrome(_ role: ConsoleRole?, _ language: ConsoleLanguage = .chinese) -> ConsoleChrome {
        let user = role.map { ConsoleUser(name: "alice", role: $0, password: PasswordHash(unmatchable: .standard)) }
        return ConsoleChrome(language: language, user: user, csrf: "TOKEN", here: "/console/orders/demo-0001")
    }

    static func model(_ order: OrderRecord = order(), events: [OrderEvent] = [], outbox: [OutboxEvent] = [],
                      refunds: [RefundRecord] = [], refundsConfigured: Bool = true) -> ConsolePages.Order {
        ConsolePages.Order(order: order, events: events, outbox: outbox, refunds: refunds,
                           refundsConfigured: refundsConfigured, notice: nil, refundNumber: "R-FORM-1")
    }

    @Test func amountsAreYuanWithTwoDecimalsAndTypedYuanBecomesFen() {
        #expect(ConsoleFormat.yuan(990) == "¥9.90")
        #expect(ConsoleFormat.yuan(1) == "¥0.01")
        #expect(ConsoleFormat.yuan(100_000_000) == "¥1000000.00")
        for (typed, fen) in [("3", 300), ("3.5", 350), ("3.50", 350), ("¥9.90", 990), (" 0.01 ", 1), ("￥12", 1200)] {
            #expect(ConsoleFormat.fen(fromYuan: typed) == fen, "\(typed)")
        }
        for typed in ["", "3.505", "-1", "1,000", "1e3", "abc", ".5", "3.", "１２", "999999999"] {
            #expect(ConsoleFormat.fen(fromYuan: typed) == nil, "\(typed)")
        }
    }

    @Test func aTimelineLinesAmountsInFenAreShownWithTheirYuanFirstInBothLanguages() {
        let line = "R-1: refundquery reports 350 fen, the refund is 990 fen"
        #expect(ConsoleFormat.yuanAmounts(in: line) == "R-1: refundquery reports ¥3.50 (350 fen), the refund is ¥9.90 (990 fen)")
        #expect(ConsoleLanguage.english.text.eventDetail("iOS order for vip_month (1 fen)") == "iOS order for vip_month (¥0.01 (1 fen))")
        #expect(ConsoleLanguage.chinese.text.eventDetail("notify reported 1 fen, order is 990 fen")
                    .contains("¥0.01 (1 分)"))
        // A create's `amount=` too, but not another key's or an amount glued to more.
        #expect(ConsoleFormat.yuanAmounts(in: "amount=990 expires_in=1800") == "amount=¥9.90 (990 fen) expires_in=1800")
        // Digits ending an id, a word that only starts with fen, a number too long: as written.
        for unchanged in ["R-350 fen", "out_trade_no A350 fen", "350 fence", "350fen", "1234567890123 fen", "990 fen_x", "fen 990",
                          "refund_amount=990", "amount=990x", "amount=1234567890123"] {
            #expect(ConsoleFormat.yuanAmounts(in: unchanged) == unchanged, "\(unchanged)")
        }
    }

    @Test func timesAreBeijingTimeAndDatesAreBeijingDays() {
        #expect(ConsoleFormat.time(Self.created) == "2026-11-30 14:23:43")
        let day = ConsoleFormat.beijingDay("2026-11-30")
        #expect(day.map(ConsoleFormat.time) == "2026-11-30 00:00:00")
        #expect(ConsoleFormat.beijingDay("20261130") == nil && ConsoleFormat.beijingDay("2026-02-30") == nil)
    }

    @Test func everythingAnOrderCarriesIsEscaped() {
        let hostile = "<script>alert('x')</script>&\""
        let page = ConsolePages.order(Self.chrome(.admin), Self.model(Self.order(description: hostile), events: [
            OrderEvent(id: 1, outTradeNo: "demo-0001", at: Self.created, kind: "created", detail: "<img src=x onerror=1>"),
        ])).text
        #expect(!page.contains("<script>") && !page.contains("<img"))
        #expect(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"))
        #expect(!page.lowercased().contains("<script"))
    }

    @Test func statesShowTheirChineseNameBesideWeChatsWord() {
        let zh = ConsoleLanguage.chinese.text
        let en = ConsoleLanguage.english.text
        #expect(zh.stateLabel(.success) == "SUCCESS 支付成功")
        #expect(zh.stateLabel(.notPay) == "NOTPAY 未支付")
        #expect(en.stateLabel(.closed) == "CLOSED 已关闭 · closed")
        #expect(zh.refundStateLabel(.change) == "CHANGE 退款异常")
        for state in OrderState.allCases { #expect(zh.stateLabel(state).hasPrefix(state.rawValue + " ")) }
    }

    @Test func flagsAndTroublingTimelineEntriesAreWarningsInPlainWords() {
        let text = ConsoleLanguage.chinese.text
        let events = [OrderEvent(id: 1, outTradeNo: "demo-0001", at: Self.created, kind: "amount_mismatch", detail: "notify total_fee=1")]
        let warnings = ConsolePages.warnings(Self.model(Self.order(flags: [.paidAfterClose, .refundNeedsAttention]), events: events), text)
        #expect(warnings == [text.paidAfterClose, text.refundNeedsAttention, text.amountMismatch])
        let page = ConsolePages.order(Self.chrome(.viewer), Self.model(Self.order(flags: [.paidAfterClose]))).text
        #expect(page.contains("id=\"warnings\"") && page.contains(text.paidAfterClose))
        #expect(!ConsolePages.order(Self.chrome(.viewer), Self.model()).text.contains("id=\"warnings\""))
    }

    @Test func moneyIsYuanForCNYAndTheCurrencysOwnDecimalsOtherwise() {
        #expect(ConsoleFormat.money(990, currency: nil) == "¥9.90")
        #expect(ConsoleFormat.money(990, currency: "CNY") == "¥9.90")
        #expect(ConsoleFormat.money(1299, currency: "USD") == "12.99 USD")
        #expect(ConsoleFormat.money(5, currency: "EUR") == "0.05 EUR")
        #expect(ConsoleFormat.money(120, currency: "JPY") == "120 JPY")
        #expect(ConsoleFormat.money(1234, currency: "KWD") == "1.234 KWD")
    }

    static func appleOrder(_ state: OrderState = .refund, flags: Set<OrderFlag> = [], currency: String? = nil) -> OrderRecord {
        var order = order(state, flags: flags)
        order.channel = .apple
        order.transactionID = nil
        order.signType = ""
        order.appleProductID = "com.example.courses.swift101"
        order.appleTransactionID = "2000000000000042"
        order.originalTransactionID = "2000000000000042"
        order.appAccountToken = "6f1c0a44-2b1c-4d1f-9e6e-0a9c5b0f3a11"
        order.environment = "Production"
        order.currency = currency
        return order
    }

    static func appleModel(_ order: OrderRecord = appleOrder(), revoked: Bool = true) -> ConsolePages.Order {
        var model = model(order, events: [
            OrderEvent(id: 1, outTradeNo: order.outTradeNo, at: created, kind: "appstore_match",
                       detail: "matched by app_account_token: the transaction carries this order's token; via App Store report (signed_transaction)"),
        ])
        model.appleTransaction = AppleTransactionRecord(
            facts: AppleTransactionFacts(transactionID: "2000000000000042", originalTransactionID: "2000000000000042",
                                         productID: "com.example.courses.swift101", environment: "Production",
                                         purchaseDate: created, revocationDate: revoked ? created.addingTimeInterval(3600) : nil,
                                         price: 9900, currency: "CNY", storefront: "CHN"),
            outTradeNo: order.outTradeNo, source: "App Store report", firstSeenAt: created)
        model.consumption = [ConsumptionRequestRecord(
            id: "n-1", transactionID: "2000000000000042", outTradeNo: order.outTradeNo, environment: "Production",
            reason: "UNINTENDED_PURCHASE", requestedAt: created, deadline: created.addingTimeInterval(43200))]
        return model
    }

    @Test func anAppStoreOrderShowsApplesFactsAndExplainsRefundsInsteadOfOfferingThem() {
        for language in ConsoleLanguage.allCases {
            let text = language.text
            let page = ConsolePages.order(Self.chrome(.admin, language), Self.appleModel()).text
            for id in ["fact-apple-transaction-id", "fact-original-transaction-id", "fact-app-account-token", "fact-environment",
                       "fact-storefront", "fact-apple-charged", "fact-apple-refund", "refunds-apple", "consumption"] {
                #expect(page.contains("id=\"\(id)\""), "\(language): \(id)")
            }
            #expect(page.contains("2000000000000042") && page.contains("CHN") && page.contains(text.channelName(.apple)))
            #expect(page.contains(HTML.escape(text.appleRefunded(at: "2026-11-30 15:23:43"))))
            // What the API says was refunded: the whole purchase, not ¥0.00.
            #expect(page.contains("<dd id=\"fact-refunded\">¥9.90</dd>"))
            // None of WeChat's facts or forms.
            #expect(!page.contains("id=\"refund\"") && !page.contains("id=\"fact-transaction-id\""))
            #expect(!page.contains(text.prepayID) && !page.contains(text.signType))
            #expect(page.contains(text.recheckAppleTitle) && !page.contains(text.recheckTitle))
            #expect(page.contains(text.consumptionState(.requested)))
            #expect(page.contains(text.eventName("appstore_match")))
        }
        let zh = ConsolePages.order(Self.chrome(.admin), Self.appleModel()).text
        #expect(zh.contains("按 app_account_token 匹配") && !zh.contains("matched by app_account_token"))
        let notRefunded = ConsolePages.order(Self.chrome(.admin), Self.appleModel(Self.appleOrder(.success), revoked: false)).text
        #expect(notRefunded.contains(ConsoleLanguage.chinese.text.appleNotRefunded) && notRefunded.contains("<dd id=\"fact-refunded\">¥0.00</dd>"))
    }

    @Test func anOrderInAnotherCurrencyIsShownInIt() {
        let order = Self.appleOrder(.success, flags: [.unknownProduct, .matchedWithoutOrder], currency: "USD")
        let text = ConsoleLanguage.english.text
        let page = ConsolePages.order(Self.chrome(.viewer, .english), Self.appleModel(order, revoked: false)).text
        #expect(page.contains("<dd id=\"fact-amount\">9.90 USD</dd>"))
        #expect(page.contains(HTML.escape(text.unknownProduct)) && page.contains(HTML.escape(text.matchedWithoutOrder)))
        let search = ConsolePages.search(Self.chrome(.viewer, .english), ConsolePages.Search(orders: [order, Self.order()])).text
        #expect(search.contains("9.90 USD") && search.contains("¥9.90"))
        #expect(search.contains("data-channel=\"apple\"") && search.contains("data-channel=\"wechat\""))
        #expect(search.contains("2000000000000042") && search.contains("4200001234"))
    }

    @Test func aPartlyRefundedOrderSaysHowMuchOfHowMuch() {
        let refund = RefundRecord(outRefundNo: "R1", outTradeNo: "demo-0001", amount: 350, totalFee: 990, reason: "r", notifyURL: nil,
                                  parametersDigest: "d", state: .success, createdAt: Self.created)
        let partly = ConsolePages.order(Self.chrome(.viewer), Self.model(Self.order(.refund), refunds: [refund])).text
        #expect(partly.contains(ConsoleLanguage.chinese.text.partlyRefunded("¥3.50", of: "¥9.90")))
        var whole = refund
        whole.amount = 990
        let fully = ConsolePages.order(Self.chrome(.viewer), Self.model(Self.order(.refund), refunds: [whole])).text
        #expect(!fully.contains("partial") && fully.contains(ConsoleLanguage.chinese.text.stateLabel(.refund)))
    }

    @Test func theAttentionPageListsFlaggedOrdersWithTheirFlagsExplained() {
        for language in ConsoleLanguage.allCases {
            let text = language.text
            let order = Self.appleOrder(.success, flags: [.unknownProduct], currency: "USD")
            let page = ConsolePages.attention(Self.chrome(.viewer, language), ConsolePages.Attention(orders: [order])).text
            #expect(page.contains("id=\"results\"") && page.contains(">unknown_product</span>"))
            for flag in OrderFlag.needingAttention { #expect(page.contains(HTML.escape(text.flagExplanation(flag)))) }
            let empty = ConsolePages.attention(Self.chrome(.viewer, language), ConsolePages.Attention(flag: .paidAfterClose)).text
            #expect(empty.contains("id=\"no-results\"") && empty.contains("class=\"current\">paid_after_close"))
        }
    }

    @Test("Every flag on the attention list is explained in words in both languages, never by its own key")
    func everyAttentionFlagIsExplainedInWords() {
        for language in ConsoleLanguage.allCases {
            for flag in OrderFlag.needingAttention {
                let words = language.text.flagExplanation(flag)
                #expect(words != flag.rawValue && words.count > 20, "\(flag) in \(language)")
            }
        }
    }

    @Test("The attention page lists the App Store purchases nobody has claimed, linked to their own page")
    func theAttentionPageListsUnclaimedPurchases() {
        let facts = AppleTransactionFacts(transactionID: "2000000100000001", originalTransactionID: "2000000100000001",
                                          productID: "com.example.courses.ios301", environment: "Production",
                                          purchaseDate: Self.created)
        let row = AppleTransactionRecord(facts: facts, source: "notification ONE_TIME_CHARGE", firstSeenAt: Self.created)
        for language in ConsoleLanguage.allCases {
            let page = ConsolePages.attention(Self.chrome(.viewer, language), ConsolePages.Attention(unclaimed: [row])).text
            #expect(page.contains("id=\"unclaimed\"") && page.contains(HTML.escape(language.text.unclaimedTitle)))
            #expect(page.contains("href=\"/console/apple-transactions/2000000100000001\""))
            let none = ConsolePages.attention(Self.chrome(.viewer, language), ConsolePages.Attention()).text
            #expect(!none.contains("id=\"unclaimed\""))
        }
    }

    @Test func eachRoleIsOfferedOnlyWhatItMayDo() {
        let dead = OutboxEvent(id: "evt_1", outTradeNo: "demo-0001", type: "order.paid", payload: "{}", createdAt: Self.created,
                               attempts: 9, nextAttemptAt: Self.created, deadAt: Self.created, lastError: "HTTP 500")
        func page(_ role: ConsoleRole) -> String { ConsolePages.order(Self.chrome(role), Self.model(outbox: [dead])).text }
        #expect(page(.viewer).contains("/recheck\"") && !page(.viewer).contains("/refunds\"") && !page(.viewer).contains("/redeliver\""))
        #expect(page(.refunder).contains("/refunds\"") && page(.refunder).contains("/outbox/evt_1/redeliver\""))
        #expect(!page(.refunder).contains("id=\"order-audit\"") && page(.admin).contains("id=\"order-audit\""))
        for role in ConsoleRole.allCases { #expect(page(role).contains("<ol id=\"timeline\">")) }
    }

    @Test func theRefundFormNeedsRefundsConfiguredAndAPaidOrder() {
        let chrome = Self.chrome(.refunder)
        let on = ConsolePages.order(chrome, Self.model()).text
        #expect(on.contains("id=\"refund\"") && on.contains("value=\"R-FORM-1\"") && on.contains("¥9.90"))
        let off = ConsolePages.order(chrome, Self.model(refundsConfigured: false)).text
        #expect(!off.contains("id=\"refund\"") && off.contains("id=\"refunds-off\""))
        let unpaid = ConsolePages.order(chrome, Self.model(Self.order(.notPay))).text
        #expect(!unpaid.contains("id=\"refund\"") && unpaid.contains("id=\"refunds-unpaid\""))
    }

    @Test func everyPageIsCompleteHTMLWithNoScriptAndTheSessionsTokenInEveryPostForm() {
        let pages = [
            ConsolePages.login(Self.chrome(nil), csrf: "PRE", username: "", notice: nil),
            ConsolePages.search(Self.chrome(.viewer), ConsolePages.Search(orders: [Self.order()])),
            ConsolePages.order(Self.chrome(.admin), Self.model()),
            ConsolePages.audit(Self.chrome(.admin), ConsolePages.Audit()),
            ConsolePages.attention(Self.chrome(.viewer), ConsolePages.Attention(orders: [Self.appleOrder(flags: [.unknownProduct])])),
            ConsolePages.order(Self.chrome(.admin), Self.appleModel()),
            ConsolePages.message(Self.chrome(.viewer), title: "t", "m"),
        ].map(\.text)
        for page in pages {
            #expect(page.hasPrefix("<!DOCTYPE html>") && page.contains("</html>"))
            #expect(!page.lowercased().contains("<script") && !page.contains(" on") || !page.contains("onclick"))
            #expect(page.contains("<link rel=\"stylesheet\" href=\"/console/console.css\">"))
            let posts = page.components(separatedBy: "method=\"post\"").count - 1
            let tokens = page.components(separatedBy: "name=\"csrf\"").count - 1
            #expect(posts == tokens, "every POST form has its token")
        }
    }

    @Test func chineseIsTheDefaultAndEnglishIsChosenByAcceptLanguageOrTheCookie() {
        #expect(ConsoleLanguage.choose(cookie: nil, acceptLanguage: nil) == .chinese)
        #expect(ConsoleLanguage.choose(cookie: nil, acceptLanguage: "en-US,en;q=0.9") == .english)
        #expect(ConsoleLanguage.choose(cookie: nil, acceptLanguage: "fr-FR,en;q=0.5,zh-CN;q=0.8") == .chinese)
        #expect(ConsoleLanguage.choose(cookie: nil, acceptLanguage: "de, fr") == .chinese)
        #expect(ConsoleLanguage.choose(cookie: nil, acceptLanguage: "zh;q=0, en") == .english)
        #expect(ConsoleLanguage.choose(cookie: "en", acceptLanguage: "zh-CN") == .english)
        #expect(ConsoleLanguage.choose(cookie: "klingon", acceptLanguage: "en") == .english)
        let zh = ConsolePages.search(Self.chrome(.viewer), ConsolePages.Search()).text
        let en = ConsolePages.search(Self.chrome(.viewer, .english), ConsolePages.Search()).text
        #expect(zh.contains("lang=\"zh-CN\"") && zh.contains("查找订单"))
        #expect(en.contains("lang=\"en\"") && en.contains("Find orders") && !en.contains("查找订单"))
    }

    @Test func returnLinksStayInsideTheConsole() {
        #expect(ConsoleHTTP.safeReturn("/console/orders/X") == "/console/orders/X")
        #expect(ConsoleHTTP.safeReturn("/console/orders/a.b..c?q=../x") == "/console/orders/a.b..c?q=../x")
        for hostile in ["https://evil.example/", "//evil.example/console/", "/console/\\\\evil", "/elsewhere", nil,
                        "/console/../v1/orders", "/console/./x/..", "/console/%2e%2e/v1", "/console/.%2E/metrics", "/console/..",
                        "/console/..%2fmetrics", "/console/%2E%2E%2Fmetrics", "/console/..;/metrics", "/console/%5c%2e%2e%5cmetrics",
                        "/console/%00"] {
            #expect(ConsoleHTTP.safeReturn(hostile) == "/console/", "\(hostile ?? "nil")")
        }
    }
}

/// The user file: its format, its atomic writes, and the password hashes in it.
struct ConsoleUserFileTests {
    static func file() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("users-\(UUID().uuidString)").path
    }

    @Test func aPasswordHashIsScryptAtOWASPsCostWithItsOwnSaltAndMatchesOnlyItsPassword() throws {
        let hash = ConsoleRig.hash("correct horse battery")
        #expect(hash.encoded.hasPrefix("$scrypt$ln=17,r=8,p=1$"))
        #expect(hash.matches("correct horse battery") && !hash.matches("correct horse batterY"))
        let again = try #require(PasswordHash(encoded: hash.encoded))
        #expect(again == hash)
        #expect(!hash.description.contains(hash.encoded.split(separator: "$").last!))
        // Weaker than the floor, or beyond the ceiling: not accepted from a file.
        for weak in ["$scrypt$ln=10,r=8,p=1$", "$scrypt$ln=17,r=1,p=1$", "$scrypt$ln=30,r=8,p=1$", "$pbkdf2$i=1$"] {
            let parts = hash.encoded.split(separator: "$")
            #expect(PasswordHash(encoded: weak + parts[2] + "$" + parts[3]) == nil, "\(weak)")
        }
    }

    @Test func theFileIsWrittenWholeWithMode0600AndReadBack() throws {
        let path = Self.file()
        defer { try? FileManager.default.removeItem(atPath: path); try? FileManager.default.removeItem(atPath: path + ".lock") }
        let hash = ConsoleRig.hash("correct horse battery")
        try ConsoleUserFile.update(path: path) { users in
            users.append(ConsoleUser(name: "alice", role: .admin, password: hash))
            users.append(ConsoleUser(name: "bob", role: .viewer, password: hash))
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try ConsoleUserFile.read(path: path).map(\.name) == ["alice", "bob"])
        let inode = attributes[.systemFileNumber] as? Int
        try ConsoleUserFile.update(path: path) { users in users.removeAll { $0.name == "bob" } }
        let after = try FileManager.default.attributesOfItem(atPath: path)
        #expect(after[.systemFileNumber] as? Int != inode, "a new file renamed over the old one, never rewritten in place")
        #expect((after[.posixPermissions] as? Int) == 0o600)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: (path as NSString).deletingLastPathComponent)
            .filter { $0.hasPrefix("." + (path as NSString).lastPathComponent + ".tmp") }
        #expect(leftovers.isEmpty)
        // A change that throws writes nothing.
        #expect(throws: ConsoleUserFileError.self) {
            try ConsoleUserFile.update(path: path) { users throws(ConsoleUserFileError) in
                users.removeAll()
                throw .noSuchUser("x")
            }
        }
        #expect(try ConsoleUserFile.read(path: path).map(\.name) == ["alice"])
    }

    @Test func aFileWithAnUnknownRoleABadNameABadHashOrADuplicateIsRefusedNamingTheLine() {
        let hash = ConsoleRig.hash("correct horse battery").encoded
        let cases = [
            "alice:superuser:\(hash)\n",
            "Alice:admin:\(hash)\n",
            "alice:admin:plaintext\n",
            "alice:admin:\(hash)\nalice:viewer:\(hash)\n",
            "alice:admin\n",
        ]
        for text in cases {
            #expect(throws: ConsoleUserFileError.self, "\(text.prefix(20))") { try ConsoleUserFile.parse("# comment\n\n" + text) }
        }
        do {
            _ = try ConsoleUserFile.parse("# c\nalice:superuser:\(hash)\n")
        } catch {
            #expect(error.description == "line 2: unknown role (viewer, refunder or admin)")
            #expect(!error.description.contains(hash))
        }
    }

    @Test func theDirectorySeesAnEditWithoutAReloadAndKeepsTheOldUsersWhenTheFileBreaks() throws {
        let path = Self.file()
        defer { try? FileManager.default.removeItem(atPath: path); try? FileManager.default.removeItem(atPath: path + ".lock") }
        let hash = ConsoleRig.hash("correct horse battery")
        try ConsoleUserFile.update(path: path) { $0 = [ConsoleUser(name: "alice", role: .viewer, password: hash)] }
        // What the reload gauge is told: every re-read's outcome, a change's as well as SIGHUP's.
        let outcomes = Mutex<[Bool]>([])
        let directory = try ConsoleUserDirectory(path: path, reported: { applied in outcomes.withLock { $0.append(applied) } })
        #expect(directory.user("alice")?.role == .viewer && directory.user("bob") == nil)
        try ConsoleUserFile.update(path: path) { users in
            users[0].role = .admin
            users.append(ConsoleUser(name: "bob", role: .refunder, password: hash))
        }
        #expect(directory.user("alice")?.role == .admin && directory.user("bob")?.role == .refunder)
        #expect(outcomes.withLock { $0 } == [true])
        try ConsoleUserFile.write("alice:nonsense\n", to: path)
        #expect(directory.user("bob")?.role == .refunder, "a broken file leaves the previous users in force")
        #expect(outcomes.withLock { $0 } == [true, false])
        if case .success = directory.reload() { Issue.record("a broken file must not load") }
        #expect(outcomes.withLock { $0 } == [true, false, false])
        try ConsoleUserFile.write(ConsoleUserFile.render([ConsoleUser(name: "alice", role: .viewer, password: hash)]), to: path)
        #expect(directory.user("alice")?.role == .viewer && directory.user("bob") == nil)
        #expect(outcomes.withLock { $0 } == [true, false, false, true])
        #expect(throws: ConsoleUserFileError.self) { try ConsoleUserDirectory(path: path + ".missing") }
    }

    @Test func concurrentEditsTakeTurnsAndNoneIsLost() async throws {
        let path = Self.file()
        defer { try? FileManager.default.removeItem(atPath: path); try? FileManager.default.removeItem(atPath: path + ".lock") }
        let hash = ConsoleRig.hash("correct horse battery")
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask {
                    await withCheckedContinuation { continuation in
                        Thread.detachNewThread {
                            try? ConsoleUserFile.update(path: path) { users in
                                users.append(ConsoleUser(name: "user\(index)", role: .viewer, password: hash))
                            }
                            continuation.resume()
                        }
                    }
                }
            }
        }
        #expect(try Set(ConsoleUserFile.read(path: path).map(\.name)) == Set((0..<16).map { "user\($0)" }))
    }
}
