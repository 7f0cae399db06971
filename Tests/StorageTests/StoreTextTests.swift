// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

/// PostgreSQL's `text` cannot hold U+0000, so no store accepts it in any write: what one store
/// keeps, every store keeps. SQLite could hold it, and used to, wherever the check was written in
/// the PostgreSQL store only; the checks now live once in StorageCore, and every write is tried
/// here on both stores.
struct StoreTextTests {
    static let nul = "a\u{0}b"
    static let at = TestTime.at(300)

    /// `write` is refused as an invalid argument, and the database is exactly as it was.
    static func expectRefused(_ database: TestDatabase, _ what: Comment,
                              _ write: () async throws -> Void) async throws {
        let before = await database.tableRowCounts()
        await #expect(throws: StorageError.invalidArgument, what) { try await write() }
        #expect(await database.tableRowCounts() == before, what)
    }

    @Test("Text with U+0000 in an order's writes is refused by every store, and nothing is written",
          arguments: StoreKind.all)
    func orderWrites(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, database async throws in
            try await Fixture.create(Fixture.order("N1"), in: store)
            try await Fixture.create(Fixture.order("N2"), in: store)
            _ = try await Fixture.pay("N2", in: store)
            let event = NewOrderEvent(kind: "note", detail: Self.nul, at: Self.at)
            let order = try #require(try await store.order("N1"))
            let outbox = try #require(try await store.outboxEvents("N2").first)

            try await Self.expectRefused(database, "create's event") {
                _ = try await store.create(Fixture.order("N3"), event: event)
            }
            try await Self.expectRefused(database, "setPrepay's prepay_id") {
                _ = try await store.setPrepay("N1", prepayID: Self.nul, issuedAt: Self.at, event: nil)
            }
            try await Self.expectRefused(database, "setPrepay's event") {
                _ = try await store.setPrepay("N1", prepayID: "wx1", issuedAt: Self.at, event: event)
            }
            try await Self.expectRefused(database, "a transition's transaction id") {
                _ = try await store.transition(OrderTransition(
                    outTradeNo: "N1", to: .success, from: OrderState.open, transactionID: Self.nul, paidAt: Self.at, at: Self.at))
            }
            try await Self.expectRefused(database, "a transition's detail") {
                _ = try await store.transition(OrderTransition(
                    outTradeNo: "N1", to: .closed, from: OrderState.open, detail: Self.nul, at: Self.at))
            }
            try await Self.expectRefused(database, "a transition's receipt") {
                _ = try await store.transition(OrderTransition(
                    outTradeNo: "N1", to: .closed, from: OrderState.open, at: Self.at,
                    receipt: TransitionReceipt(kind: "closed", changedDetail: Self.nul, unchangedDetail: "")))
            }
            try await Self.expectRefused(database, "a transition's outbox event") {
                var paid = Fixture.paid("N1", at: Self.at)
                paid.payload = Self.nul
                _ = try await store.transition(OrderTransition(
                    outTradeNo: "N1", to: .success, from: OrderState.open, transactionID: "wx-N1", paidAt: Self.at,
                    outbox: paid, at: Self.at))
            }
            try await Self.expectRefused(database, "appendEvent") { _ = try await store.appendEvent("N1", event) }
            try await Self.expectRefused(database, "appendEvent(quietSince:)") {
                _ = try await store.appendEvent("N1", event, quietSince: TestTime.t0)
            }
            try await Self.expectRefused(database, "reschedule's last error") {
                _ = try await store.reschedule(outbox.id, nextAttemptAt: Self.at, attempts: 1, lastError: Self.nul)
            }
            try await Self.expectRefused(database, "deadLetter's last error") {
                _ = try await store.deadLetter(outbox.id, at: Self.at, lastError: Self.nul)
            }
            #expect(try await store.order("N1") == order)
            #expect(try await store.outboxEvents("N2") == [outbox])
        }
    }

    @Test("Text with U+0000 in a refund's writes is refused by every store, and nothing is written",
          arguments: StoreKind.all)
    func refundWrites(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, database async throws in
            try await RefundStoreTests.paidOrder("R1", in: store)
            let event = NewOrderEvent(kind: "refund", detail: Self.nul, at: Self.at)
            try await Self.expectRefused(database, "createRefund's event") {
                _ = try await store.createRefund(RefundStoreTests.request("RF0", order: "R1", amount: 100),
                                                 maximumPerOrder: 50, event: event)
            }
            _ = try await store.createRefund(RefundStoreTests.request("RF1", order: "R1", amount: 100), maximumPerOrder: 50,
                                             event: RefundStoreTests.requested)
            let refund = try #require(try await store.refund("RF1"))
            try await Self.expectRefused(database, "recordRefundAccepted's refund id") {
                _ = try await store.recordRefundAccepted("RF1", refundID: Self.nul, at: Self.at, event: nil)
            }
            try await Self.expectRefused(database, "recordRefundAccepted's event") {
                _ = try await store.recordRefundAccepted("RF1", refundID: "5030", at: Self.at, event: event)
            }
            try await Self.expectRefused(database, "transitionRefund's failure reason") {
                _ = try await store.transitionRefund(RefundTransition(
                    outRefundNo: "RF1", to: .change, from: [.processing], failureReason: Self.nul, at: Self.at))
            }
            try await Self.expectRefused(database, "transitionRefund's detail") {
                _ = try await store.transitionRefund(RefundTransition(
                    outRefundNo: "RF1", to: .success, from: [.processing], detail: Self.nul, at: Self.at))
            }
            #expect(try await store.refund("RF1") == refund)
        }
    }

    @Test("Text with U+0000 in the App Store's writes is refused by every store, and nothing is written",
          arguments: StoreKind.all)
    func appStoreWrites(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, database async throws in
            try await Fixture.create(IAPStoreTests.appleOrder("K1"), in: store)
            let event = NewOrderEvent(kind: "appstore_consumption", detail: Self.nul, at: Self.at)
            try await Self.expectRefused(database, "recordAppStoreNotification") {
                _ = try await store.recordAppStoreNotification(AppStoreNotificationRecord(
                    notificationUUID: "u1", notificationType: "REFUND", subtype: Self.nul, environment: "Production",
                    transactionID: nil, signedDate: Self.at, receivedAt: Self.at, outcome: "applied"))
            }
            try await Self.expectRefused(database, "recordConsumptionRequest's events") {
                _ = try await store.recordConsumptionRequest(AppStoreRecoveryStoreTests.request("c0", order: "K1"),
                                                             events: [event], outbox: nil)
            }
            #expect(try await store.recordConsumptionRequest(AppStoreRecoveryStoreTests.request("c1", order: "K1"),
                                                             events: [], outbox: nil))
            let request = try await store.consumptionRequests(outTradeNo: "K1")
            try await Self.expectRefused(database, "answerConsumption's event") {
                _ = try await store.answerConsumption("c1", answer: "{}", consented: true, by: .business, at: Self.at,
                                                      event: event)
            }
            try await Self.expectRefused(database, "finishConsumptionAttempt's event") {
                _ = try await store.finishConsumptionAttempt("c1", claimant: "s", outcome: .expired, at: Self.at, event: event)
            }
            #expect(try await store.consumptionRequests(outTradeNo: "K1") == request)
        }
    }
}
