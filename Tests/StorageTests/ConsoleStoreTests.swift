// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

struct ConsoleStoreTests {
    static func session(_ id: String, user: String = "alice", at: Date = TestTime.t0) -> ConsoleSession {
        ConsoleSession(id: id, username: user, credentialStamp: "stamp", csrfToken: "csrf-\(id)", createdAt: at,
                       lastSeenAt: at, expiresAt: at.addingTimeInterval(12 * 3600), address: "203.0.113.9")
    }

    // MARK: Sessions

    @Test(arguments: StoreKind.all) func aSessionIsStoredReadTouchedForwardOnlyAndDeleted(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await store.createSession(Self.session("s1"))
            #expect(try await store.session(id: "s1") == Self.session("s1"))
            #expect(try await store.session(id: "nope") == nil)
            #expect(try await store.touchSession(id: "s1", at: TestTime.at(60)))
            #expect(try await store.touchSession(id: "s1", at: TestTime.at(30)))
            #expect(try await store.session(id: "s1")?.lastSeenAt == TestTime.at(60))
            #expect(try await !store.touchSession(id: "nope", at: TestTime.at(60)))
            #expect(try await store.deleteSession(id: "s1"))
            #expect(try await !store.deleteSession(id: "s1"))
            #expect(try await store.session(id: "s1") == nil)
        }
    }

    @Test(arguments: StoreKind.all) func aSecondSessionWithTheSameIdIsRefused(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await store.createSession(Self.session("s1"))
            await #expect(throws: StorageError.self) { try await store.createSession(Self.session("s1", user: "mallory")) }
            #expect(try await store.session(id: "s1")?.username == "alice")
        }
    }

    @Test(arguments: StoreKind.all) func purgingRemovesExpiredAndIdleSessionsOnly(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            var expired = Self.session("expired")
            expired.expiresAt = TestTime.at(100)
            try await store.createSession(expired)
            try await store.createSession(Self.session("idle"))
            try await store.createSession(Self.session("fresh", at: TestTime.at(1000)))
            #expect(try await store.purgeSessions(now: TestTime.at(1000), idleBefore: TestTime.at(500)) == 2)
            #expect(try await store.session(id: "fresh") != nil)
            #expect(try await store.session(id: "idle") == nil)
            #expect(try await store.session(id: "expired") == nil)
        }
    }

    // MARK: Failed logins

    static let office = "198.51.100.7"
    static let elsewhere = "203.0.113.66"

    static func fail(_ name: String, from address: String = office, at seconds: Double, in store: some ConsoleStore)
        async throws -> Date?
    {
        try await store.recordLoginFailure(username: name, address: address, at: TestTime.at(seconds), window: 900,
                                           threshold: 5, lockFor: 900)
    }

    static func state(_ name: String, from address: String = office, at seconds: Double, in store: some ConsoleStore)
        async throws -> LoginState
    {
        try await store.loginState(username: name, address: address, at: TestTime.at(seconds),
                                   failuresSince: TestTime.at(seconds - 900), knownSince: TestTime.at(seconds - 86400))
    }

    @Test(arguments: StoreKind.all)
    func theFifthFailureFromOneAddressWithinFifteenMinutesLocksTheNameFromThatAddressOnly(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            for second in [0.0, 60, 120, 180] { #expect(try await Self.fail("alice", at: second, in: store) == nil) }
            #expect(try await Self.state("alice", at: 200, in: store).lockedUntil == nil)
            #expect(try await Self.fail("alice", at: 240, in: store) == TestTime.at(1140))
            #expect(try await Self.state("alice", at: 1139, in: store).lockedUntil == TestTime.at(1140))
            #expect(try await Self.state("alice", at: 1140, in: store).lockedUntil == nil)
            // From another address the name is not locked, and another name is untouched.
            let elsewhere = try await Self.state("alice", from: Self.elsewhere, at: 300, in: store)
            #expect(elsewhere.lockedUntil == nil && elsewhere.lockedAddresses == 1 && elsewhere.nameFailures == 0)
            #expect(try await Self.state("bob", at: 300, in: store).lockedUntil == nil)
        }
    }

    @Test(arguments: StoreKind.all)
    func theNamesFailuresFromEveryAddressAreCountedAndASuccessfulAddressIsKnown(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            for index in 0..<12 {
                _ = try await Self.fail("admin", from: "192.0.2.\(index)", at: Double(index), in: store)
            }
            _ = try await Self.fail("admin", from: Self.office, at: 20, in: store)
            var state = try await Self.state("admin", at: 30, in: store)
            #expect(state.nameFailures == 13 && !state.knownAddress && state.lockedUntil == nil)
            try await store.recordLoginSuccess(username: "admin", address: Self.office, at: TestTime.at(40),
                                               forgetBefore: TestTime.at(40 - 86400))
            state = try await Self.state("admin", at: 50, in: store)
            // The office's failure is forgotten, the others' not; the office is known now, elsewhere not.
            #expect(state.nameFailures == 12 && state.knownAddress)
            #expect(try await !Self.state("admin", from: Self.elsewhere, at: 50, in: store).knownAddress)
            #expect(try await !Self.state("bob", from: Self.office, at: 50, in: store).knownAddress)
            // A day later (the lifetime asked about here) the address is no longer known.
            #expect(try await !Self.state("admin", at: 86400 + 41, in: store).knownAddress)
            // Failures leave the count with the window.
            #expect(try await Self.state("admin", at: 2000, in: store).nameFailures == 0)
        }
    }

    @Test(arguments: StoreKind.all) func failuresOlderThanTheWindowAndFailuresBeforeASuccessDoNotCount(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            for second in [0.0, 60, 120, 180] { _ = try await Self.fail("alice", at: second, in: store) }
            // 15 minutes after the first, that one has left the window: four remain, no lock.
            #expect(try await Self.fail("alice", at: 900, in: store) == nil)
            try await store.recordLoginSuccess(username: "alice", address: Self.office, at: TestTime.at(900),
                                               forgetBefore: TestTime.at(0))
            for second in [901.0, 902, 903, 904] { #expect(try await Self.fail("alice", at: second, in: store) == nil) }
            #expect(try await Self.fail("alice", at: 905, in: store) != nil)
        }
    }

    @Test(arguments: StoreKind.all) func instancesOnOneDatabaseShareSessionsAndCountFailuresTogether(_ kind: StoreKind)
        async throws
    {
        try await withStore(kind) { first, database async throws in
            let second = try await database.open()
            do {
                // A browser signed in through one instance is signed in on the other, and out on both.
                try await first.createSession(Self.session("s1"))
                #expect(try await second.session(id: "s1") == Self.session("s1"))
                #expect(try await second.deleteSession(id: "s1"))
                #expect(try await first.session(id: "s1") == nil)
                // Five failures from one address spread over both lock the name from there on both.
                for at in [0.0, 60] { #expect(try await Self.fail("alice", at: at, in: first) == nil) }
                for at in [120.0, 180] { #expect(try await Self.fail("alice", at: at, in: second) == nil) }
                #expect(try await Self.fail("alice", at: 240, in: first) == TestTime.at(1140))
                #expect(try await Self.state("alice", at: 300, in: second).lockedUntil == TestTime.at(1140))
                // Both append to one audit log.
                _ = try await first.appendAudit(Self.entry("search"))
                _ = try await second.appendAudit(Self.entry("view_order", order: "O1"))
                #expect(try await first.auditEntries(AuditQuery(), limit: 10, before: nil).entries.map(\.entry.action)
                    == ["view_order", "search"])
            } catch {
                await second.close()
                throw error
            }
            await second.close()
        }
    }

    @Test(arguments: StoreKind.all) func textWithANulCharacterIsRefusedAndNothingIsWritten(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            await #expect(throws: StorageError.self) { try await store.appendAudit(Self.entry("search\u{0}")) }
            await #expect(throws: StorageError.self) { try await store.createSession(Self.session("s\u{0}1")) }
            await #expect(throws: StorageError.self) { try await Self.fail("al\u{0}ice", at: 0, in: store) }
            await #expect(throws: StorageError.self) {
                try await store.searchOrders(OrderSearch(identifier: "O\u{0}1"), limit: 10, after: nil)
            }
            #expect(try await store.auditEntries(AuditQuery(), limit: 10, before: nil).entries.isEmpty)
        }
    }

    // MARK: Search

    /// Orders created a minute apart: O0 oldest; O1 paid (transaction wx-O1) with a refund R-O1;
    /// all of user u-1 but O3 (user u-2).
    static func seed(_ store: TestStore, count: Int = 6) async throws {
        for index in 0..<count {
            try await Fixture.create(Fixture.order("O\(index)", amount: 1000, createdAt: TestTime.at(Double(index) * 60),
                                                   userID: index == 3 ? "u-2" : "u-1"), in: store)
        }
        _ = try await Fixture.pay("O1", in: store, at: TestTime.at(90))
        _ = try await store.createRefund(
            NewRefund(outRefundNo: "R-O1", outTradeNo: "O1", amount: 100, reason: "test", notifyURL: nil,
                      parametersDigest: "d", createdAt: TestTime.at(120)),
            maximumPerOrder: 50, event: NewOrderEvent(kind: "refund_requested", detail: "", at: TestTime.at(120)))
    }

    static func numbers(_ page: OrderPage) -> [String] { page.orders.map(\.outTradeNo) }

    @Test(arguments: StoreKind.all) func oneIdentifierFindsTheOrderByEachOfItsNumbers(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.seed(store)
            func find(_ identifier: String) async throws -> [String] {
                Self.numbers(try await store.searchOrders(OrderSearch(identifier: identifier), limit: 50, after: nil))
            }
            #expect(try await find("O1") == ["O1"])
            #expect(try await find("wx-O1") == ["O1"])
            #expect(try await find("R-O1") == ["O1"])
            #expect(try await find("u-2") == ["O3"])
            #expect(try await find("u-1") == ["O5", "O4", "O2", "O1", "O0"])
            #expect(try await find("nothing").isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func stateAndCreationFiltersNarrowTheSearchWithOrWithoutAnIdentifier(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.seed(store)
            let paid = try await store.searchOrders(OrderSearch(states: [.success]), limit: 50, after: nil)
            #expect(Self.numbers(paid) == ["O1"])
            let window = OrderSearch(createdFrom: TestTime.at(60), createdBefore: TestTime.at(240))
            #expect(Self.numbers(try await store.searchOrders(window, limit: 50, after: nil)) == ["O3", "O2", "O1"])
            let both = OrderSearch(identifier: "u-1", states: [.notPay], createdFrom: TestTime.at(60))
            #expect(Self.numbers(try await store.searchOrders(both, limit: 50, after: nil)) == ["O5", "O4", "O2"])
            #expect(Self.numbers(try await store.searchOrders(OrderSearch(), limit: 50, after: nil)).count == 6)
        }
    }

    @Test("app and trade-type filters narrow the search; APP also finds WeChat orders made before trade types were kept, never iOS orders",
          arguments: StoreKind.all)
    func appAndTradeTypeFiltersNarrowTheSearch(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            // O0: no app, no trade type (before apps had names); then one order per channel of user u-1.
            try await Fixture.create(Fixture.order("O0", createdAt: TestTime.at(0), userID: "u-1"), in: store)
            for (index, (app, type)) in [("android", "APP"), ("mini", "JSAPI"), ("mp", "JSAPI"), ("web", "NATIVE"), ("h5", "MWEB")]
                .enumerated() {
                var order = Fixture.order("O\(index + 1)", createdAt: TestTime.at(Double(index + 1) * 60), userID: "u-1")
                order.app = app
                order.appID = "wx000000000000000\(index)"
                order.tradeType = type
                if type == "JSAPI" { order.openID = "o-user-\(index)" }
                try await Fixture.create(order, in: store)
            }
            var apple = Fixture.order("I1", createdAt: TestTime.at(600), userID: "u-1")
            apple.channel = .apple
            try await Fixture.create(apple, in: store)
            func find(_ search: OrderSearch) async throws -> [String] {
                Self.numbers(try await store.searchOrders(search, limit: 50, after: nil))
            }
            #expect(try await find(OrderSearch(tradeType: "JSAPI")) == ["O3", "O2"])
            #expect(try await find(OrderSearch(tradeType: "APP")) == ["O1", "O0"])
            #expect(try await find(OrderSearch(app: "mini")) == ["O2"])
            #expect(try await find(OrderSearch(app: "mp", tradeType: "JSAPI")) == ["O3"])
            #expect(try await find(OrderSearch(app: "mp", tradeType: "NATIVE")).isEmpty)
            #expect(try await find(OrderSearch(identifier: "u-1", tradeType: "MWEB")) == ["O5"])
            #expect(try await find(OrderSearch(identifier: "u-1")).count == 7)
            #expect(try await find(OrderSearch(flags: [.unknownProduct], tradeType: "NATIVE")).isEmpty)
        }
    }

    @Test("userID narrows the search to that user's orders exactly (not an order whose number is the user id), with the filters, in pages",
          arguments: StoreKind.all)
    func aUsersOrdersAreNarrowedByTheFiltersInPages(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            // u-1: three APP orders (one from before trade types were kept) and a NATIVE one; u-2: one
            // APP order; an order numbered "u-1" of u-2, which the identifier search would also find.
            let orders: [(String, String, String?, Double)] = [
                ("U0", "u-1", nil, 0), ("U1", "u-1", "APP", 60), ("U2", "u-1", "NATIVE", 120), ("U3", "u-1", "APP", 180),
                ("U4", "u-2", "APP", 240), ("u-1", "u-2", "APP", 300),
            ]
            for (number, user, type, at) in orders {
                var order = Fixture.order(number, createdAt: TestTime.at(at), userID: user)
                order.tradeType = type
                order.app = type.map { $0 == "NATIVE" ? "web" : "android" }
                try await Fixture.create(order, in: store)
            }
            var apple = Fixture.order("I1", createdAt: TestTime.at(360), userID: "u-1")
            apple.channel = .apple
            try await Fixture.create(apple, in: store)
            func find(_ search: OrderSearch, limit: Int = 50, after: OrderPageKey? = nil) async throws -> OrderPage {
                try await store.searchOrders(search, limit: limit, after: after)
            }
            #expect(Self.numbers(try await find(OrderSearch(tradeType: "APP", userID: "u-1"))) == ["U3", "U1", "U0"])
            #expect(Self.numbers(try await find(OrderSearch(app: "web", userID: "u-1"))) == ["U2"])
            #expect(Self.numbers(try await find(OrderSearch(userID: "u-1"))) == ["I1", "U3", "U2", "U1", "U0"])
            #expect(Self.numbers(try await find(OrderSearch(tradeType: "NATIVE", userID: "u-2"))).isEmpty)
            #expect(Self.numbers(try await find(OrderSearch(identifier: "u-1", tradeType: "APP"))).contains("u-1"))
            #expect(Self.numbers(try await find(OrderSearch(flags: [.unknownProduct], userID: "u-1"))).isEmpty)
            let first = try await find(OrderSearch(tradeType: "APP", userID: "u-1"), limit: 2)
            #expect(Self.numbers(first) == ["U3", "U1"])
            let rest = try await find(OrderSearch(tradeType: "APP", userID: "u-1"), limit: 2, after: first.next)
            #expect(Self.numbers(rest) == ["U0"] && rest.next == nil)
        }
    }

    @Test(arguments: StoreKind.all) func searchPagesCoverEveryMatchOnceNewestFirst(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.seed(store, count: 12)
            var seen: [String] = []
            var after: OrderPageKey?
            var pages = 0
            repeat {
                let page = try await store.searchOrders(OrderSearch(identifier: "u-1"), limit: 4, after: after)
                seen += Self.numbers(page)
                after = page.next
                pages += 1
            } while after != nil && pages < 10
            #expect(pages == 3)
            #expect(seen == (0..<12).reversed().filter { $0 != 3 }.map { "O\($0)" })
        }
    }

    // MARK: Audit

    static func entry(_ action: String, actor: String = "alice", order: String? = nil, at seconds: Double = 0) -> NewAuditEntry {
        NewAuditEntry(at: TestTime.at(seconds), actor: actor, channel: "console", role: "admin", action: action,
                      outTradeNo: order, target: "t", address: "203.0.113.9", outcome: "ok", detail: "d")
    }

    @Test(arguments: StoreKind.all) func auditEntriesListNewestFirstFilteredAndPaged(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            var stored: [AuditEntry] = []
            for index in 0..<7 {
                stored.append(try await store.appendAudit(Self.entry(index % 2 == 0 ? "search" : "refund",
                                                                     actor: index < 4 ? "alice" : "bob",
                                                                     order: index == 5 ? "O5" : nil, at: Double(index))))
            }
            #expect(stored.map(\.id) == stored.map(\.id).sorted())
            #expect(stored[2].entry == Self.entry("search", at: 2))
            let first = try await store.auditEntries(AuditQuery(), limit: 3, before: nil)
            #expect(first.entries.map(\.entry.at) == [TestTime.at(6), TestTime.at(5), TestTime.at(4)])
            let second = try await store.auditEntries(AuditQuery(), limit: 3, before: first.nextBefore)
            let third = try await store.auditEntries(AuditQuery(), limit: 3, before: second.nextBefore)
            #expect(third.entries.count == 1 && third.nextBefore == nil)
            #expect(try await store.auditEntries(AuditQuery(actor: "bob"), limit: 10, before: nil).entries.count == 3)
            #expect(try await store.auditEntries(AuditQuery(outTradeNo: "O5"), limit: 10, before: nil).entries.map(\.entry.actor) == ["bob"])
            #expect(try await store.auditEntries(AuditQuery(actor: "alice", action: "refund"), limit: 10, before: nil)
                .entries.count == 2)
        }
    }

    @Test(arguments: StoreKind.all) func theDatabaseRefusesToUpdateOrDeleteAnAuditEntry(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, database async throws in
            _ = try await store.appendAudit(Self.entry("refund", order: "O1"))
            // Behind the store's back, as anyone with the database's password could: refused.
            #expect(await !database.execute("UPDATE audit_log SET outcome = 'nothing happened'"))
            #expect(await !database.execute("DELETE FROM audit_log"))
            if kind == .postgres { #expect(await !database.execute("TRUNCATE audit_log")) }
            #expect(await database.scalar("SELECT outcome FROM audit_log") == "ok")
            #expect(try await store.auditEntries(AuditQuery(), limit: 10, before: nil).entries.count == 1)
        }
    }

    // MARK: Integrity

    /// The stores whose integrity check covers the console's tables and the audit log.
    static let integrityChecked: [StoreKind] = StoreKind.all

    /// Breaks one console or audit rule behind the store's back (as a bug, a hand edit or a bad
    /// restore could), and returns the integrity check's report before and after.
    static func integrity(_ kind: StoreKind, breaking sql: [StoreKind: String],
                          setUp: (TestStore) async throws -> Void) async throws -> (before: String, after: String) {
        var reports = ("", "")
        try await withStore(kind) { store, database async throws in
            try await setUp(store)
            reports.0 = try await store.integrityCheck()
            let breaking = try #require(sql[kind])
            #expect(await database.execute(breaking), "the breaking SQL was refused")
            reports.1 = try await store.integrityCheck()
        }
        return reports
    }

    @Test(arguments: integrityChecked) func theIntegrityCheckFindsASessionSeenAfterItsAbsoluteExpiry(_ kind: StoreKind) async throws {
        let report = try await Self.integrity(kind, breaking: [
            .sqlite: "UPDATE console_sessions SET last_seen_at = expires_at + 1",
            .postgres: "UPDATE console_sessions SET last_seen_at = expires_at + interval '1 second'",
        ]) { store in
            try await store.createSession(Self.session("s1"))
            _ = try await store.touchSession(id: "s1", at: TestTime.at(3600))
        }
        #expect(report.before == "ok")
        #expect(report.after == "1 console sessions seen after their absolute expiry")
    }

    @Test(arguments: integrityChecked) func theIntegrityCheckFindsASessionEndingBeforeItBegan(_ kind: StoreKind) async throws {
        let report = try await Self.integrity(kind, breaking: [
            .sqlite: "UPDATE console_sessions SET expires_at = created_at - 1, last_seen_at = created_at - 2",
            .postgres: "UPDATE console_sessions SET expires_at = created_at - interval '1 second', last_seen_at = created_at - interval '2 seconds'",
        ]) { store in
            try await store.createSession(Self.session("s1"))
            try await store.createSession(Self.session("s2", at: TestTime.at(60)))
        }
        #expect(report.before == "ok")
        #expect(report.after == "2 console sessions seen before they began or ending before they began")
    }

    @Test(arguments: integrityChecked) func theIntegrityCheckFindsAnAuditEntryOfAnUnknownChannel(_ kind: StoreKind) async throws {
        let report = try await Self.integrity(kind, breaking: [
            .sqlite: "INSERT INTO audit_log (at, actor, channel, role, action, outcome, detail) VALUES (0, 'x', 'backdoor', 'admin', 'refund', 'ok', '')",
            .postgres: "INSERT INTO audit_log (at, actor, channel, role, action, outcome, detail) VALUES (now(), 'x', 'backdoor', 'admin', 'refund', 'ok', '')",
        ]) { store in
            _ = try await store.appendAudit(Self.entry("search"))
            _ = try await store.appendAudit(NewAuditEntry(at: TestTime.t0, actor: "support token 1a2b3c4d", channel: "api",
                                                          role: "support", action: "view_order", outcome: "ok"))
        }
        #expect(report.before == "ok")
        #expect(report.after == "1 audit entries of a channel other than console or api")
    }

    @Test(arguments: integrityChecked) func theIntegrityCheckFindsTheAuditLogNoLongerAppendOnly(_ kind: StoreKind) async throws {
        let report = try await Self.integrity(kind, breaking: [
            .sqlite: "DROP TRIGGER audit_log_no_delete",
            .postgres: "DROP TRIGGER audit_log_no_update_or_delete ON audit_log",
        ]) { store in
            _ = try await store.appendAudit(Self.entry("refund"))
        }
        #expect(report.before == "ok")
        #expect(report.after.contains("the audit log's append-only triggers are missing"))
    }

    @Test(arguments: integrityChecked) func theIntegrityCheckFindsAnAuditIdSequenceThatWouldHandOutIdsAgain(_ kind: StoreKind) async throws {
        let report = try await Self.integrity(kind, breaking: [
            .sqlite: "UPDATE sqlite_sequence SET seq = 1 WHERE name = 'audit_log'",
            .postgres: "SELECT setval(pg_get_serial_sequence('audit_log', 'id'), 1)",
        ]) { store in
            for action in ["search", "view_order", "refund"] { _ = try await store.appendAudit(Self.entry(action)) }
        }
        #expect(report.before == "ok")
        #expect(report.after == "the audit log's id sequence is behind its last entry: ids could be handed out again")
    }

    @Test(.enabled(if: TestPostgres.url != nil, "needs WXPAY_TEST_POSTGRES (scripts/test starts a server)"))
    func theIntegrityCheckFindsTheAuditLogsTriggerDisabledOnPostgreSQL() async throws {
        let report = try await Self.integrity(.postgres, breaking: [
            .postgres: "ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_truncate",
        ]) { store in
            _ = try await store.appendAudit(Self.entry("refund"))
        }
        #expect(report.before == "ok")
        #expect(report.after == "the audit log's append-only triggers are missing (1 of 2)")
    }
}
