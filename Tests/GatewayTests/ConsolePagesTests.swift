// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import Storage
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
        for hostile in ["https://evil.example/", "//evil.example/console/", "/console/\\\\evil", "/elsewhere", nil] {
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
        let directory = try ConsoleUserDirectory(path: path)
        #expect(directory.user("alice")?.role == .viewer && directory.user("bob") == nil)
        try ConsoleUserFile.update(path: path) { users in
            users[0].role = .admin
            users.append(ConsoleUser(name: "bob", role: .refunder, password: hash))
        }
        #expect(directory.user("alice")?.role == .admin && directory.user("bob")?.role == .refunder)
        try ConsoleUserFile.write("alice:nonsense\n", to: path)
        #expect(directory.user("bob")?.role == .refunder, "a broken file leaves the previous users in force")
        if case .success = directory.reload() { Issue.record("a broken file must not load") }
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
