// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

/// `OrderTransition.lastRead` is a hint for speed: a store may make the change in one statement
/// conditional on the order still standing as read. Whatever happened since the read, the result
/// must be what the same transition gives without the hint.
struct LastReadTransitionTests {
    static let notifyReceipt = TransitionReceipt(
        kind: "notify_received", changedDetail: "settled", unchangedDetail: "duplicate", touching: .lastNotify)

    static func settle(_ outTradeNo: String, lastRead: OrderRecord?, addingFlags: Set<OrderFlag> = [], in store: any OrderStore)
        async throws -> TransitionResult
    {
        try await store.transition(
            outTradeNo, to: .success, from: OrderState.open.union([.payError]), transactionID: "wx-\(outTradeNo)",
            paidAt: TestTime.at(50), expectedAmount: 100, detail: "notify", outbox: Fixture.paid(outTradeNo, id: "evt-\(outTradeNo)"),
            addingFlags: addingFlags, at: TestTime.at(60), receipt: Self.notifyReceipt, lastRead: lastRead)
    }

    @Test(arguments: StoreKind.all) func aPaymentOnTheOrderAsReadChangesItExactlyAsWithoutTheRead(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("L1"), in: store)
            try await Fixture.create(Fixture.order("L2"), in: store)
            let read = try #require(try await store.order("L1"))
            guard case .changed(let withRead) = try await Self.settle("L1", lastRead: read, in: store),
                  case .changed(let without) = try await Self.settle("L2", lastRead: nil, in: store)
            else {
                Issue.record("both payments must change their order")
                return
            }
            var renamed = without
            renamed.outTradeNo = "L1"
            renamed.transactionID = "wx-L1"
            #expect(withRead == renamed)
            #expect(try await store.order("L1") == withRead)
            let events = try await store.events("L1")
            #expect(events.map(\.kind) == ["created", OrderEvent.stateChangedKind, "notify_received"])
            #expect(events.map(\.detail) == (try await store.events("L2")).map(\.detail))
            #expect(try await store.outboxEvents("L1") == [Fixture.paid("L1", id: "evt-L1")])
        }
    }

    @Test(arguments: StoreKind.all) func aPaymentOnAStaleReadDecidesOnTheOrderAsItStandsNow(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("L3"), in: store)
            let stale = try #require(try await store.order("L3"))
            // Closed after the read: the payment must not settle it as if it were still NOTPAY.
            #expect(try await store.transition("L3", to: .closed, from: OrderState.open, detail: "close", at: TestTime.at(55)).didChange)
            let result = try await Self.settle("L3", lastRead: stale, in: store)
            #expect(result.didChange == false)
            #expect(result.record?.state == .closed)
            #expect(try await store.outboxEvents("L3").isEmpty)
            let events = try await store.events("L3")
            #expect(events.filter { $0.kind == OrderEvent.stateChangedKind }.map(\.detail) == ["NOTPAY -> CLOSED: close"])
            #expect(events.last?.kind == "notify_received")
            #expect(events.last?.detail == "duplicate")
        }
    }

    @Test(arguments: StoreKind.all) func aPaymentOnAReadOfAnOrderPaidSinceIsADuplicate(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("L4"), in: store)
            let stale = try #require(try await store.order("L4"))
            #expect(try await Self.settle("L4", lastRead: stale, in: store).didChange)
            let again = try await Self.settle("L4", lastRead: stale, in: store)
            #expect(again.didChange == false)
            #expect(again.record?.state == .success)
            #expect(try await store.events("L4").filter { $0.kind == OrderEvent.stateChangedKind }.count == 1)
            #expect(try await store.events("L4").last?.detail == "duplicate")
            #expect(try await store.outboxEvents("L4").count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func flagsAddedAfterTheReadAreKeptByThePayment(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            try await Fixture.create(Fixture.order("L5"), in: store)
            let stale = try #require(try await store.order("L5"))
            _ = try await store.addFlags("L5", [.matchedWithoutOrder], at: TestTime.at(52))
            let result = try await Self.settle("L5", lastRead: stale, addingFlags: [.paidAfterClose], in: store)
            #expect(result.didChange)
            #expect(result.record?.flags == [.matchedWithoutOrder, .paidAfterClose])
            #expect(try await store.order("L5")?.flags == [.matchedWithoutOrder, .paidAfterClose])
        }
    }

    @Test(arguments: StoreKind.all) func concurrentPaymentsOnOneReadEachHaveOneWinnerAndTheRestAreDuplicates(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let orders = (0..<20).map { "LM\($0)" }
            var reads: [String: OrderRecord] = [:]
            for order in orders {
                try await Fixture.create(Fixture.order(order), in: store)
                reads[order] = try await store.order(order)
            }
            let reads_ = reads
            let results = try await withThrowingTaskGroup(of: TransitionResult.self) { group in
                for order in orders {
                    for _ in 0..<5 {
                        group.addTask { try await Self.settle(order, lastRead: reads_[order], in: store) }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter(\.didChange).count == orders.count)
            #expect(results.allSatisfy { $0.record?.state == .success })
            for order in orders {
                let events = try await store.events(order)
                #expect(events.filter { $0.kind == OrderEvent.stateChangedKind }.count == 1)
                #expect(events.filter { $0.kind == "notify_received" }.map(\.detail).sorted()
                            == ["duplicate", "duplicate", "duplicate", "duplicate", "settled"])
                #expect(try await store.outboxEvents(order).count == 1)
            }
        }
    }
}
