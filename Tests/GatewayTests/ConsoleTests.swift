// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
@testable import Gateway
@testable import GatewayConsole
import HTTP
import Observability
import StorageCore
import StoreTestSupport
import Testing
import WeChatPaySimulator

/// The support console over HTTP, in process and over sockets: sign-in and its cookie, the
/// lockout, sessions' timeouts, CSRF, roles, the pages and their actions, and the audit log.
/// (The same flows in a real browser: ConsoleBrowserTests.)
@Suite(.serialized)
struct ConsoleTests {
    static let securityHeaders = ["Content-Security-Policy", "X-Frame-Options", "Referrer-Policy", "Cache-Control"]

    static func expectSecured(_ response: GatewayRig.Response, _ comment: String = "") {
        #expect(response.headers["Content-Security-Policy"]?.contains("default-src 'none'") == true, "\(comment)")
        #expect(response.headers["Content-Security-Policy"]?.contains("script-src") == false, "no script source at all: \(comment)")
        #expect(response.headers["X-Frame-Options"] == "DENY", "\(comment)")
        #expect(response.headers["Referrer-Policy"] == "same-origin", "\(comment)")
        #expect(response.headers["Cache-Control"] == "no-store", "\(comment)")
    }

    // MARK: - On, off and the cookie

    @Test func withoutAUserFileEveryConsolePathIs404() async throws {
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        for path in ["/console", "/console/", "/console/login", "/console/orders/X1", "/console/audit", "/console/console.css"] {
            #expect(try await rig.send(.get, path, token: nil).status == 404, "\(path)")
        }
        #expect(try await rig.send(.post, "/console/login", token: nil, body: "username=a&password=b").status == 404)
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func signingInSetsAnHttpOnlyStrictSessionCookieScopedToTheConsole(_ mode: GatewayRig.Mode) async throws {
        let rig = try await ConsoleRig.start(mode)
        defer { Task { await rig.stop() } }
        let browser = rig.browser()
        let first = try await browser.get("/console/")
        #expect(first.status == 303 && first.headers["Location"]?.hasPrefix("/console/login") == true)
        Self.expectSecured(first, "redirect")
        let answer = try await browser.signIn("vera")
        #expect(answer.status == 303 && answer.headers["Location"] == "/console/")
        let cookie = try #require(answer.setCookies.first { $0.hasPrefix("wxpay_console_session=") })
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console"] { #expect(cookie.contains(attribute), "\(cookie)") }
        #expect(!cookie.contains("Secure"))
        let search = try await browser.get("/console/")
        #expect(search.status == 200 && browser.page.contains("id=\"search\""))
        #expect(!browser.page.contains("<script"))
        Self.expectSecured(search, "search page")
        let css = try await browser.get("/console/console.css")
        #expect(css.status == 200 && css.headers["Content-Type"]?.hasPrefix("text/css") == true)
        Self.expectSecured(css, "stylesheet")
    }

    @Test func theCookieIsSecureWhenTheConsoleSitsBehindTLS() async throws {
        let rig = try await ConsoleRig.start(secureCookie: true)
        defer { Task { await rig.stop() } }
        let answer = try await rig.browser().signIn("vera")
        #expect(answer.setCookies.contains { $0.hasPrefix("wxpay_console_session=") && $0.contains("; Secure") })
    }

    // MARK: - Failed sign-ins

    @Test func aWrongPasswordAndAnUnknownNameGetTheSameAnswerAfterTheSamePasswordCheck() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        let metrics = rig.rig.services.metrics
        let before = metrics.counter("wxpay_console_password_checks_total")
        let wrong = rig.browser()
        let wrongAnswer = try await wrong.signIn("vera", password: "not the password")
        let unknown = rig.browser()
        unknown.cookies = wrong.cookies
        let unknownAnswer = try await unknown.signIn("nobody", password: "not the password")
        #expect(wrongAnswer.status == 403 && unknownAnswer.status == 403)
        // The same page but for the name typed in.
        #expect(wrong.page.replacingOccurrences(of: "vera", with: "NAME") == unknown.page.replacingOccurrences(of: "nobody", with: "NAME"))
        #expect(wrong.page.contains(ConsoleLanguage.chinese.text.loginRefused))
        #expect(metrics.counter("wxpay_console_password_checks_total") - before == 2)
        #expect(wrong.cookies["wxpay_console_session"] == nil && unknown.cookies["wxpay_console_session"] == nil)
    }

    @Test func fiveFailuresLockANameForFifteenMinutesWhetherOrNotItExists() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        for name in ["rita", "ghost"] {
            let browser = rig.browser()
            for attempt in 1...5 {
                let answer = try await browser.signIn(name, password: "wrong password \(attempt)")
                #expect(answer.status == (attempt < 5 ? 403 : 429), "\(name) attempt \(attempt)")
            }
            // Locked: even the right password is refused, without a password check.
            let checks = rig.rig.services.metrics.counter("wxpay_console_password_checks_total")
            let locked = try await browser.signIn(name)
            #expect(locked.status == 429 && locked.headers["Retry-After"] != nil)
            #expect(browser.cookies["wxpay_console_session"] == nil)
            #expect(rig.rig.services.metrics.counter("wxpay_console_password_checks_total") == checks)
        }
        // Each refused password is on record under the name typed, and so is the failure that
        // locked it; the answers to a locked name (no password check) are not.
        for name in ["rita", "ghost"] {
            let attempts = try await rig.auditEntries(AuditQuery(actor: name, action: "login"))
            #expect(attempts.map(\.outcome) == ["locked", "refused", "refused", "refused", "refused"], "\(name)")
            #expect(attempts.allSatisfy { $0.channel == "console" && $0.role == "-" && $0.address != nil })
        }
        // Another name is not locked.
        #expect(try await rig.browser().signIn("vera").status == 303)
        rig.rig.clock.advance(by: 15 * 60 + 1)
        #expect(try await rig.browser().signIn("rita").status == 303)
    }

    @Test func aRefusedLoginIsOnRecordWithTheControlCharactersOfTheNameTypedShownNotDropped() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        let answer = try await rig.browser().signIn(" Ve\nra\u{7}x\u{85}", password: "not the password")
        #expect(answer.status == 403)
        // What was typed, as the log shows every refused character: not a "verax" nobody typed.
        let attempts = try await rig.auditEntries(AuditQuery(actor: " Ve\u{FFFD}ra\u{FFFD}x\u{FFFD}", action: "login"))
        #expect(attempts.map(\.outcome) == ["refused"])
        #expect(try await rig.auditEntries(AuditQuery(actor: "verax", action: "login")).isEmpty)
        // A name over 64 bytes is cut, and says so.
        _ = try await rig.browser().signIn(String(repeating: "n", count: 70), password: "not the password")
        #expect(try await rig.auditEntries(AuditQuery(actor: String(repeating: "n", count: 64) + "…", action: "login")).count == 1)
        // The audit page keeps the spaces typed where a browser would fold them.
        let admin = rig.browser()
        try await admin.signIn("adam")
        try await admin.get("/console/audit")
        #expect(admin.page.contains("<td class=\"typed\"> Ve\u{FFFD}ra\u{FFFD}x\u{FFFD}</td>"))
        try await admin.get("/console/console.css")
        #expect(admin.page.contains("td.typed { white-space: pre-wrap; }"))
    }

    @Test func aLoginFormGivingAFieldTwiceIsRefusedAsThatWithoutAPasswordCheck() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        let browser = rig.browser()
        try await browser.get("/console/login")
        let answer = try await browser.post("/console/login", [("username", "vera"), ("username", "adam"), ("password", ConsoleRig.password)])
        #expect(answer.status == 400 && browser.cookies["wxpay_console_session"] == nil)
        #expect(browser.page.contains(ConsoleLanguage.chinese.text.formRefused(.repeatedField("username"))))
        #expect(rig.rig.services.metrics.counter("wxpay_console_password_checks_total") == 0)
    }

    @Test func aLoginPostWithoutThePreLoginTokenIsRefusedWithoutAPasswordCheck() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        let browser = rig.browser()
        let answer = try await browser.post("/console/login", [("username", "vera"), ("password", ConsoleRig.password)], csrf: .none)
        #expect(answer.status == 403 && browser.cookies["wxpay_console_session"] == nil)
        #expect(rig.rig.services.metrics.counter("wxpay_console_password_checks_total") == 0)
    }

    // MARK: - Sessions

    @Test func aSessionEndsAfterThirtyIdleMinutesAndAfterTwelveHoursWhateverTheActivity() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        let browser = rig.browser()
        try await browser.signIn("vera")
        rig.rig.clock.advance(by: 29 * 60)
        #expect(try await browser.get("/console/").status == 200)
        rig.rig.clock.advance(by: 29 * 60)
        #expect(try await browser.get("/console/").status == 200, "each request restarts the idle time")
        rig.rig.clock.advance(by: 31 * 60)
        #expect(try await browser.get("/console/").status == 303, "idle for 31 minutes")

        let busy = rig.browser()
        try await busy.signIn("vera")
        for _ in 0..<25 {
            rig.rig.clock.advance(by: 29 * 60)
            _ = try await busy.get("/console/")
        }
        #expect(try await busy.get("/console/").status == 303, "more than 12 hours after signing in")
    }

    @Test func anotherPasswordOrARemovedUserEndsTheirSessionsWithoutARestart() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        let vera = rig.browser()
        let rita = rig.browser()
        try await vera.signIn("vera")
        try await rita.signIn("rita")
        let other = ConsoleRig.hash("another long password")
        try ConsoleUserFile.update(path: rig.usersFile) { users in
            users[0].password = other
            users.removeAll { $0.name == "rita" }
        }
        #expect(try await vera.get("/console/").status == 303)
        #expect(try await rita.get("/console/").status == 303)
        #expect(try await rig.browser().signIn("vera", password: "another long password").status == 303)
        #expect(try await rig.browser().signIn("rita").status == 403)
    }

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func signingOutEndsTheSessionInTheDatabase(_ mode: GatewayRig.Mode, _ store: StoreKind) async throws {
        let rig = try await ConsoleRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        let browser = rig.browser()
        try await browser.signIn("vera")
        let stolen = browser.cookies
        try await browser.get("/console/")
        let out = try await browser.post("/console/logout")
        #expect(out.status == 303 && out.headers["Location"] == "/console/login?out=1")
        #expect(out.setCookies.contains { $0.hasPrefix("wxpay_console_session=;") && $0.contains("Max-Age=0") })
        let replay = rig.browser()
        replay.cookies = stolen
        #expect(try await replay.get("/console/").status == 303)
        #expect(try await rig.auditEntries(AuditQuery(action: "logout")).count == 1)
    }

    // MARK: - CSRF and roles

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func aPostWithoutItsCsrfTokenIs403AndWritesNothing(_ mode: GatewayRig.Mode, _ store: StoreKind) async throws {
        let rig = try await ConsoleRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("CSRF-0001")
        let browser = rig.browser()
        try await browser.signIn("rita")
        try await browser.get("/console/orders/CSRF-0001")
        // Long enough for the session's last-seen time to be due for a write.
        rig.rig.clock.advance(by: 60)
        let counts = await TableRowCounts.of(rig.rig.database)
        let sessions = try await rig.console.store.session(id: Console.sessionID(browser.cookies["wxpay_console_session"]!))
        let refund = [("amount", "1.00"), ("reason", "test"), ("out_refund_no", "CSRF-R1")]
        for csrf in [ConsoleBrowser.CSRF.none, .value("forged-token"), .value("")] {
            for (path, fields) in [("/console/orders/CSRF-0001/refunds", refund), ("/console/orders/CSRF-0001/recheck", []),
                                   ("/console/logout", [])] {
                let answer = try await browser.post(path, fields, csrf: csrf)
                #expect(answer.status == 403, "\(path) with \(csrf)")
                Self.expectSecured(answer)
            }
        }
        #expect(await TableRowCounts.of(rig.rig.database) == counts)
        #expect(try await rig.console.store.session(id: sessions!.id) == sessions)
        #expect(try await rig.refunds.store.refund("CSRF-R1") == nil)
    }

    @Test func aViewerSeesNoRefundOrRedeliverButtonAndTheirPostsAre403AndAudited() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("ROLE-0001")
        let event = try #require(try await rig.rig.store.outboxEvents("ROLE-0001").first)
        _ = try await rig.rig.store.deadLetter(event.id, at: rig.rig.clock.now(), lastError: "HTTP 500")
        let viewer = rig.browser()
        try await viewer.signIn("vera")
        try await viewer.get("/console/orders/ROLE-0001")
        #expect(viewer.page.contains("action=\"/console/orders/ROLE-0001/recheck\""))
        #expect(!viewer.page.contains("/refunds\""))
        #expect(!viewer.page.contains("/redeliver\""))
        #expect(!viewer.page.contains("id=\"nav-audit\""))
        let refund = try await viewer.post("/console/orders/ROLE-0001/refunds", [("amount", "1"), ("reason", "x")])
        let redeliver = try await viewer.post("/console/orders/ROLE-0001/outbox/\(event.id)/redeliver")
        let audit = try await viewer.get("/console/audit")
        #expect(refund.status == 403 && redeliver.status == 403 && audit.status == 403)
        #expect(try await rig.refunds.store.refunds(outTradeNo: "ROLE-0001").isEmpty)
        #expect(try await rig.rig.store.outboxEvent(id: event.id)?.deadAt != nil)
        let refusals = try await rig.auditEntries(AuditQuery(actor: "vera")).filter { $0.outcome == "forbidden" }
        #expect(Set(refusals.map(\.action)) == ["refund", "redeliver", "view_audit"])

        let refunder = rig.browser()
        try await refunder.signIn("rita")
        try await refunder.get("/console/orders/ROLE-0001")
        #expect(refunder.page.contains("action=\"/console/orders/ROLE-0001/refunds\""))
        #expect(refunder.page.contains("action=\"/console/orders/ROLE-0001/outbox/\(event.id)/redeliver\""))
        #expect(try await refunder.get("/console/audit").status == 403)
        let admin = rig.browser()
        try await admin.signIn("adam")
        #expect(try await admin.get("/console/audit").status == 200)
        #expect(admin.page.contains("id=\"nav-audit\""))
    }

    // MARK: - Search

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func theSearchBoxFindsAnOrderByEachOfItsIdentifiers(_ mode: GatewayRig.Mode, _ store: StoreKind) async throws {
        let rig = try await ConsoleRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("FIND-0001")
        _ = try await rig.refunds.request(RefundInput(amount: 100, reason: "test", outRefundNo: "FIND-R1"), outTradeNo: "FIND-0001")
        let transaction = try #require(try await rig.rig.store.order("FIND-0001")?.transactionID)
        let browser = rig.browser()
        try await browser.signIn("vera")
        for identifier in ["FIND-0001", transaction, "u-42", "FIND-R1"] {
            try await browser.get("/console/?q=\(identifier)")
            #expect(browser.page.contains("href=\"/console/orders/FIND-0001\""), "\(identifier)")
            #expect(browser.page.contains("id=\"results-range\""))
        }
        try await browser.get("/console/?q=nothing-like-it")
        #expect(browser.page.contains("id=\"no-results\""))
        try await browser.get("/console/?state=NOTPAY")
        #expect(!browser.page.contains("FIND-0001"))
        let today = ConsoleFormat.day(rig.rig.clock.now())
        try await browser.get("/console/?state=REFUND&from=\(today)&to=\(today)")
        #expect(browser.page.contains("FIND-0001") == (try await rig.rig.store.order("FIND-0001")?.state == .refund))
        try await browser.get("/console/?from=2001-01-01&to=2001-01-02")
        #expect(browser.page.contains("id=\"no-results\""))
        let bad = try await browser.get("/console/?from=yesterday")
        #expect(bad.status == 200 && browser.page.contains(ConsoleLanguage.chinese.text.invalidDate))
        let searches = try await rig.auditEntries(AuditQuery(actor: "vera", action: "search"))
        #expect(searches.count == 9)
        #expect(searches.contains { $0.target == transaction })
    }

    @Test("each order shows its app and trade type, and the search filters by them", arguments: StoreKind.all)
    func theSearchFiltersByAppAndTradeType(_ store: StoreKind) async throws {
        let rig = try await ConsoleRig.start(.inProcess, store: store)
        defer { Task { await rig.stop() } }
        let mini = WeChatApps.demo[1]
        func create(_ number: String, app: String, extra: String = "") async throws {
            let body = #"{"amount":990,"description":"Swift","client_ip":"203.0.113.7","out_trade_no":"\#(number)","user_id":"u-42","app":"\#(app)"\#(extra)}"#
            #expect(try await rig.rig.send(.post, "/v1/orders", body: body).status == 201)
        }
        try await create("CH-MINI", app: "mini", extra: #","openid":"\#(SimulatorConfiguration.openID(of: "u-42", under: mini.appID))""#)
        try await create("CH-WEB", app: "web")
        try await create("CH-ANDROID", app: "android")
        let browser = rig.browser()
        try await browser.signIn("vera")
        try await browser.get("/console/?trade_type=JSAPI")
        #expect(browser.page.contains("CH-MINI") && !browser.page.contains("CH-WEB") && !browser.page.contains("CH-ANDROID"))
        #expect(browser.page.contains("mini · JSAPI"))
        #expect(browser.page.contains("<option value=\"JSAPI\" selected>"))
        try await browser.get("/console/?q=u-42&app=web")
        #expect(browser.page.contains("CH-WEB") && !browser.page.contains("CH-MINI"))
        try await browser.get("/console/?trade_type=APP")
        #expect(browser.page.contains("CH-ANDROID") && !browser.page.contains("CH-WEB"))
        try await browser.get("/console/?app=nope&trade_type=CASH")
        #expect(browser.page.contains(ConsoleLanguage.chinese.text.invalidApp))
        #expect(browser.page.contains(ConsoleLanguage.chinese.text.invalidTradeType))
        #expect(browser.page.contains("id=\"no-results\"") && !browser.page.contains("CH-MINI"), "a refused filter lists nothing")
        try await browser.get("/console/orders/CH-MINI")
        #expect(browser.page.contains("id=\"fact-app\">mini (\(mini.appID))"), "\(browser.page)")
        #expect(browser.page.contains("id=\"fact-trade-type\">JSAPI"))
        let searches = try await rig.auditEntries(AuditQuery(actor: "vera", action: "search"))
        #expect(searches.contains { $0.detail.contains("trade_type=JSAPI") })
    }

    @Test func aUsersManyOrdersArePagedNeverCut() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        for index in 0..<(Console.pageSize + 7) {
            _ = try await rig.rig.createOrder("PAGE-\(String(index).leftPadded(to: 3))")
            rig.rig.clock.advance(by: 1)
        }
        let browser = rig.browser()
        try await browser.signIn("vera")
        try await browser.get("/console/?q=u-42")
        #expect(browser.page.components(separatedBy: "href=\"/console/orders/PAGE-").count - 1 == Console.pageSize)
        #expect(browser.page.contains("PAGE-056") && !browser.page.contains("PAGE-006"))
        let next = try #require(browser.page.range(of: "id=\"next-page\"").map { _ in
            browser.page.components(separatedBy: "<a href=\"").first { $0.contains("id=\"next-page\"") }?
                .components(separatedBy: "\"").first?.replacingOccurrences(of: "&amp;", with: "&")
        } ?? nil)
        try await browser.get(next)
        #expect(browser.page.components(separatedBy: "href=\"/console/orders/PAGE-").count - 1 == 7)
        #expect(browser.page.contains("PAGE-000") && browser.page.contains("PAGE-006") && !browser.page.contains("PAGE-007\""))
        #expect(browser.page.contains("id=\"first-page\"") && !browser.page.contains("id=\"next-page\""))
        #expect(browser.page.contains("51–57"))
    }

    // MARK: - The order and its actions

    @Test(arguments: GatewayRig.Mode.allCases)
    func theOrderPageShowsFactsTimelineDeliveriesAndTheActionForms(_ mode: GatewayRig.Mode) async throws {
        let rig = try await ConsoleRig.start(mode)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("SHOW-0001", amount: 990)
        let browser = rig.browser()
        try await browser.signIn("rita")
        let answer = try await browser.get("/console/orders/SHOW-0001")
        #expect(answer.status == 200)
        Self.expectSecured(answer)
        let page = browser.page
        #expect(page.contains("<ol id=\"timeline\">"))
        #expect(page.contains("data-kind=\"state_changed\"") && page.contains("NOTPAY -&gt; SUCCESS: notify"))
        #expect(page.contains("¥9.90") && page.contains("SUCCESS 支付成功"))
        #expect(page.contains("id=\"deliveries\"") && page.contains("order.paid"))
        for action in ["/console/orders/SHOW-0001/recheck", "/console/orders/SHOW-0001/refunds"] {
            #expect(page.contains("action=\"\(action)\""), "\(action)")
        }
        #expect(try await browser.get("/console/orders/NOPE-0001").status == 404)
        let views = try await rig.auditEntries(AuditQuery(action: "view_order"))
        #expect(views.map(\.outcome).sorted() == ["ok", "order_not_found"])
        #expect(views.allSatisfy { $0.actor == "rita" && $0.address == "127.0.0.1" && $0.channel == "console" })
    }

    @Test func recheckAsksWeChatAndThePageShowsWhatItSaid() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("ASK-0001")
        let browser = rig.browser()
        try await browser.signIn("vera")
        try await browser.get("/console/orders/ASK-0001")
        let answer = try await browser.post("/console/orders/ASK-0001/recheck")
        let location = try #require(answer.headers["Location"])
        #expect(answer.status == 303 && location.hasPrefix("/console/orders/ASK-0001?recheck="))
        try await browser.get(location)
        #expect(browser.page.contains("id=\"notice\"") && browser.page.contains("trade_state=SUCCESS"))
        let events = try await rig.rig.store.events("ASK-0001")
        #expect(events.contains { $0.kind == "recheck" && $0.detail == "requested by console user vera" })
        #expect(try await rig.auditEntries(AuditQuery(action: "recheck")).map(\.outcome) == ["ok"])
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func aRefundInYuanIsTheRefundServicesRefundOnceHoweverOftenTheFormIsPosted(_ mode: GatewayRig.Mode) async throws {
        let rig = try await ConsoleRig.start(mode)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("REF-0001", amount: 990)
        let browser = rig.browser()
        try await browser.signIn("rita")
        try await browser.get("/console/orders/REF-0001")
        let number = try #require(browser.field("out_refund_no"))
        let token = try #require(browser.token)
        let fields = [("amount", "3.50"), ("reason", "bought by mistake"), ("out_refund_no", number)]
        let first = try await browser.post("/console/orders/REF-0001/refunds", fields, csrf: .value(token))
        let again = try await browser.post("/console/orders/REF-0001/refunds", fields, csrf: .value(token))
        #expect(first.status == 303 && again.status == 303)
        let refunds = try await rig.refunds.store.refunds(outTradeNo: "REF-0001")
        #expect(refunds.map(\.amount) == [350] && refunds.first?.outRefundNo == number)
        #expect(refunds.first?.reason == "bought by mistake")
        try await browser.get(try #require(first.headers["Location"]))
        #expect(browser.page.contains(number) && browser.page.contains("PROCESSING"))
        // More than is left, a malformed amount, no reason, no refund number or a malformed one (a
        // repeated post would then be a second refund): refused here, nothing recorded.
        try await browser.get("/console/orders/REF-0001")
        let cases: [(String, String, String?, Int)] = [
            ("9.00", "too much", "refused-1", 409), ("3.505", "x", "refused-2", 400), ("-1", "x", "refused-3", 400),
            ("1.00", "", "refused-4", 400), ("1.00", "x", nil, 400), ("1.00", "x", "<b>x", 400),
        ]
        for (amount, reason, refundNumber, status) in cases {
            let refused = try await browser.post("/console/orders/REF-0001/refunds",
                                                 [("amount", amount), ("reason", reason)] + (refundNumber.map { [("out_refund_no", $0)] } ?? []))
            #expect(refused.status == status, "\(amount) \(reason) \(refundNumber ?? "no number")")
            if amount == "1.00", !reason.isEmpty {
                #expect(browser.page.contains(ConsoleLanguage.chinese.text.refundNumberInvalid))
            }
            #expect(browser.page.contains("id=\"notice\"") && browser.page.contains("id=\"refund\""))
            if status == 409 {
                // In the page's language and in yuan, as the form takes it: never "640 fen".
                let notice = browser.page.components(separatedBy: "id=\"notice\"").last?.components(separatedBy: "</p>").first ?? ""
                #expect(notice.contains("最多还能退 ¥6.40") && !notice.contains("fen"), "\(notice)")
            }
        }
        // A field given twice (one amount to one reader, another to the next) is no form at all.
        let twice = try await browser.post("/console/orders/REF-0001/refunds",
                                           [("amount", "1.00"), ("amount", "2.00"), ("reason", "x"), ("out_refund_no", "twice-1")])
        // Said in those words, not as a failed CSRF check, and counted as a form refusal.
        #expect(twice.status == 400)
        #expect(browser.page.contains(ConsoleLanguage.chinese.text.formRefused(.repeatedField("amount"))))
        #expect(!browser.page.contains(ConsoleLanguage.chinese.text.csrfRefused))
        #expect(rig.rig.services.metrics.counter("wxpay_console_refusals_total", ["reason": "form"]) == 1)
        #expect(try await rig.refunds.store.refunds(outTradeNo: "REF-0001").count == 1)
        // A form without its number for an order that does not exist: the page says there is no
        // such order, and so does the audit.
        let unknown = try await browser.post("/console/orders/NO-SUCH-ORDER/refunds", [("amount", "1.00"), ("reason", "x")])
        #expect(unknown.status == 404)
        #expect(browser.page.contains(ConsoleLanguage.chinese.text.orderNotFound))
        let audited = try await rig.auditEntries(AuditQuery(action: "refund"))
        #expect(audited.map(\.outcome)
            == ["order_not_found"] + Array(repeating: "invalid_request", count: 5) + ["refund_exceeds_paid", "replayed", "ok"])
        #expect(audited.last?.detail.contains("350 fen") == true && audited.last?.target == number)
    }

    @Test func aRefundNumberUsedForAnotherAmountComesBackAsANewNumberWithWhichTheRefundGoesThrough() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("NUM-0001", amount: 990)
        let browser = rig.browser()
        try await browser.signIn("rita")
        try await browser.get("/console/orders/NUM-0001")
        let used = try #require(browser.field("out_refund_no"))
        let token = try #require(browser.token)
        #expect(try await browser.post("/console/orders/NUM-0001/refunds",
                                       [("amount", "0.50"), ("reason", "x"), ("out_refund_no", used)], csrf: .value(token)).status == 303)
        // Back on the old page, another amount under its number: 409, and the form it answers
        // carries a new number (a repeat of the same post would only be refused again).
        let conflict = try await browser.post("/console/orders/NUM-0001/refunds",
                                              [("amount", "0.60"), ("reason", "x"), ("out_refund_no", used)], csrf: .value(token))
        #expect(conflict.status == 409)
        #expect(browser.page.contains(ConsoleLanguage.chinese.text.refundNumberUsed))
        let fresh = try #require(browser.field("out_refund_no"))
        #expect(fresh != used)
        #expect(try await browser.post("/console/orders/NUM-0001/refunds",
                                       [("amount", "0.60"), ("reason", "x"), ("out_refund_no", fresh)]).status == 303)
        #expect(try await rig.refunds.store.refunds(outTradeNo: "NUM-0001").map(\.amount).sorted() == [50, 60])
    }

    @Test func withoutRefundsConfiguredTheFormIsAbsent() async throws {
        let rig = try await ConsoleRig.start(refundsOn: false)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("OFF-0001")
        let browser = rig.browser()
        try await browser.signIn("adam")
        try await browser.get("/console/orders/OFF-0001")
        #expect(!browser.page.contains("id=\"refund\"") && browser.page.contains("id=\"refunds-off\""))
        #expect(try await browser.post("/console/orders/OFF-0001/refunds", [("amount", "1"), ("reason", "x")]).status == 503)
    }

    @Test func aDeadDeliveryIsRedeliveredAndOnlyADeadOne() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("DEAD-0001")
        try await rig.paidOrder("DEAD-0002")
        let event = try #require(try await rig.rig.store.outboxEvents("DEAD-0001").first)
        let other = try #require(try await rig.rig.store.outboxEvents("DEAD-0002").first)
        _ = try await rig.rig.store.deadLetter(event.id, at: rig.rig.clock.now(), lastError: "HTTP 500")
        let browser = rig.browser()
        try await browser.signIn("rita")
        try await browser.get("/console/orders/DEAD-0001")
        #expect(browser.page.contains("data-status=\"dead\""))
        let answer = try await browser.post("/console/orders/DEAD-0001/outbox/\(event.id)/redeliver")
        #expect(answer.status == 303)
        let after = try await rig.rig.store.outboxEvent(id: event.id)
        #expect(after?.deadAt == nil && after?.deliveredAt == nil)
        try await browser.get(try #require(answer.headers["Location"]))
        #expect(browser.page.contains(ConsoleLanguage.chinese.text.redelivered(event.id)))
        #expect(try await rig.rig.store.events("DEAD-0001").contains { $0.detail.contains("redriven by console user rita") })
        // Pending now: not dead, 409; another order's event through this order's URL: 404.
        #expect(try await browser.post("/console/orders/DEAD-0001/outbox/\(event.id)/redeliver").status == 409)
        #expect(try await browser.post("/console/orders/DEAD-0001/outbox/\(other.id)/redeliver").status == 404)
    }

    // MARK: - The audit log

    @Test func theJSONSupportAPIIsAuditedByTokenFingerprintAndAnUnauthenticatedCallIsNot() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("API-0001")
        let support = GatewayRig.support
        #expect(try await rig.rig.send(.get, "/v1/support/orders?out_trade_no=API-0001", token: support).status == 200)
        #expect(try await rig.rig.send(.post, "/v1/support/orders/API-0001/recheck", token: support).status == 200)
        #expect(try await rig.rig.send(.get, "/v1/orders/API-0001", token: support).status == 200)
        #expect(try await rig.rig.send(.get, "/v1/support/orders?user_id=u-42", token: support).status == 200)
        #expect(try await rig.rig.send(.post, "/v1/support/outbox/nope/redrive", token: support).status == 404)
        #expect(try await rig.rig.send(.get, "/v1/support/orders?out_trade_no=API-0001", token: "not-a-token").status == 401)
        #expect(try await rig.rig.send(.get, "/v1/orders/API-0001", token: GatewayRig.client).status == 200)
        let entries = try await rig.auditEntries()
        #expect(entries.map(\.action) == ["api_redrive", "api_lookup", "api_read_order", "api_recheck", "api_lookup"])
        let fingerprint = "support token " + String(Hex.encode(SHA256.hash(support)).prefix(8))
        #expect(entries.allSatisfy { $0.actor == fingerprint && $0.channel == "api" && !$0.actor.contains(support) })
        #expect(entries.first?.outcome == "outbox_event_not_found" && entries[1].target == "user_id=u-42")
        #expect(entries.last?.outTradeNo == "API-0001")
    }

    @Test func aSupportTokensLookAtARefundIsOnItsOrdersAuditTrail() async throws {
        let rig = try await RefundRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("AUD-0001", amount: 990)
        #expect(try await rig.refund("AUD-0001", amount: 100, number: "aud-r1").status == 201)
        #expect(try await rig.send(.get, "/v1/refunds/aud-r1", token: RefundRig.support).status == 200)
        #expect(try await rig.send(.get, "/v1/refunds/aud-none", token: RefundRig.support).status == 404)
        let reads = try await rig.store.auditEntries(AuditQuery(action: "api_read_refund"), limit: 10, before: nil).entries.map(\.entry)
        #expect(reads.map(\.target) == ["aud-none", "aud-r1"])
        #expect(reads.map(\.outTradeNo) == [nil, "AUD-0001"])
        let trail = try await rig.store.auditEntries(AuditQuery(outTradeNo: "AUD-0001"), limit: 10, before: nil).entries.map(\.entry)
        #expect(trail.contains { $0.action == "api_read_refund" && $0.target == "aud-r1" })
    }

    @Test func aSupportTokenRefusedWhereSupportMayNotGoIsOnRecordAndChangesNothing() async throws {
        let rig = try await RefundRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("AUD-0002", amount: 990)
        let refund = #"{"amount":100,"reason":"refunded","out_refund_no":"aud-r2"}"#
        #expect(try await rig.send(.post, "/v1/orders/AUD-0002/refunds", token: RefundRig.support, body: refund).status == 403)
        #expect(try await rig.send(.post, "/v1/orders/AUD-0002/close", token: RefundRig.support).status == 403)
        #expect(try await rig.store.refund("aud-r2") == nil)
        #expect(try await rig.store.order("AUD-0002")?.state == .success)
        let trail = try await rig.store.auditEntries(AuditQuery(outTradeNo: "AUD-0002"), limit: 10, before: nil).entries.map(\.entry)
        #expect(trail.map(\.action) == ["api POST /v1/orders/{out_trade_no}/close", "api POST /v1/orders/{out_trade_no}/refunds"])
        #expect(trail.allSatisfy { $0.outcome == "forbidden" && $0.role == "support" && $0.channel == "api" })
        #expect(trail.last?.detail == "reason: refunded")

        // Without a token the gateway knows, or with the backend's token on support's routes, nothing is recorded.
        #expect(try await rig.send(.post, "/v1/orders/AUD-0002/refunds", token: "not-a-token", body: refund).status == 401)
        #expect(try await rig.send(.get, "/v1/support/orders?out_trade_no=AUD-0002", token: RefundRig.client).status == 403)
        #expect(try await rig.store.auditEntries(AuditQuery(), limit: 10, before: nil).entries.count == 2)
    }

    @Test func theAuditPageListsWhoLookedAndWhoDidWhatAndCanBeFiltered() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("LOG-0001")
        let rita = rig.browser()
        try await rita.signIn("rita")
        try await rita.get("/console/?q=LOG-0001")
        try await rita.get("/console/orders/LOG-0001")
        try await rita.post("/console/orders/LOG-0001/recheck")
        let admin = rig.browser(language: "en-US,en;q=0.8")
        try await admin.signIn("adam")
        try await admin.get("/console/audit")
        for action in ["login", "search", "view_order", "recheck", "view_audit"] {
            #expect(admin.page.contains("data-action=\"\(action)\""), "\(action)")
        }
        #expect(admin.page.contains("<table id=\"audit\">") && admin.page.contains("Audit log"))
        try await admin.get("/console/audit?order=LOG-0001")
        #expect(admin.page.contains("data-action=\"recheck\"") && !admin.page.contains("data-action=\"login\""))
        try await admin.get("/console/audit?actor=rita&action=search")
        #expect(admin.page.components(separatedBy: "<tr data-action=").count - 1 == 1)

        // The longest actions, a support token's refused calls (method and route), filter too.
        #expect(try await rig.rig.send(.post, "/v1/orders/LOG-0001/refunds", token: GatewayRig.support,
                                       body: #"{"amount":1,"reason":"asked twice","out_refund_no":"log-r1"}"#).status == 403)
        try await admin.get("/console/audit?action=" + "api POST /v1/orders/{out_trade_no}/refunds"
            .addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        #expect(admin.page.components(separatedBy: "<tr data-action=").count - 1 == 1)
        #expect(admin.page.contains("reason: asked twice"))
    }

    // MARK: - Languages

    @Test func chineseByDefaultEnglishByAcceptLanguageOrTheSwitch() async throws {
        let rig = try await ConsoleRig.start()
        defer { Task { await rig.stop() } }
        let chinese = rig.browser()
        try await chinese.get("/console/login")
        #expect(chinese.page.contains("<html lang=\"zh-CN\">") && chinese.page.contains("登录"))
        let english = rig.browser(language: "en-GB,en;q=0.9,zh;q=0.5")
        try await english.get("/console/login")
        #expect(english.page.contains("<html lang=\"en\">") && english.page.contains("Sign in"))
        let switched = try await chinese.get("/console/language?to=en&back=%2Fconsole%2Flogin")
        #expect(switched.status == 303 && switched.headers["Location"] == "/console/login")
        try await chinese.get("/console/login")
        #expect(chinese.page.contains("<html lang=\"en\">"))
        let away = try await chinese.get("/console/language?to=zh-CN&back=https%3A%2F%2Fevil.example%2F")
        #expect(away.headers["Location"] == "/console/")
    }
}
