// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import Observability
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// The contract of the gateway's API, each test run twice: in process and over real sockets.
struct GatewayAPITests {
    @Test("Without a default app (no single app of kind app) a create naming none is 400 invalid naming app, and writes nothing",
          arguments: GatewayRig.Mode.allCases)
    func aCreateWithoutADefaultAppIsRefused(mode: GatewayRig.Mode) async throws {
        var apps = WeChatApps()
        apps.all = [WeChatApp(name: "mini", appID: "wx2421b1c4370ec43b", kind: .miniprogram)]
        let rig = try await GatewayRig.start(mode, composition: .init(apps: apps))
        defer { Task { await rig.stop() } }
        let refused = try await rig.createOrder("no-default-app")
        #expect(refused.status == 400)
        #expect(refused.error?["code"] as? String == "invalid_request" && refused.error?["field"] as? String == "app")
        #expect(try await rig.store.order("no-default-app") == nil)
        #expect(rig.simulator.order("no-default-app") == nil)
    }

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func anOrderIsCreatedPaidAndFoundByAWaitingQuery(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        let created = try await rig.createOrder("e2e-0001")
        #expect(created.status == 201)
        #expect(created.json["state"] as? String == "NOTPAY")
        #expect((created.json["app_params"] as? [String: Any])?["packageValue"] as? String == "Sign=WXPay")
        #expect((created.json["expires_at"] as? String)?.hasSuffix("+08:00") == true)
        // Demo mode's default app, of kind app: the order records it and its trade type.
        #expect(created.json["app"] as? String == "android" && created.json["trade_type"] as? String == "APP")

        async let waited = rig.send(.get, "/v1/orders/e2e-0001?wait=20")
        try await Task.sleep(for: .milliseconds(200))
        try rig.simulator.pay(outTradeNo: "e2e-0001")
        let order = try await waited
        #expect(order.status == 200)
        #expect(order.json["state"] as? String == "SUCCESS")
        #expect(order.json["final"] as? Bool == true)
        #expect(order.json["transaction_id"] as? String != nil)
        #expect(order.json["app"] as? String == "android" && order.json["trade_type"] as? String == "APP")

        let lookup = try await rig.send(.get, "/v1/support/orders?out_trade_no=e2e-0001", token: GatewayRig.support)
        let found = try #require((lookup.json["orders"] as? [[String: Any]])?.first)
        let events = try #require(found["events"] as? [[String: Any]])
        #expect(events.filter { $0["kind"] as? String == "state_changed" && ($0["detail"] as? String)?.contains("SUCCESS") == true }.count == 1)
        #expect(events.contains { $0["kind"] as? String == "created" })
    }

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func expiresInTravelsAsTimeExpireInBeijingTimeAndMatchesExpiresAt(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        let created = try await rig.send(.post, "/v1/orders", body: #"{"amount":1,"description":"d","client_ip":"203.0.113.7","out_trade_no":"e2e-exp1","expires_in":600}"#)
        #expect(created.status == 201)
        let sent = try #require(rig.simulator.requests.last { $0.path == "/pay/unifiedorder" })
        let timeExpire = try #require(sent.fields["time_expire"])
        let expiresAt = try #require(created.json["expires_at"] as? String)
        // 20261130162343 ↔ 2026-11-30T16:23:43.000+08:00
        let digits = expiresAt.prefix(19).filter(\.isNumber)
        #expect(String(digits) == timeExpire)
        #expect(expiresAt.hasSuffix(".000+08:00"))
        let createdAt = try #require(created.json["created_at"] as? String)
        #expect(createdAt < expiresAt)
    }

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func authenticationComesBeforeValidationAndBeforeNotFound(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        #expect(try await rig.send(.post, "/v1/orders", token: nil, body: "not json").status == 401)
        #expect(try await rig.send(.get, "/v1/orders/none-0001", token: "wrong-token-123").status == 401)
        #expect(try await rig.send(.post, "/v1/orders", token: GatewayRig.support, body: "{}").status == 403)
        #expect(try await rig.send(.post, "/v1/orders/none-0001/close", token: GatewayRig.support).status == 403)
        #expect(try await rig.send(.get, "/v1/support/orders?user_id=u", token: GatewayRig.client).status == 403)
        let missing = try await rig.send(.get, "/v1/orders/none-0001")
        #expect(missing.status == 404)
        #expect(missing.error?["code"] as? String == "order_not_found")
        for open in ["/healthz", "/metrics"] {
            #expect(try await rig.send(.get, open, token: nil).status == 200)
        }
        // /readyz gives the database a second to answer; a loaded machine may need a retry.
        var ready = false
        for _ in 0..<30 where !ready {
            ready = try await rig.send(.get, "/readyz", token: nil).status == 200
            if !ready { try await Task.sleep(for: .seconds(1)) }
        }
        #expect(ready)
    }

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func invalidRequestsNameTheFieldAndNeverReachWeChat(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        let invalid = try await rig.send(.post, "/v1/orders", body: #"{"amount":0,"description":"d","client_ip":"1.2.3.4"}"#)
        #expect(invalid.status == 400)
        #expect(invalid.error?["code"] as? String == "invalid_request")
        #expect(invalid.error?["field"] as? String == "amount")
        _ = try await rig.createOrder("e2e-0002")
        let wait = try await rig.send(.get, "/v1/orders/e2e-0002?wait=31")
        #expect(wait.error?["field"] as? String == "wait")
        #expect(rig.simulator.counters.requests["/pay/unifiedorder"] == 1)
    }

    @Test("wait is seconds written in decimal, 0 to 30, given once: another form a number reader would take (hex, exponent, sign, space) is refused naming wait, on orders and refunds alike",
          arguments: GatewayRig.Mode.allCases)
    func waitIsDecimalSecondsGivenOnce(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("wait-form-1")
        try rig.simulator.pay(outTradeNo: "wait-form-1")
        #expect(await eventually { (try? await rig.send(.get, "/v1/orders/wait-form-1").json["state"] as? String) == "SUCCESS" })
        for refused in ["0x3", "1e1", "1e-400", "+5", "-1", "%205", "31", "30.5", "abc", "1.", ".5", "inf", "nan", "5&wait=1", "",
                        "00000000000000001"] {
            let answer = try await rig.send(.get, "/v1/orders/wait-form-1?wait=\(refused)")
            #expect(answer.status == 400 && answer.error?["field"] as? String == "wait", "wait=\(refused): \(answer.status)")
            let refund = try await rig.send(.get, "/v1/refunds/no-such-refund-1?wait=\(refused)")
            #expect(refund.status == 400 && refund.error?["field"] as? String == "wait", "refund wait=\(refused): \(refund.status)")
        }
        // The order is final, so each accepted wait answers at once.
        for accepted in ["0", "0.5", "2.5", "10", "30", "030"] {
            #expect(try await rig.send(.get, "/v1/orders/wait-form-1?wait=\(accepted)").json["state"] as? String == "SUCCESS",
                    "wait=\(accepted)")
        }
    }

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func replaysAnswerTheSameOrderAndConflictsAre409(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        let first = try await rig.createOrder("e2e-0003")
        let replay = try await rig.createOrder("e2e-0003")
        #expect(first.status == 201 && replay.status == 200)
        #expect(first.body == replay.body)
        let conflict = try await rig.createOrder("e2e-0003", amount: 1)
        #expect(conflict.status == 409)
        #expect(conflict.error?["code"] as? String == "out_trade_no_conflict")
        #expect(rig.simulator.counters.requests["/pay/unifiedorder"] == 1)
    }

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func closeIsRefusedInsideFiveMinutesThenCloses(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("e2e-0004")
        let early = try await rig.send(.post, "/v1/orders/e2e-0004/close")
        #expect(early.status == 409)
        #expect(early.error?["code"] as? String == "close_too_early")
        #expect((early.error?["retry_after"] as? Int ?? 0) > 0)
        rig.clock.advance(by: 301)
        let closed = try await rig.send(.post, "/v1/orders/e2e-0004/close")
        #expect(closed.json["state"] as? String == "CLOSED")
        #expect(try await rig.createOrder("e2e-0004").status == 409)
    }

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func supportCanRecheckAnOrderWithWeChat(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("e2e-0005")
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        try rig.simulator.pay(outTradeNo: "e2e-0005")
        let rechecked = try await rig.send(.post, "/v1/support/orders/e2e-0005/recheck", token: GatewayRig.support)
        #expect(rechecked.json["state"] as? String == "SUCCESS")
        let byUser = try await rig.send(.get, "/v1/support/orders?user_id=u-42", token: GatewayRig.support)
        #expect((byUser.json["orders"] as? [[String: Any]])?.count == 1)
    }

    /// reliability.md T6: every forgery is refused with FAIL and changes nothing.
    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func forgedNotifiesAreRefusedAndChangeNothing(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("e2e-0006", amount: 990)
        _ = try await rig.createOrder("e2e-0007", amount: 500)
        let forgeries: [(String, String)] = [
            ("wrong sign", rig.forgedNotify("e2e-0006", amount: 990) { $0["sign"] = String(repeating: "A", count: 64) }),
            ("empty sign", rig.forgedNotify("e2e-0006", amount: 990) { $0["sign"] = "" }),
            ("missing sign", rig.forgedNotify("e2e-0006", amount: 990) { $0["sign"] = nil }),
            ("wrong key", rig.forgedNotify("e2e-0006", amount: 990, key: APIKey("00000000000000000000000000000000"))),
            ("MD5 downgrade", rig.forgedNotify("e2e-0006", amount: 990, signType: .md5) { $0["sign_type"] = "MD5" }),
            ("wrong appid", rig.forgedNotify("e2e-0006", amount: 990) { fields in
                fields["appid"] = "wx0000000000000000"
                fields["sign"] = Signer(key: APIKey(GatewayConfiguration.demoKey)).signature(for: fields, type: .hmacSHA256)
            }),
            ("wrong mch_id", rig.forgedNotify("e2e-0006", amount: 990) { fields in
                fields["mch_id"] = "99999999"
                fields["sign"] = Signer(key: APIKey(GatewayConfiguration.demoKey)).signature(for: fields, type: .hmacSHA256)
            }),
            ("leaked key, wrong amount", rig.forgedNotify("e2e-0006", amount: 1)),
            ("another order's notify", rig.forgedNotify("e2e-0007", amount: 990)),
            ("unknown order", rig.forgedNotify("e2e-9999", amount: 990)),
            ("XXE", #"<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY x SYSTEM "file:///etc/passwd">]><xml><out_trade_no>e2e-0006</out_trade_no><sign>&x;</sign></xml>"#),
        ]
        for (name, body) in forgeries {
            let reply = try await rig.send(.post, "/wechat/notify", token: nil, body: body, headers: ["Host": "localhost"])
            #expect(reply.status == 200, "\(name)")
            #expect(String(decoding: reply.body, as: UTF8.self).contains("FAIL"), "\(name) was acknowledged")
        }
        for outTradeNo in ["e2e-0006", "e2e-0007"] {
            #expect(try await rig.send(.get, "/v1/orders/\(outTradeNo)").json["state"] as? String == "NOTPAY")
            #expect(try await rig.store.outboxEvents(outTradeNo).isEmpty)
        }
        // Unauthenticated, so not on the timeline; only the leaked-key one (our signature) is.
        let events = try await rig.store.events("e2e-0006")
        #expect(events.map(\.kind) == ["created", "prepay", "amount_mismatch"])
        #expect(!events.contains { $0.detail.contains("passwd") || $0.detail.contains("root:") })
        let counted = Battery.sum(rig.services.metrics.exposition(), #"wxpay_notifies_total{outcome="rejected""#)
        #expect(counted == Double(forgeries.count))
    }

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func duplicateConcurrentNotifiesSettleOnceAndAreAllAcknowledged(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("e2e-0008", amount: 990)
        let genuine = rig.forgedNotify("e2e-0008", amount: 990)  // correctly signed with our key
        let replies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 {
                group.addTask { String(decoding: try await rig.send(.post, "/wechat/notify", token: nil, body: genuine).body, as: UTF8.self) }
            }
            var replies: [String] = []
            for try await reply in group { replies.append(reply) }
            return replies
        }
        #expect(replies.allSatisfy { $0.contains("SUCCESS") })
        let transitions = try await rig.store.events("e2e-0008").filter { $0.kind == "state_changed" }
        #expect(transitions.count == 1)
        #expect(try await rig.store.outboxEvents("e2e-0008").count == 1)
    }

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func copiesOfASettledNotifyWithinAMinuteAreAcknowledgedAndWriteNothing(mode: GatewayRig.Mode, store: StoreKind) async throws {
        // Time frozen: on a loaded machine forty copies can take longer than the quiet minute.
        let rig = try await GatewayRig.start(mode, store: store, clockScale: 0)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("e2e-0009", amount: 990)
        let genuine = rig.forgedNotify("e2e-0009", amount: 990)  // correctly signed with our key
        func notify(_ body: String) async throws -> String {
            String(decoding: try await rig.send(.post, "/wechat/notify", token: nil, body: body).body, as: UTF8.self)
        }
        #expect(try await notify(genuine).contains("SUCCESS"))
        let settled = try #require(try await rig.store.order("e2e-0009"))
        let timeline = try await rig.store.events("e2e-0009")
        #expect(timeline.filter { $0.kind == "notify_received" }.map(\.detail) == ["settled"])

        // A replayed capture, however often and however laid out (its signature covers the
        // fields, not the bytes): acknowledged, and not one write.
        let relaidOut = genuine.replacingOccurrences(of: #"(</[a-z_]+>)<"#, with: "$1\n<", options: .regularExpression)
        #expect(relaidOut.count > genuine.count + 10)
        for copy in 0..<40 { #expect(try await notify(copy.isMultiple(of: 2) ? genuine : relaidOut).contains("SUCCESS")) }
        #expect(try await rig.store.events("e2e-0009") == timeline)
        #expect(try await rig.store.order("e2e-0009") == settled)
        #expect(rig.services.metrics.counter("wxpay_notifies_total", ["outcome": "duplicate", "channel": "app"]) == 40)

        // A minute on, a copy is recorded again: once.
        rig.clock.advance(by: PaymentNotifies.copyQuietPeriod + 1)
        for _ in 0..<3 { #expect(try await notify(genuine).contains("SUCCESS")) }
        let after = try await rig.store.events("e2e-0009").filter { $0.kind == "notify_received" }.map(\.detail)
        #expect(after == ["settled", "duplicate"])
        #expect(try await rig.store.outboxEvents("e2e-0009").count == 1)
    }

    @Test(arguments: StoreKind.all)
    func replayedFailAndOtherAmountNotifiesAddOneTimelineLineAMinute(store: StoreKind) async throws {
        // Time frozen, so only `advance` moves the minute, however slow the machine.
        let rig = try await GatewayRig.start(.inProcess, store: store, clockScale: 0)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("e2e-0010", amount: 990)
        let failed = rig.forgedNotify("e2e-0010", amount: 990, result: .fail(errCode: "NOTENOUGH", errCodeDescription: "余额不足"))
        let otherAmount = rig.forgedNotify("e2e-0010", amount: 1)  // our signature on another amount
        func notify(_ body: String) async throws -> String {
            String(decoding: try await rig.send(.post, "/wechat/notify", token: nil, body: body).body, as: UTF8.self)
        }
        func lines() async throws -> [String] {
            try await rig.store.events("e2e-0010").filter { $0.kind != "created" && $0.kind != "prepay" }
                .map { "\($0.kind): \($0.detail)" }
        }
        for _ in 0..<15 {
            #expect(try await notify(failed).contains("SUCCESS"))
            #expect(try await notify(otherAmount).contains("FAIL"))
        }
        let once = ["notify_received: result_code=FAIL NOTENOUGH", "amount_mismatch: notify reported 1 fen, order is 990 fen"]
        #expect(try await lines() == once)
        // Every copy is still counted: the mismatch is what a leaked key looks like.
        #expect(rig.services.metrics.counter("wxpay_amount_mismatches_total", ["source": "notify"]) == 15)
        #expect(rig.services.metrics.counter("wxpay_notifies_total", ["outcome": "payment_failed", "channel": "app"]) == 15)

        rig.clock.advance(by: PaymentNotifies.copyQuietPeriod + 1)
        for _ in 0..<3 {
            _ = try await notify(failed)
            _ = try await notify(otherAmount)
        }
        #expect(try await lines() == once + once)
        #expect(try await rig.store.order("e2e-0010")?.state == .notPay)
    }

    @Test(arguments: StoreKind.all)
    func aNotifySignedWithOurKeyThatCannotBeReadIsRefusedAndPutOnTheTimelineOnceAMinute(store: StoreKind) async throws {
        let rig = try await GatewayRig.start(.inProcess, store: store, clockScale: 0)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("e2e-0011", amount: 990)
        /// A genuine notify with one field changed and signed again with our key (`sign` recomputed).
        func signed(_ name: String, _ value: String, key: APIKey = APIKey(GatewayConfiguration.demoKey)) -> String {
            rig.forgedNotify("e2e-0011", amount: 990) { fields in
                fields[name] = value
                fields["sign"] = nil
                fields["sign"] = Signer(key: key).signature(for: fields, type: .hmacSHA256)
            }
        }
        func notify(_ body: String) async throws -> String {
            String(decoding: try await rig.send(.post, "/wechat/notify", token: nil, body: body).body, as: UTF8.self)
        }
        func lines() async throws -> [String] {
            try await rig.store.events("e2e-0011").filter { $0.kind != "created" && $0.kind != "prepay" }
                .map { "\($0.kind): \($0.detail)" }
        }
        for _ in 0..<5 {
            #expect(try await notify(signed("total_fee", "9.90")).contains("FAIL"))
            #expect(try await notify(signed("time_end", "20261399999999")).contains("FAIL"))
            // Another key's signature is a forgery, not our notify: nothing written.
            #expect(try await notify(signed("total_fee", "abc", key: APIKey(String(repeating: "k", count: 32)))).contains("FAIL"))
        }
        #expect(try await lines() == ["notify_refused: bad_total_fee", "notify_refused: bad_time_end"])
        #expect(try await rig.store.order("e2e-0011")?.state == .notPay)
        #expect(rig.services.metrics.counter("wxpay_notifies_total", ["outcome": "rejected", "reason": "bad_total_fee"]) == 5)

        rig.clock.advance(by: PaymentNotifies.copyQuietPeriod + 1)
        #expect(try await notify(signed("total_fee", "9.90")).contains("FAIL"))
        #expect(try await lines().count == 3)
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func theAuthorizationSchemeIsCaseInsensitive(mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("auth-case-1")
        // RFC 9110 §11.1: the scheme is case-insensitive; one or more spaces separate it.
        for value in ["bearer \(GatewayRig.client)", "BEARER \(GatewayRig.client)", "bEaReR  \(GatewayRig.client)"] {
            let answer = try await rig.send(.get, "/v1/orders/auth-case-1", token: nil, headers: ["Authorization": value])
            #expect(answer.status == 200, "\(value.prefix(8))")
        }
        let app = try await rig.send(.get, "/v1/catalog", token: nil,
                                     headers: ["Authorization": "bearer " + TestTokens.minted("alice")])
        #expect(app.status == 200)
        for value in ["Basic \(GatewayRig.client)", "Bearer", "Bearer ", "Bearer\t\(GatewayRig.client)", "Bearers \(GatewayRig.client)",
                      GatewayRig.client] {
            let answer = try await rig.send(.get, "/v1/orders/auth-case-1", token: nil, headers: ["Authorization": value])
            #expect(answer.status == 401, "\(value.prefix(8))")
            #expect(answer.error?["code"] as? String == "unauthorized")
        }
    }

    @Test(arguments: GatewayRig.Mode.allCases)
    func anAmountIsAnIntegerAsWrittenAndOneTooLargeToReadIsOutOfRange(mode: GatewayRig.Mode) async throws {
        let rig = try await RefundRig.start(mode)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("amount-paid", amount: 990)
        let body = { (amount: String) in #"{"amount":\#(amount),"description":"d","client_ip":"203.0.113.7"}"# }
        // 1.0 and 1e3 are whole numbers but not integers as the API documents fen: refused like 1.5.
        for amount in ["1.0", "1e3", "990.00", "9.9E2"] {
            let create = try await rig.send(.post, "/v1/orders", body: body(amount))
            #expect(create.status == 400, "\(amount)")
            #expect(create.error?["field"] as? String == "amount")
            #expect(create.error?["message"] as? String == "amount must be an integer")
            let refund = try await rig.send(.post, "/v1/orders/amount-paid/refunds", body: #"{"amount":\#(amount),"reason":"r"}"#)
            #expect(refund.status == 400, "refund \(amount)")
            #expect(refund.error?["message"] as? String == "amount must be an integer")
        }
        // 2^63 and beyond cannot be read as an integer at all: the answer says which member.
        for amount in ["9223372036854775808", "-9223372036854775809", "100000000000000000000000"] {
            let create = try await rig.send(.post, "/v1/orders", body: body(amount))
            #expect(create.status == 400)
            #expect(create.error?["field"] as? String == "amount")
            #expect(create.error?["message"] as? String == "amount is out of range")
        }
        let refund = try await rig.send(.post, "/v1/orders/amount-paid/refunds", body: #"{"amount":9223372036854775808,"reason":"r"}"#)
        #expect(refund.error?["message"] as? String == "amount is out of range")
        let expiry = try await rig.send(.post, "/v1/orders", body: #"{"amount":990,"description":"d","client_ip":"203.0.113.7","expires_in":3.6e3}"#)
        #expect(expiry.error?["message"] as? String == "expires_in must be an integer")
        // Integers as written still work, at the top of the range too.
        #expect(try await rig.send(.post, "/v1/orders", body: body("1000000000")).status == 201)
        #expect(rig.upstreamRefundRequests == 0)
    }

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func aNotifyForAPaidOrderUnderAnotherTransactionIDIsRecordedAndFlagged(mode: GatewayRig.Mode, store: StoreKind)
        async throws
    {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("other-txn", amount: 990)
        let first = Battery.genuineNotify(outTradeNo: "other-txn", transactionID: "4200000000202612010000000001",
                                          totalFee: 990, nonce: "first")
        #expect(String(decoding: try await rig.send(.post, "/wechat/notify", token: nil, bytes: first).body, as: UTF8.self)
            .contains(Battery.acknowledged))
        // Signed with our key, same order and amount, another transaction: a second payment or a
        // leaked key. Acknowledged (it is recorded), never settled again, flagged for a person.
        for copy in 0..<5 {
            let other = Battery.genuineNotify(outTradeNo: "other-txn", transactionID: "4200000000202612010000000002",
                                              totalFee: 990, nonce: "other\(copy)")
            let reply = try await rig.send(.post, "/wechat/notify", token: nil, bytes: other)
            #expect(String(decoding: reply.body, as: UTF8.self).contains(Battery.acknowledged))
        }
        let order = try #require(try await rig.store.order("other-txn"))
        #expect(order.state == .success)
        #expect(order.transactionID == "4200000000202612010000000001")
        #expect(order.flags == [.otherTransactionID])
        let lines = try await rig.store.events("other-txn").filter { $0.kind == "transaction_mismatch" }.map(\.detail)
        #expect(lines == ["notify reported transaction_id 4200000000202612010000000002; "
            + "the order was paid with 4200000000202612010000000001"])
        #expect(try await rig.store.outboxEvents("other-txn").count == 1)
        #expect(rig.services.metrics.counter("wxpay_notifies_total", ["outcome": "other_transaction", "channel": "app"]) == 5)
        #expect(rig.services.metrics.counter("wxpay_transaction_mismatches_total", ["source": "notify"]) == 5)
        let lookup = try await rig.send(.get, "/v1/support/orders?out_trade_no=other-txn", token: GatewayRig.support)
        #expect(((lookup.json["orders"] as? [[String: Any]])?.first?["flags"] as? [String]) == ["other_transaction_id"])
    }

    @Test(arguments: StoreKind.all) func anOversizedNotifyIsRefusedAndTheGatewayStaysUp(store: StoreKind) async throws {
        let rig = try await GatewayRig.start(.sockets, store: store)
        defer { Task { await rig.stop() } }
        let huge = "<xml><a>" + String(repeating: "x", count: 200_000) + "</a></xml>"
        if let reply = try? await rig.send(.post, "/wechat/notify", token: nil, body: huge) {
            #expect(reply.status == 413)
        }
        #expect(try await rig.send(.get, "/healthz", token: nil).status == 200)
    }
}
