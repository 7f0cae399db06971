// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
@testable import Gateway
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// `POST /v1/support/bills/{day}/reconcile`: a day's bill compared on a support token's request,
/// against the embedded simulator (how demo mode runs it), in process and over sockets.
struct BillReconcileAPITests {
    static func path(_ day: String) -> String { "/v1/support/bills/\(day)/reconcile" }

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func aSupportCallSettlesADroppedPaymentFromTheBillAndAnswersTheReport(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        // Every payment on one Beijing day, whatever time the test runs.
        let secondOfDay = (Int(rig.clock.now().timeIntervalSince1970) + BeijingTime.offsetSeconds) % 86400
        if secondOfDay > 86400 - 900 { rig.clock.advance(by: 1200) }
        let dayStart = try #require(BeijingTime.parseDay(BeijingTime.formatDay(rig.clock.now())))
        let day = BillReconcilerTests.day(dayStart)
        _ = try await rig.create(BillReconcilerTests.order("api-bill-1"))
        // Paid at WeChat, the notify lost: the gateway does not know.
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        try rig.simulator.pay(outTradeNo: "api-bill-1")
        #expect(try await rig.store.order("api-bill-1")?.state == .notPay)

        // Before the bill is made: 409, nothing settled; a client token may not ask at all.
        let early = try await rig.send(.post, Self.path(day), token: GatewayRig.support)
        #expect(early.status == 409 && early.error?["code"] as? String == "bill_not_ready")
        // Asked again when WeChat has made it: 10:00 Beijing time the next day, counted when the
        // gateway answered (a loaded machine may take seconds more to hand the answer over).
        let retryAfter = try #require(early.headers["Retry-After"].flatMap { Int($0) })
        let readyIn = Int((dayStart + 86400 + 36000).timeIntervalSince(rig.clock.now()).rounded(.up))
        #expect(retryAfter >= readyIn - 1 && retryAfter <= readyIn + 120, "\(retryAfter) against \(readyIn)")
        #expect(try await rig.send(.post, Self.path(day), token: GatewayRig.client).status == 403)
        #expect(try await rig.send(.post, Self.path(day), token: nil).status == 401)
        #expect(try await rig.store.order("api-bill-1")?.state == .notPay)

        rig.clock.advance(by: (dayStart + 86400 + 11 * 3600).timeIntervalSince(rig.clock.now()))
        let answer = try await rig.send(.post, Self.path(day), token: GatewayRig.support, body: #"{"reason":"the notify never came"}"#)
        #expect(answer.status == 200)
        #expect(answer.json["day"] as? String == day && answer.json["bill_payments"] as? Int == 1)
        // The order settled from the bill counts among the day's local payments, not as matched.
        #expect(answer.json["local_payments"] as? Int == 1 && answer.json["matched"] as? Int == 0)
        #expect(answer.json["clean"] as? Bool == true)
        let differences = try #require(answer.json["differences"] as? [[String: Any]])
        #expect(differences.map { $0["kind"] as? String } == ["settled_from_bill"])
        #expect(differences.first?["needs_person"] as? Bool == false && differences.first?["out_trade_no"] as? String == "api-bill-1")
        #expect(try await rig.store.order("api-bill-1")?.state == .success)

        // On record: who asked for which day, and why.
        let entries = try await rig.store.auditEntries(AuditQuery(action: "api_reconcile_bill"), limit: 10, before: nil).entries.map(\.entry)
        #expect(entries.map(\.target) == ["day=\(day)", "day=\(day)"])
        #expect(entries.first?.detail.contains("the notify never came") == true)
        #expect(entries.first?.detail.contains("clean") == true)
    }

    @Test func aDayThatIsNotOneOrHasNotBegunOrABodyWithOtherMembersIsRefusedBeforeAnythingIsDownloaded() async throws {
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        // Not a day, a day that has not begun (no bill yet, whatever WeChat would say).
        for day in ["2026-13-01", "20261130", "2026-11-3", "yesterday", BillReconcilerTests.day(rig.clock.now() + 86400), "2856-01-05"] {
            let answer = try await rig.send(.post, Self.path(day), token: GatewayRig.support)
            #expect(answer.status == 400 && answer.error?["field"] as? String == "day", "\(day)")
        }
        let extra = try await rig.send(.post, Self.path("2026-11-30"), token: GatewayRig.support, body: #"{"day":"2026-11-29"}"#)
        #expect(extra.status == 400 && extra.error?["field"] as? String == "day")
        #expect(rig.simulator.counters.requests["/pay/downloadbill"] == nil)
    }

    @Test func oneComparisonRunsAtATimeAndTheNextMayStartOnceItHasEnded() {
        let gate = BillReconciliationGate()
        #expect(gate.start())
        #expect(!gate.start(), "a second while the first runs: 409 reconcile_running")
        gate.end()
        #expect(gate.start())
    }

    @Test func aDayOlderThanWeChatKeepsBillsIsRefusedAsADayWithoutABill() async throws {
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        let answer = try await rig.send(.post, Self.path(BillReconcilerTests.day(rig.clock.now() - 200 * 86400)), token: GatewayRig.support)
        #expect(answer.status == 400 && answer.error?["field"] as? String == "day")
        #expect((answer.error?["message"] as? String)?.contains("three months") == true)
    }
}
