// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import Observability
import StorageCore
import StoreTestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// `POST /wechat/refund-notify`: only a notify that decrypts under our key and names a stored
/// refund with its amounts changes anything; every other writes nothing and is answered FAIL
/// (reliability.md T13, at small scale).
struct RefundNotifyTests {
    static func post(_ rig: RefundRig, _ body: String) async throws -> String {
        String(decoding: try await rig.send(.post, "/wechat/refund-notify", token: nil, body: body).body, as: UTF8.self)
    }

    /// Everything a notify could have written.
    static func snapshot(_ rig: RefundRig, _ orders: [String]) async throws -> [String] {
        var lines: [String] = []
        for order in orders {
            lines.append(contentsOf: try await rig.store.events(order).map { "\($0.id) \($0.kind) \($0.detail)" })
            lines.append(contentsOf: try await rig.store.outboxEvents(order).map(\.id))
            lines.append(contentsOf: try await rig.store.refunds(outTradeNo: order).map {
                "\($0.outRefundNo) \($0.state) \($0.refundID ?? "-") \($0.lastNotifyAt?.timeIntervalSince1970 ?? 0)"
            })
            lines.append(try await rig.store.order(order).map { "\($0.state) \($0.flags)" } ?? "")
        }
        return lines
    }

    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func forgedRefundNotifiesAreRefusedAndWriteNothing(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("fn-ord-a", amount: 900)
        try await rig.paidOrder("fn-ord-b", amount: 900)
        _ = try await rig.refund("fn-ord-a", amount: 300, number: "fn-a-r1")
        _ = try await rig.refund("fn-ord-b", amount: 300, number: "fn-b-r1")
        // A's genuine SUCCESS notify, as WeChat sent it: the material of the replay below.
        let genuine = try await rig.refundNotify("fn-a-r1")
        #expect(try await Self.post(rig, genuine).contains("SUCCESS"))
        #expect(try await rig.store.refund("fn-a-r1")?.state == .success)

        let otherKey = APIKey("00000000000000000000000000000000")
        var tampered = try #require(try? FlatXML.decode(Array(try await rig.refundNotify("fn-b-r1").utf8)))
        var cipher = [UInt8](try #require(Data(base64Encoded: tampered["req_info"] ?? "")))
        cipher[cipher.count - 3] ^= 0x5A
        tampered["req_info"] = Data(cipher).base64EncodedString()
        var wrongApp = try #require(try? FlatXML.decode(Array(try await rig.refundNotify("fn-b-r1").utf8)))
        wrongApp["appid"] = "wx0000000000000000"
        // The merchant's mini program is not the app order B was paid through.
        var anotherApp = try #require(try? FlatXML.decode(Array(try await rig.refundNotify("fn-b-r1").utf8)))
        anotherApp["appid"] = WeChatApps.demo[1].appID
        var failed = try #require(try? FlatXML.decode(Array(try await rig.refundNotify("fn-b-r1").utf8)))
        failed["return_code"] = "FAIL"
        let forgeries: [(String, String)] = [
            ("another key", try await rig.refundNotify("fn-b-r1", key: otherKey)),
            ("tampered ciphertext", String(decoding: try FlatXML.encode(tampered), as: UTF8.self)),
            ("changed amount", try await rig.refundNotify("fn-b-r1") { $0.refundFee = 1; $0.settlementRefundFee = 1 }),
            ("changed order amount", try await rig.refundNotify("fn-b-r1") { $0.totalFee = 1 }),
            ("another order", try await rig.refundNotify("fn-b-r1") { $0.outTradeNo = "fn-ord-a" }),
            ("unknown refund", try await rig.refundNotify("fn-b-r1") { $0.outRefundNo = "fn-nobody" }),
            // Signed with our key yet naming another refund_id or payment than WeChat gave us.
            ("another refund_id", try await rig.refundNotify("fn-b-r1") { $0.refundID = "50300000000000000000099999999" }),
            ("another transaction_id", try await rig.refundNotify("fn-b-r1") { $0.transactionID = "4200000000000000000000000999" }),
            ("wrong appid", String(decoding: try FlatXML.encode(wrongApp), as: UTF8.self)),
            ("another of the merchant's apps", String(decoding: try FlatXML.encode(anotherApp), as: UTF8.self)),
            ("return_code FAIL", String(decoding: try FlatXML.encode(failed), as: UTF8.self)),
            ("a payment notify", Battery.genuineNotify(outTradeNo: "fn-ord-b", transactionID: "4200000000000000000000000001",
                                                        totalFee: 900, nonce: "n").utf8String),
            ("XXE", #"<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY x SYSTEM "file:///etc/passwd">]><xml><req_info>&x;</req_info></xml>"#),
            ("not XML", "{\"req_info\":\"x\"}"),
        ]
        let before = try await Self.snapshot(rig, ["fn-ord-a", "fn-ord-b"])
        for (name, body) in forgeries {
            for _ in 0..<3 {
                let reply = try await Self.post(rig, body)
                #expect(reply.contains("<return_code><![CDATA[FAIL]]></return_code>"), "\(name) was acknowledged")
            }
        }
        // Another refund's genuine req_info replayed while B is still PROCESSING: it says A, and A
        // is already SUCCESS; B is not touched.
        #expect(try await Self.post(rig, genuine).contains("SUCCESS"))
        #expect(try await Self.snapshot(rig, ["fn-ord-a", "fn-ord-b"]) == before)
        #expect(try await rig.store.refund("fn-b-r1")?.state == .processing)
        #expect(try await rig.events("fn-ord-a", type: "refund.succeeded").count == 1)
        #expect(try await rig.events("fn-ord-b", type: "refund.succeeded").isEmpty)
        let rejected = Battery.sum(rig.metrics.exposition(), #"wxpay_refund_notifies_total{outcome="rejected""#)
        #expect(rejected == Double(forgeries.count * 3))
        #expect(rig.metrics.counter("wxpay_refund_notifies_total", ["outcome": "duplicate"]) == 1)
    }

    @Test(arguments: StoreKind.all)
    func aSuccessTimeOutsideTheRefundsLifeIsReplacedByWhenTheGatewayLearnedOfIt(store: StoreKind) async throws {
        let rig = try await RefundRig.start(.inProcess, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("st-ord", amount: 900)
        let cases: [(String, Date)] = [("st-r1", Date(timeIntervalSince1970: 4_070_908_800)),  // 2099
                                       ("st-r2", Date(timeIntervalSince1970: 946_684_800)),    // 2000, before the refund
                                       ("st-r3", Date().addingTimeInterval(-30))]               // within clocks' difference: kept
        for (number, reported) in cases {
            _ = try await rig.refund("st-ord", amount: 100, number: number)
            let before = Date()
            let notify = try await rig.refundNotify(number) { $0.successTime = reported }
            #expect(try await Self.post(rig, notify).contains("SUCCESS"))
            let succeeded = try #require(try await rig.store.refund(number)?.succeededAt)
            if number == "st-r3" {
                #expect(abs(succeeded.timeIntervalSince(reported)) < 1, "\(number): \(succeeded)")
            } else {
                #expect(succeeded >= before.addingTimeInterval(-1) && succeeded <= Date().addingTimeInterval(1), "\(number): \(succeeded)")
            }
        }
    }

    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func duplicateConcurrentRefundNotifiesSettleOnceAndAreAllAcknowledged(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("fn-dup", amount: 500)
        _ = try await rig.refund("fn-dup", amount: 500, number: "fn-dup-r1")
        let notify = try await rig.refundNotify("fn-dup-r1")
        let replies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 { group.addTask { try await Self.post(rig, notify) } }
            var replies: [String] = []
            for try await reply in group { replies.append(reply) }
            return replies
        }
        #expect(replies.allSatisfy { $0.contains("<return_code><![CDATA[SUCCESS]]></return_code>") })
        #expect(try await rig.events("fn-dup", type: "refund.succeeded").count == 1)
        #expect(try await rig.store.events("fn-dup").filter { $0.kind == "refund_state_changed" }.count == 1)
        #expect(try await rig.store.order("fn-dup")?.state == .refund)
    }

    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func aContradictingRefundNotifyReplayedWritesOneLineAMinuteAndIsCountedEveryTime(mode: RefundRig.Mode, store: StoreKind)
        async throws
    {
        let log = InMemoryLogHandler()
        let rig = try await RefundRig.start(mode, store: store, logger: Logger(label: "test", level: .info, handler: log))
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("fn-conflict", amount: 900)
        _ = try await rig.refund("fn-conflict", amount: 300, number: "fn-conflict-r1")
        #expect(try await Self.post(rig, try await rig.refundNotify("fn-conflict-r1")).contains("SUCCESS"))
        #expect(try await rig.store.refund("fn-conflict-r1")?.state == .success)

        // A decryptable REFUNDCLOSE after SUCCESS, replayed (half the copies one after the other,
        // half at once): acknowledged (retries would not help), counted every time, on the
        // timeline once, logged at most once a second.
        let contradicting = try await rig.refundNotify("fn-conflict-r1", status: .refundClose)
        let copies = 30
        let started = ContinuousClock.now
        for _ in 0..<(copies / 2) {
            #expect(try await Self.post(rig, contradicting).contains("SUCCESS"))
        }
        let acknowledged = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<(copies / 2) { group.addTask { try await Self.post(rig, contradicting).contains("SUCCESS") } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(acknowledged == copies / 2)
        let seconds = Int((ContinuousClock.now - started).components.seconds) + 1
        #expect(rig.metrics.counter("wxpay_refund_notifies_total", ["outcome": "contradicts_final_state"]) == Double(copies))
        // One line a minute (on a machine so loaded that the copies took longer, one more per minute).
        let lines = try await rig.store.events("fn-conflict").filter { $0.kind == "refund_notify_conflict" }
        #expect((1...(1 + seconds / 60)).contains(lines.count), "\(lines.count) lines in \(seconds) s")
        #expect(Set(lines.map(\.detail)) == ["fn-conflict-r1: notify says REFUNDCLOSE, the refund is SUCCESS"])
        let logged = log.all.filter { $0.message == "a refund notify contradicts the refund's final state" }
        #expect(!logged.isEmpty && logged.count <= seconds, "\(logged.count) log lines in \(seconds) s")
        #expect(try await rig.store.refund("fn-conflict-r1")?.state == .success)
    }
}

extension [UInt8] {
    var utf8String: String { String(decoding: self, as: UTF8.self) }
}
