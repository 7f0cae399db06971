// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import Observability
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

struct BillReconcilerTests {
    static func order(_ outTradeNo: String) -> String {
        #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)"}"#
    }

    /// An order WeChat holds that this gateway never sent: unifiedorder straight to the simulator.
    static func orderOnlyAtWeChat(_ harness: GatewayRig, _ outTradeNo: String, amount: Int) async throws {
        let client = WeChatPayClient(
            merchant: MerchantCredentials(appID: GatewayConfiguration.demoAppID, mchID: GatewayConfiguration.demoMchID,
                                          key: APIKey(GatewayConfiguration.demoKey), signType: .hmacSHA256),
            transport: SimulatorTransport(simulator: harness.simulator), nonces: RandomNonceSource())
        _ = try await client.send(UnifiedOrderRequest(
            body: "Swift 入门课", outTradeNo: outTradeNo, totalFee: amount, spbillCreateIP: "203.0.113.7",
            notifyURL: "http://127.0.0.1:9/wechat/notify"))
    }

    /// A local order written straight into the store (another amount, or a forged payment).
    static func localOrder(_ harness: GatewayRig, _ outTradeNo: String, amount: Int, paidAt: Date? = nil) async throws {
        let now = harness.clock.now()
        let record = OrderRecord(
            outTradeNo: outTradeNo, amount: amount, description: "Swift 入门课", clientIP: "203.0.113.7",
            signType: "HMAC-SHA256", timeExpire: BeijingTime.format(now + 7200), expiresAt: now + 7200, createdAt: now,
            parametersDigest: "forged-\(outTradeNo)")
        _ = try await harness.store.create(record, event: NewOrderEvent(kind: "created", detail: "test", at: now))
        if let paidAt {
            _ = try await harness.store.transition(outTradeNo, to: .success, from: OrderState.open,
                                                   transactionID: "4200000000-forged-\(outTradeNo)",
                                                   paidAt: paidAt, expectedAmount: amount, detail: "test: forged", at: now)
        }
    }

    static func day(_ date: Date) -> String {
        let compact = BeijingTime.formatDay(date)
        return "\(compact.prefix(4))-\(compact.dropFirst(4).prefix(2))-\(compact.suffix(2))"
    }

    @Test(arguments: StoreKind.all) func aBillWithADroppedPaymentAndDisagreementsSettlesTheOneAndReportsTheOthers(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        // Keep every payment on one Beijing day, whatever time the test runs.
        let secondOfDay = (Int(harness.clock.now().timeIntervalSince1970) + BeijingTime.offsetSeconds) % 86400
        if secondOfDay > 86400 - 900 { harness.clock.advance(by: 1200) }
        let paymentDay = harness.clock.now()
        let dayStart = try #require(BeijingTime.parseDay(BeijingTime.formatDay(paymentDay)))

        _ = try await harness.create(Self.order("bill-match"))
        try harness.simulator.pay(outTradeNo: "bill-match")
        #expect(await eventually { (try? await harness.store.order("bill-match"))??.state == .success })

        // From here on WeChat's notifies are lost and no reconciler runs.
        harness.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        _ = try await harness.create(Self.order("bill-dropped"))
        try harness.simulator.pay(outTradeNo: "bill-dropped")
        // WeChat has 9.90 yuan for this out_trade_no; our record says 10.00 yuan.
        try await Self.orderOnlyAtWeChat(harness, "bill-amount", amount: 990)
        try await Self.localOrder(harness, "bill-amount", amount: 1000)
        try harness.simulator.pay(outTradeNo: "bill-amount")
        try await Self.orderOnlyAtWeChat(harness, "bill-stranger", amount: 500)
        try harness.simulator.pay(outTradeNo: "bill-stranger")
        // Paid locally at 23:59:59 Beijing on the day (in that day's bill), and at 00:00:00 the next.
        try await Self.localOrder(harness, "local-late", amount: 100, paidAt: dayStart + 86399)
        try await Self.localOrder(harness, "local-next-day", amount: 100, paidAt: dayStart + 86400)
        #expect(try await harness.store.order("bill-dropped")?.state == .notPay)

        // The bill is ready the next morning.
        let tomorrowTen = dayStart + 86400 + 10 * 3600 + 60
        harness.clock.advance(by: tomorrowTen.timeIntervalSince(harness.clock.now()))
        let report = try await BillReconciler(services: harness.services).reconcile(day: Self.day(paymentDay))

        #expect(report.billPayments == 4)
        #expect(report.matched == 1)
        var kinds: [String: BillDifference.Kind] = [:]
        for difference in report.differences { kinds[difference.outTradeNo] = difference.kind }
        #expect(kinds == [
            "bill-dropped": .settledFromBill, "bill-amount": .amountMismatch, "bill-stranger": .unknownOrder,
            "local-late": .paidLocallyNotInBill,
        ])
        #expect(!report.isClean)
        // The dropped payment is settled through the one door, after orderquery confirmed it.
        let dropped = try #require(try await harness.store.order("bill-dropped"))
        #expect(dropped.state == .success)
        #expect(dropped.transactionID == harness.simulator.order("bill-dropped")?.transactionID)
        #expect(try await harness.store.outboxEvents("bill-dropped").count == 1)
        let droppedEvents = try await harness.store.events("bill-dropped")
        #expect(droppedEvents.contains { $0.kind == OrderEvent.stateChangedKind && $0.detail.contains("bill") })
        // A mismatch is reported, never applied.
        #expect(try await harness.store.order("bill-amount")?.state == .notPay)
        let amountEvents = try await harness.store.events("bill-amount")
        #expect(amountEvents.contains { $0.kind == "bill" && $0.detail.contains("amount_mismatch") })
        #expect(try await harness.store.events("local-late").contains { $0.kind == "bill" })

        let text = report.render()
        for number in ["bill-dropped", "bill-amount", "bill-stranger", "local-late"] { #expect(text.contains(number)) }
        #expect(!text.contains("local-next-day"))
        #expect(text.contains("bill 9.90 yuan, order 10.00 yuan"))
        #expect(text.contains("DIFFERENCES FOUND"))
        #expect(harness.metrics.counter("wxpay_bill_differences_total", ["kind": "settled_from_bill"]) == 1)

        // A second run repairs nothing more and finds the dropped order matched.
        let again = try await BillReconciler(services: harness.services).reconcile(day: Self.day(paymentDay))
        #expect(again.matched == 2)
        #expect(!again.differences.contains { $0.kind == .settledFromBill })
    }

    @Test(arguments: StoreKind.all) func aDayWithoutTransactionsStillReportsLocalPaymentsAbsentFromTheBill(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        let dayStart = try #require(BeijingTime.parseDay(BeijingTime.formatDay(harness.clock.now())))
        try await Self.localOrder(harness, "ghost-0001", amount: 100, paidAt: dayStart + 3600)
        harness.clock.advance(by: (dayStart + 86400 + 11 * 3600).timeIntervalSince(harness.clock.now()))
        let report = try await BillReconciler(services: harness.services).reconcile(day: Self.day(dayStart))
        #expect(report.billPayments == 0)
        #expect(report.differences.map(\.kind) == [.paidLocallyNotInBill])
    }

    @Test func todaysBillIsNotReadyAndSaysSoInPlainWords() async throws {
        let harness = try await GatewayRig.start(.inProcess)
        defer { Task { await harness.stop() } }
        do {
            _ = try await BillReconciler(services: harness.services).reconcile(day: Self.day(harness.clock.now()))
            Issue.record("today's bill was reconciled")
        } catch {
            #expect(error == .notReady)
            #expect(error.description.contains("has not made that day's bill yet"), "\(error)")
        }
    }

    @Test(arguments: StoreKind.all) func aMalformedDayIsRefusedBeforeAnythingIsDownloaded(store: StoreKind) async throws {
        let harness = try await GatewayRig.start(.inProcess, store: store)
        defer { Task { await harness.stop() } }
        for day in ["2026-13-01", "20261130", "2026-11-3", "yesterday"] {
            await #expect(throws: BillReconciliationError.invalidDay) {
                _ = try await BillReconciler(services: harness.services).reconcile(day: day)
            }
        }
        #expect(harness.simulator.counters.requests["/pay/downloadbill"] == nil)
    }

    @Test func theDailyRunIsAfterTenBeijingTimeForThePreviousDay() throws {
        // 2026-11-30 09:59:59 Beijing = 01:59:59 UTC.
        let before = try #require(BeijingTime.parse("20261130095959"))
        let next = DailyBillReconciliation.nextRun(after: before)
        #expect(BeijingTime.format(next.at) == "20261130100000")
        #expect(next.day == "2026-11-29")
        let after = DailyBillReconciliation.nextRun(after: try #require(BeijingTime.parse("20261130100000")))
        #expect(BeijingTime.format(after.at) == "20261201100000")
        #expect(after.day == "2026-11-30")
        // Just before midnight Beijing (16:00 UTC the same date) the next run is the morning after.
        let late = DailyBillReconciliation.nextRun(after: try #require(BeijingTime.parse("20261130235959")), offset: 300)
        #expect(BeijingTime.format(late.at) == "20261201100500")
        #expect(late.day == "2026-11-30")
    }
}
