// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

struct RefundStoreTests {
    static func request(_ outRefundNo: String, order: String = "O1", amount: Int, reason: String = "bought by mistake",
                        at: Date = TestTime.at(120)) -> NewRefund {
        NewRefund(outRefundNo: outRefundNo, outTradeNo: order, amount: amount, reason: reason,
                  notifyURL: "https://pay.example.com/wechat/refund-notify",
                  parametersDigest: "\(order)|\(amount)|\(reason)", createdAt: at)
    }

    static let requested = NewOrderEvent(kind: "refund_requested", detail: "test", at: TestTime.at(120))

    /// A paid order of `amount` fen.
    static func paidOrder(_ outTradeNo: String = "O1", amount: Int = 1000, in store: some OrderStore) async throws {
        try await Fixture.create(Fixture.order(outTradeNo, amount: amount), in: store)
        _ = try await Fixture.pay(outTradeNo, in: store)
    }

    static func create(_ refund: NewRefund, in store: some RefundStore, limit: Int = 50) async throws -> RefundCreateResult {
        try await store.createRefund(refund, maximumPerOrder: limit, event: requested)
    }

    static func succeed(_ outRefundNo: String, in store: some RefundStore, at: Date = TestTime.at(200))
        async throws -> RefundTransitionResult
    {
        try await store.transitionRefund(RefundTransition(
            outRefundNo: outRefundNo, to: .success, from: [.processing, .change], refundID: "5030-\(outRefundNo)",
            succeededAt: at, detail: "test",
            outbox: { refund in
                OutboxEvent(id: "evt-\(refund.outRefundNo)", outTradeNo: refund.outTradeNo, type: "refund.succeeded",
                            payload: "{}", createdAt: at)
            }, at: at))
    }

    @Test("the counts give, by API version, the orders not final and the refunds still PROCESSING", arguments: StoreKind.all)
    func inFlightWorkIsCountedByAPIVersion(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            #expect(try await store.counts().inFlightByAPIVersion.isEmpty)
            func order(_ number: String, _ version: String) -> OrderRecord {
                var order = Fixture.order(number, amount: 1000)
                order.apiVersion = version
                return order
            }
            for (number, version) in [("V2-open", "v2"), ("V3-open", "v3"), ("V3-open-2", "v3"), ("V3-paid", "v3"),
                                      ("V3-refunding", "v3"), ("V3-refunded", "v3")] {
                try await Fixture.create(order(number, version), in: store)
            }
            for number in ["V3-paid", "V3-refunding", "V3-refunded"] { _ = try await Fixture.pay(number, in: store) }
            // An iOS order waiting for its purchase is the App Store's: no WeChat Pay version's.
            var ios = Fixture.order("IOS-open", amount: 1000)
            ios.channel = .apple
            try await Fixture.create(ios, in: store)
            for (refund, order) in [("R-processing", "V3-refunding"), ("R-done", "V3-refunded")] {
                guard case .created = try await Self.create(Self.request(refund, order: order, amount: 100), in: store) else {
                    Issue.record("\(refund) was not created")
                    return
                }
            }
            _ = try await Self.succeed("R-done", in: store)
            // Open: V2-open (v2); V3-open, V3-open-2 and the refund R-processing (v3).
            #expect(try await store.counts().inFlightByAPIVersion == ["v2": 1, "v3": 3])
        }
    }

    @Test(arguments: StoreKind.all) func aRefundOfAPaidOrderIsRecordedProcessingWithTheOrdersAmountAndATimelineEvent(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.paidOrder(in: store)
            guard case .created(let refund) = try await Self.create(Self.request("R1", amount: 300), in: store) else {
                Issue.record("not created")
                return
            }
            #expect(refund.state == .processing)
            #expect(refund.amount == 300 && refund.totalFee == 1000)
            #expect(refund.refundID == nil && refund.succeededAt == nil)
            #expect(refund.notifyURL == "https://pay.example.com/wechat/refund-notify")
            #expect(try await store.refund("R1") == refund)
            #expect(try await store.refunds(outTradeNo: "O1") == [refund])
            #expect(try await store.events("O1").last?.kind == "refund_requested")
        }
    }

    @Test(arguments: StoreKind.all) func anUnknownOrAnUnpaidOrderIsRefusedAndNothingIsWritten(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            #expect(try await Self.create(Self.request("R1", order: "nobody", amount: 1), in: store) == .orderNotFound)
            try await Fixture.create(Fixture.order("O2"), in: store)
            #expect(try await Self.create(Self.request("R2", order: "O2", amount: 1), in: store)
                == .orderNotRefundable(.notPay))
            #expect(try await store.refund("R1") == nil)
            #expect(try await store.refund("R2") == nil)
            #expect(try await store.events("O2").count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func theSameNumberWithTheSameParametersIsAReplayAndAnythingElseAConflict(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.paidOrder(in: store)
            try await Self.paidOrder("O2", in: store)
            guard case .created(let first) = try await Self.create(Self.request("R1", amount: 300), in: store) else {
                Issue.record("not created")
                return
            }
            #expect(try await Self.create(Self.request("R1", amount: 300), in: store) == .existing(first))
            #expect(try await Self.create(Self.request("R1", amount: 301), in: store) == .conflict(first))
            #expect(try await Self.create(Self.request("R1", order: "O2", amount: 300), in: store) == .conflict(first))
            #expect(try await store.refunds(outTradeNo: "O1").count == 1)
            #expect(try await store.refunds(outTradeNo: "O2").isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func moreThanIsLeftToRefundIsRefusedAndAClosedRefundGivesItsAmountBack(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.paidOrder(in: store)
            #expect(try await Self.create(Self.request("R1", amount: 700), in: store).isCreated)
            #expect(try await Self.create(Self.request("R2", amount: 301), in: store) == .exceedsPaid(refundable: 300))
            #expect(try await Self.create(Self.request("R3", amount: 300), in: store).isCreated)
            #expect(try await Self.create(Self.request("R4", amount: 1), in: store) == .exceedsPaid(refundable: 0))
            let closed = try await store.transitionRefund(RefundTransition(
                outRefundNo: "R1", to: .refundClose, from: [.processing], failureReason: "NOTENOUGH", at: TestTime.at(130)))
            #expect(closed.didChange)
            #expect(closed.refund?.failureReason == "NOTENOUGH")
            #expect(try await Self.create(Self.request("R5", amount: 700), in: store).isCreated)
        }
    }

    @Test(arguments: StoreKind.all) func concurrentRequestsNeverReserveMoreThanWasPaid(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.paidOrder(amount: 1000, in: store)
            // 40 requests of 60 fen at once ask for 2,400: exactly 16 fit.
            let results = try await withThrowingTaskGroup(of: RefundCreateResult.self) { group in
                for n in 0..<40 { group.addTask { try await Self.create(Self.request("C\(n)", amount: 60), in: store) } }
                var results: [RefundCreateResult] = []
                for try await result in group { results.append(result) }
                return results
            }
            #expect(results.filter(\.isCreated).count == 16)
            let reserved = try await store.refunds(outTradeNo: "O1").reduce(0) { $0 + $1.amount }
            #expect(reserved == 960)
        }
    }

    @Test(arguments: StoreKind.all) func anOrderTakesAtMostTheConfiguredNumberOfRefunds(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.paidOrder(in: store)
            for n in 0..<3 { #expect(try await Self.create(Self.request("R\(n)", amount: 1), in: store, limit: 3).isCreated) }
            #expect(try await Self.create(Self.request("R3", amount: 1), in: store, limit: 3) == .limitReached(3))
        }
    }

    @Test(arguments: StoreKind.all) func theDoorChangesARefundOnceWritesOneOutboxEventAndMovesTheOrderToRefund(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.paidOrder(in: store)
            _ = try await Self.create(Self.request("R1", amount: 300), in: store)
            let results = try await withThrowingTaskGroup(of: RefundTransitionResult.self) { group in
                for _ in 0..<10 { group.addTask { try await Self.succeed("R1", in: store) } }
                var results: [RefundTransitionResult] = []
                for try await result in group { results.append(result) }
                return results
            }
            #expect(results.filter(\.didChange).count == 1)
            guard case .changed(let refund, let order)? = results.first(where: \.didChange) else { return }
            #expect(refund.state == .success && refund.refundID == "5030-R1" && refund.succeededAt == TestTime.at(200))
            #expect(order.state == .refund)
            #expect(try await store.outboxEvents("O1").filter { $0.type == "refund.succeeded" }.count == 1)
            let events = try await store.events("O1")
            #expect(events.filter { $0.kind == "refund_state_changed" }.map(\.detail) == ["R1: PROCESSING -> SUCCESS: test"])
            #expect(events.contains { $0.kind == OrderEvent.stateChangedKind && $0.detail == "SUCCESS -> REFUND: refund R1 succeeded" })
            // A second successful refund leaves the order REFUND, with one such transition.
            _ = try await Self.create(Self.request("R2", amount: 700), in: store)
            #expect(try await Self.succeed("R2", in: store).didChange)
            #expect(try await store.order("O1")?.state == .refund)
            #expect(try await store.events("O1").filter { $0.detail.hasPrefix("SUCCESS -> REFUND") }.count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func aTransitionNamingAnotherOrderOrAnotherAmountWritesNothing(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.paidOrder(in: store)
            _ = try await Self.create(Self.request("R1", amount: 300), in: store)
            let before = try await store.events("O1")
            for (order, amount) in [("O9", 300), ("O1", 301)] {
                let result = try await store.transitionRefund(RefundTransition(
                    outRefundNo: "R1", to: .success, from: [.processing], expectedOutTradeNo: order, expectedAmount: amount,
                    touchesNotify: true, at: TestTime.at(150)))
                guard case .mismatch = result else {
                    Issue.record("expected .mismatch, got \(result)")
                    return
                }
            }
            #expect(try await store.refund("R1")?.state == .processing)
            #expect(try await store.refund("R1")?.lastNotifyAt == nil)
            #expect(try await store.events("O1") == before)
            #expect(try await store.transitionRefund(RefundTransition(
                outRefundNo: "nobody", to: .success, from: [.processing], at: TestTime.at(150))) == .notFound)
        }
    }

    @Test(arguments: StoreKind.all) func aChangeRefundFlagsTheOrderUntilItIsResolvedAndKeepsItsAmountReserved(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.paidOrder(in: store)
            _ = try await Self.create(Self.request("R1", amount: 600), in: store)
            let change = try await store.transitionRefund(RefundTransition(
                outRefundNo: "R1", to: .change, from: [.processing], detail: "refund_notify", at: TestTime.at(150)))
            guard case .changed(_, let order) = change else {
                Issue.record("not changed")
                return
            }
            #expect(order.flags.contains(.refundNeedsAttention))
            #expect(order.state == .success)
            #expect(try await Self.create(Self.request("R2", amount: 401), in: store) == .exceedsPaid(refundable: 400))
            guard case .changed(_, let resolved) = try await Self.succeed("R1", in: store) else {
                Issue.record("not resolved")
                return
            }
            #expect(!resolved.flags.contains(.refundNeedsAttention))
            #expect(resolved.state == .refund)
        }
    }

    @Test(arguments: StoreKind.all) func finishedRefundsAndTheirParametersCannotChangeEvenBehindTheStoresBack(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, database async throws in
            try await Self.paidOrder(in: store)
            _ = try await Self.create(Self.request("R1", amount: 300), in: store)
            _ = try await Self.succeed("R1", in: store)
            // Through the door: no way back.
            let back = try await store.transitionRefund(RefundTransition(
                outRefundNo: "R1", to: .refundClose, from: [.success, .processing], at: TestTime.at(300)))
            #expect(back == .unchanged(try #require(try await store.refund("R1"))))
            // Behind the store's back, the database itself refuses.
            #expect(await database.execute("UPDATE refunds SET state = 'REFUNDCLOSE' WHERE out_refund_no = 'R1'") == false)
            _ = try await Self.create(Self.request("R2", amount: 100), in: store)
            #expect(await database.execute("UPDATE refunds SET amount = 1 WHERE out_refund_no = 'R2'") == false)
            #expect(await database.execute("UPDATE refunds SET notify_url = 'https://evil.example/' WHERE out_refund_no = 'R2'")
                == false)
            // Nor can an insert behind the store's back take more than was paid.
            let time = kind == .sqlite ? "0" : "now()"
            #expect(await database.execute("""
                INSERT INTO refunds (out_refund_no, out_trade_no, amount, total_fee, reason, parameters_digest, state,
                    created_at, updated_at) VALUES ('R3', 'O1', 601, 1000, 'x', 'd', 'PROCESSING', \(time), \(time))
                """) == false)
            // The same insert within the amount is accepted: the refusals above were the rules, not the SQL.
            #expect(await database.execute("""
                INSERT INTO refunds (out_refund_no, out_trade_no, amount, total_fee, reason, parameters_digest, state,
                    created_at, updated_at) VALUES ('R4', 'O1', 600, 1000, 'x', 'd', 'PROCESSING', \(time), \(time))
                """))
            #expect(try await store.refund("R2")?.amount == 100)
        }
    }

    @Test(arguments: StoreKind.all) func acceptanceRecordsTheRefundIDOnceAndLeavesTheStateAlone(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.paidOrder(in: store)
            _ = try await Self.create(Self.request("R1", amount: 300), in: store)
            let event = NewOrderEvent(kind: "refund_accepted", detail: "R1", at: TestTime.at(121))
            let accepted = try await store.recordRefundAccepted("R1", refundID: "5030-1", at: TestTime.at(121), event: event)
            #expect(accepted?.refundID == "5030-1" && accepted?.state == .processing && accepted?.acceptedAt == TestTime.at(121))
            let again = try await store.recordRefundAccepted("R1", refundID: "5030-other", at: TestTime.at(122), event: event)
            #expect(again?.refundID == "5030-1")
            #expect(try await store.events("O1").filter { $0.kind == "refund_accepted" }.count == 1)
            #expect(try await store.recordRefundAccepted("nobody", refundID: "x", at: TestTime.at(122), event: event) == nil)
        }
    }

    @Test(arguments: StoreKind.all) func processingRefundsAreLeasedToOneSweeperAtATimeAndReleasable(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Self.paidOrder(in: store)
            _ = try await Self.create(Self.request("R1", amount: 100, at: TestTime.at(100)), in: store)
            _ = try await Self.create(Self.request("R2", amount: 100, at: TestTime.at(110)), in: store)
            _ = try await Self.create(Self.request("R3", amount: 100, at: TestTime.at(500)), in: store)
            _ = try await Self.succeed("R2", in: store)
            let first = try await store.claimProcessingRefunds(
                createdAtOrBefore: TestTime.at(400), now: TestTime.at(400), minimumGap: 0, limit: 10, claimant: "a", leaseUntil: TestTime.at(430))
            #expect(first.map(\.outRefundNo) == ["R1"])
            #expect(try await store.claimProcessingRefunds(
                createdAtOrBefore: TestTime.at(400), now: TestTime.at(410), minimumGap: 0, limit: 10, claimant: "b", leaseUntil: TestTime.at(440)).isEmpty)
            #expect(try await store.releaseRefundClaim("R1", claimant: "b") == false)
            #expect(try await store.releaseRefundClaim("R1", claimant: "a"))
            let second = try await store.claimProcessingRefunds(
                createdAtOrBefore: TestTime.at(400), now: TestTime.at(410), minimumGap: 0, limit: 10, claimant: "b", leaseUntil: TestTime.at(440))
            #expect(second.map(\.outRefundNo) == ["R1"])
            #expect(try await store.touchRefund("R1", queriedAt: TestTime.at(411)))
            #expect(try await store.refund("R1")?.lastQueriedAt == TestTime.at(411))
            // Asked at 411, 311 s after its creation: due again 155.5 s later (half its age), not before.
            _ = try await store.releaseRefundClaim("R1", claimant: "b")
            #expect(try await store.claimProcessingRefunds(
                createdAtOrBefore: TestTime.at(600), now: TestTime.at(566), minimumGap: 30, limit: 10, claimant: "c",
                leaseUntil: TestTime.at(600)).map(\.outRefundNo) == ["R3"])
            #expect(try await store.claimProcessingRefunds(
                createdAtOrBefore: TestTime.at(600), now: TestTime.at(567), minimumGap: 30, limit: 10, claimant: "d",
                leaseUntil: TestTime.at(600)).map(\.outRefundNo) == ["R1"])
            #expect(try await store.refunds(createdFrom: TestTime.at(105), to: TestTime.at(600)).map(\.outRefundNo) == ["R2", "R3"])
        }
    }
}

extension RefundCreateResult {
    var isCreated: Bool {
        if case .created = self { true } else { false }
    }
}
