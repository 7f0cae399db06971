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

/// reliability.md T6 at reduced scale (the full run is `scripts/battery/run T6`): forged, foreign,
/// malformed and replayed notifies are refused, counted and logged (throttled), and an
/// unauthenticated one writes nothing: every table has as many rows after as before.
struct BatteryForgedNotifyTests {
    @Test(arguments: StoreKind.all) func forgeriesAndReplaysChangeNoOrderAndAreAllRefused(store: StoreKind) async throws {
        let rig = try await GatewayRig.start(.sockets, store: store)
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("forge-0001", amount: 990)
        _ = try await rig.createOrder("forge-0002", amount: 500)
        // forge-0002 is genuinely paid; its notify is the material the attacker replays.
        let paid = try rig.simulator.pay(outTradeNo: "forge-0002")
        #expect(await eventually { await Self.state(rig, "forge-0002") == "SUCCESS" })
        // And WeChat has its answer, with no retry left to send: a retry of a reply that was slow
        // (a loaded machine) lands as a duplicate, whose timeline row is not the forgeries' doing.
        #expect(await eventually(timeout: .seconds(120)) {
            rig.simulator.pendingNotifies == 0 && rig.simulator.counters.notifiesAcknowledged >= 1
        })
        let genuine = String(decoding: Battery.genuineNotify(paid, nonce: "replayed"), as: UTF8.self)
        let key = APIKey(GatewayConfiguration.demoKey)
        let resign: (inout Fields) -> Void = { $0["sign"] = Signer(key: key).signature(for: $0, type: .hmacSHA256) }
        let forgeries: [(String, String, [String: String])] = [
            ("wrong sign", rig.forgedNotify("forge-0001", amount: 990) { $0["sign"] = String(repeating: "0", count: 64) }, [:]),
            ("empty sign", rig.forgedNotify("forge-0001", amount: 990) { $0["sign"] = "" }, [:]),
            ("missing sign", rig.forgedNotify("forge-0001", amount: 990) { $0["sign"] = nil }, [:]),
            ("wrong key", rig.forgedNotify("forge-0001", amount: 990, key: APIKey("ffffffffffffffffffffffffffffffff")), [:]),
            ("wrong appid", rig.forgedNotify("forge-0001", amount: 990) { $0["appid"] = "wx1111111111111111"; resign(&$0) }, [:]),
            ("wrong mch_id", rig.forgedNotify("forge-0001", amount: 990) { $0["mch_id"] = "10000999"; resign(&$0) }, [:]),
            ("another order's notify re-targeted",
             genuine.replacingOccurrences(of: "forge-0002", with: "forge-0001"), [:]),
            ("Host: localhost", rig.forgedNotify("forge-0001", amount: 990) { $0["sign"] = "" }, ["Host": "localhost"]),
            ("unknown out_trade_no", rig.forgedNotify("forge-9999", amount: 990), [:]),
        ]
        let rowsBefore = await TableRowCounts.of(rig.database)
        for (name, body, headers) in forgeries {
            for _ in 0..<3 {
                let reply = try await rig.send(.post, "/wechat/notify", token: nil, body: body, headers: headers)
                let text = String(decoding: reply.body, as: UTF8.self)
                #expect(reply.status == 200)
                #expect(text.contains("<return_code><![CDATA[FAIL]]></return_code>"), "\(name) was acknowledged")
            }
        }
        #expect(await TableRowCounts.of(rig.database) == rowsBefore, "an unauthenticated notify wrote a row")

        // The leaked-key case: our signature on another amount is authenticated, so it is on the
        // order's timeline for a person (once a minute however often it comes, every copy
        // counted), and it settles nothing.
        for _ in 0..<3 {
            let reply = try await rig.send(.post, "/wechat/notify", token: nil, body: rig.forgedNotify("forge-0001", amount: 1))
            #expect(String(decoding: reply.body, as: UTF8.self).contains("<return_code><![CDATA[FAIL]]></return_code>"))
        }
        #expect(try await rig.store.events("forge-0001").filter { $0.kind == "amount_mismatch" }.count == 1)
        #expect(rig.services.metrics.counter("wxpay_amount_mismatches_total", ["source": "notify"]) == 3)
        // …and flagged, so it is on support's attention list where a person sees it.
        #expect(try await rig.store.order("forge-0001")?.flags == [.amountMismatch])
        let attention = try await rig.send(.get, "/v1/support/attention?flag=amount_mismatch", token: GatewayRig.support)
        #expect((attention.json["orders"] as? [[String: Any]])?.compactMap { $0["out_trade_no"] as? String } == ["forge-0001"])

        // The genuine notify replayed as is only repeats what is already true.
        let replay = try await rig.send(.post, "/wechat/notify", token: nil, body: genuine)
        #expect(String(decoding: replay.body, as: UTF8.self).contains(Battery.acknowledged))

        #expect(await Self.state(rig, "forge-0001") == "NOTPAY")
        #expect(try await rig.store.outboxEvents("forge-0001").isEmpty)
        #expect(try await Battery.transitionsIntoSuccess(rig.store, "forge-0001") == 0)
        #expect(try await Battery.transitionsIntoSuccess(rig.store, "forge-0002") == 1)
        #expect(try await rig.store.outboxEvents("forge-0002").count == 1)
        #expect(try await rig.store.order("forge-9999") == nil)
        let counted = Battery.sum(rig.services.metrics.exposition(), #"wxpay_notifies_total{outcome="rejected""#)
        #expect(counted == Double(forgeries.count * 3 + 3), "each refusal is counted")
    }

    /// The issue's count: 1,000 of each kind, and row counts of every table (found in the schema)
    /// before and after. Each forgery differs from the others of its kind (its nonce).
    @Test func aThousandForgeriesOfEachKindWriteNoRowToAnyTable() async throws {
        let log = InMemoryLogHandler()
        let rig = try await GatewayRig.start(.inProcess, logger: Logger(label: "test", level: .info, handler: log))
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("forge-1000", amount: 990)
        let copies = 1_000
        let key = APIKey(GatewayConfiguration.demoKey)
        let malformed = [
            "", "not xml at all", "<xml><out_trade_no>forge-1000</out_trade_no>",
            #"<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><xml><out_trade_no>&e;</out_trade_no></xml>"#,
            "<xml><out_trade_no>forge-1000</out_trade_no><out_trade_no>forge-1000</out_trade_no></xml>",
            "<xml><return_code><![CDATA[SUCCESS]]></return_code><out_trade_no><![CDATA[forge-1000",
        ]
        let kinds: [(name: String, reason: String, make: (Int) -> String)] = [
            ("bad sign", "bad_sign", { rig.forgedNotify("forge-1000", amount: 990, nonce: "b\($0)") { $0["sign"] = String(repeating: "A", count: 64) } }),
            ("unknown order", "unknown_order", { rig.forgedNotify("forge-nobody-\($0)", amount: 990, nonce: "u\($0)") }),
            ("malformed", "malformed_xml", { malformed[$0 % malformed.count] + String(repeating: " ", count: $0 % 7) }),
            ("missing sign", "missing_sign", { rig.forgedNotify("forge-1000", amount: 990, nonce: "m\($0)") { $0["sign"] = nil } }),
            ("wrong key", "bad_sign", { rig.forgedNotify("forge-1000", amount: 990, key: APIKey(String(repeating: "f", count: 32)), nonce: "k\($0)") }),
            ("foreign merchant, our key", "wrong_mch_id", { rig.forgedNotify("forge-1000", amount: 990, nonce: "f\($0)") {
                $0["mch_id"] = "10000999"
                $0["sign"] = Signer(key: key).signature(for: $0, type: .hmacSHA256)
            } }),
        ]
        let rowsBefore = await TableRowCounts.of(rig.database)
        #expect(Set(rowsBefore.keys).isSuperset(of: ["orders", "order_events", "outbox"]), "tables: \(rowsBefore.keys)")
        let started = ContinuousClock.now
        for kind in kinds {
            for index in 0..<copies {
                let reply = try await rig.send(.post, "/wechat/notify", token: nil, body: kind.make(index))
                guard reply.status == 200, String(decoding: reply.body, as: UTF8.self).contains("[FAIL]") else {
                    Issue.record("\(kind.name) #\(index) was not refused: \(reply.status)")
                    break
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        #expect(await TableRowCounts.of(rig.database) == rowsBefore, "a forged notify wrote a row")
        #expect(try await rig.store.events("forge-1000").map(\.kind) == ["created", "prepay"])

        let metrics = rig.services.metrics
        for reason in Set(kinds.map(\.reason)) {
            let expected = kinds.filter { $0.reason == reason }.count * copies
            #expect(metrics.counter("wxpay_notifies_total", ["outcome": "rejected", "reason": reason]) == Double(expected),
                    "\(reason)")
        }
        // At most one line a second per reason, each saying how many it held back; every refusal
        // is either a line or among those counted (the ones after the last line aside).
        let lines = log.all.filter { $0.message == "payment notify rejected" }
        let reasons = Set(kinds.map(\.reason)).count
        let seconds = Int(elapsed.components.seconds) + 1
        #expect(lines.count >= reasons && lines.count <= reasons * (seconds + 1), "\(lines.count) lines in \(seconds) s")
        let accounted = lines.reduce(0) { $0 + 1 + (Int($1.metadata["suppressed"] ?? "") ?? 0) }
        #expect(accounted <= kinds.count * copies)
        #expect(lines.allSatisfy { $0.level == .warning && $0.metadata["reason"] != nil })
    }

    /// A signed notify for another amount is authenticated (a leaked key, or a bug): each copy is
    /// counted, the timeline line written once a minute, and the warning logged at most once a second.
    @Test func aReplayedWrongAmountNotifyIsLoggedAtMostOnceASecond() async throws {
        let log = InMemoryLogHandler()
        let rig = try await GatewayRig.start(.inProcess, logger: Logger(label: "test", level: .info, handler: log))
        defer { Task { await rig.stop() } }
        _ = try await rig.createOrder("forge-amount", amount: 990)
        let copies = 40
        let started = ContinuousClock.now
        for index in 0..<copies {
            let body = rig.forgedNotify("forge-amount", amount: 1, nonce: "amount\(index)")
            let reply = try await rig.send(.post, "/wechat/notify", token: nil, body: body)
            #expect(String(decoding: reply.body, as: UTF8.self).contains("<return_code><![CDATA[FAIL]]></return_code>"))
        }
        let seconds = Int((ContinuousClock.now - started).components.seconds) + 1
        #expect(rig.services.metrics.counter("wxpay_amount_mismatches_total", ["source": "notify"]) == Double(copies))
        // One line a minute: on a machine so loaded that the copies took more than one, one more
        // per minute they took.
        let mismatchLines = try await rig.store.events("forge-amount").filter { $0.kind == "amount_mismatch" }
        #expect((1...(1 + seconds / 60)).contains(mismatchLines.count),
                "\(mismatchLines.count) lines in \(seconds) s: \(mismatchLines.map { "\($0.at.timeIntervalSince1970)" })")
        let warnings = log.all.filter { $0.message == "WeChat reported another amount than the order's; not settled" }
        #expect(!warnings.isEmpty && warnings.count <= seconds, "\(warnings.count) warnings in \(seconds) s")
        let accounted = warnings.reduce(0) { $0 + 1 + (Int($1.metadata["suppressed"] ?? "") ?? 0) }
        #expect(accounted <= copies)
    }

    /// A notify signed with the merchant's key (a leaked key, or a broken clock at WeChat) whose
    /// `time_end` lies years ahead or before the order existed: paid, since the signature and the
    /// amount hold, but `paid_at` is when the gateway learned it, so a month's pass does not run to
    /// 2036 and the bill of the day it was paid still finds (or misses) it; the timeline says why.
    @Test(arguments: [("ahead", 10 * 365 * 86_400.0), ("before the order", -86_400.0)])
    func aSignedNotifyPaidOutsideTheOrdersLifeIsPaidWhenTheGatewayLearnedIt(_ when: String, offset: TimeInterval) async throws {
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        let outTradeNo = "forge-time-\(offset > 0 ? "a" : "b")"
        _ = try await rig.createOrder(outTradeNo, amount: 990)
        let before = Date()
        let body = rig.forgedNotify(outTradeNo, amount: 990, timeEnd: Date().addingTimeInterval(offset))
        let reply = try await rig.send(.post, "/wechat/notify", token: nil, body: body)
        #expect(String(decoding: reply.body, as: UTF8.self).contains(Battery.acknowledged))
        let order = try #require(try await rig.store.order(outTradeNo))
        #expect(order.state == .success)
        let paidAt = try #require(order.paidAt)
        #expect(paidAt >= before.addingTimeInterval(-1) && paidAt <= Date().addingTimeInterval(1), "\(when): \(paidAt)")
        let line = try await rig.store.events(outTradeNo).first { $0.kind == OrderEvent.stateChangedKind && $0.detail.contains("SUCCESS") }
        #expect(line?.detail.contains("is outside the order's life; paid_at is when the gateway learned of the payment") == true,
                "\(line?.detail ?? "no line")")
        // A time within the order's life is WeChat's, as before.
        let fair = "forge-time-fair-\(offset > 0 ? "a" : "b")"
        _ = try await rig.createOrder(fair, amount: 990)
        let paidMinutesAgo = Date().addingTimeInterval(-120)
        _ = try await rig.send(.post, "/wechat/notify", token: nil, body: rig.forgedNotify(fair, amount: 990, timeEnd: paidMinutesAgo))
        let fairPaidAt = try #require(try await rig.store.order(fair)?.paidAt)
        #expect(abs(fairPaidAt.timeIntervalSince(paidMinutesAgo)) < 1)
    }

    static func state(_ rig: GatewayRig, _ outTradeNo: String) async -> String? {
        (try? await rig.send(.get, "/v1/orders/\(outTradeNo)"))?.json["state"] as? String
    }
}
