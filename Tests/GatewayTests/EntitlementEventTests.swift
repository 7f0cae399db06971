// SPDX-License-Identifier: Apache-2.0
import AppStoreSimulator
import Foundation
@testable import Gateway
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPaySimulator

/// `entitlement.changed` is written by the doors, in the transaction of the change, on both
/// stores: once per payment, WeChat refund, Apple refund or reversal of an order whose product
/// grants something, never for a repeated settlement, and never for a consumable.
struct EntitlementEventTests {
    /// The demo catalog's membership, plus a consumable WeChat product.
    static let catalog = #"""
        {"products":[
         {"id":"vip-month","amount":3000,"description":"VIP 月卡","type":"membership","period":"P1M","entitlement":"vip"},
         {"id":"coins-60","amount":600,"description":"60 学币","type":"consumable"}]}
        """#

    static func catalogFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("entitlement-events-\(UUID().uuidString).json").path
        try Data(catalog.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func markers(_ rig: RefundRig, _ outTradeNo: String) async throws -> [OutboxEvent] {
        try await rig.events(outTradeNo, type: EntitlementEvents.type)
    }

    @Test("A WeChat payment of a membership writes entitlement.changed once, however often the payment is settled again",
          arguments: StoreKind.all)
    func aPaymentWritesTheEventOnce(store: StoreKind) async throws {
        let rig = try await RefundRig.start(.inProcess, store: store)
        defer { Task { await rig.stop() } }
        _ = try await EntitlementAPITests.paid(rig, "ent-once", product: "vip-month", user: "ent-once-user")
        let written = try await Self.markers(rig, "ent-once")
        #expect(written.count == 1)
        #expect(EntitlementEvents.user(of: try #require(written.first)) == "ent-once-user")
        // The same payment reported again (a copied notify, an orderquery answer): the door changes
        // nothing, so nothing more is written.
        let order = try #require(try await rig.store.order("ent-once"))
        let again = try await rig.services.context.settlement.settlePaid(
            order, transactionID: try #require(order.transactionID), paidAt: order.paidAt, amount: order.amount, source: "orderquery")
        #expect(!again.didChange)
        #expect(try await Self.markers(rig, "ent-once").count == 1)
    }

    @Test("A consumable grants nothing: neither its payment nor its refund writes entitlement.changed", arguments: StoreKind.all)
    func aConsumableWritesNoEvent(store: StoreKind) async throws {
        let path = try Self.catalogFile()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let rig = try await RefundRig.start(.inProcess, store: store, environment: ["GATEWAY_CATALOG": path])
        defer { Task { await rig.stop() } }
        _ = try await EntitlementAPITests.paid(rig, "ent-coins", product: "coins-60", user: "ent-coins-user")
        #expect(try await rig.events("ent-coins", type: "order.paid").count == 1)
        #expect(try await Self.markers(rig, "ent-coins").isEmpty)
        #expect(try await rig.refund("ent-coins", amount: 600, number: "ent-coins-r1").status == 201)
        try rig.simulator.completeRefund(outRefundNo: "ent-coins-r1")
        #expect(await rig.refund("ent-coins-r1", becomes: .success))
        #expect(try await rig.events("ent-coins", type: "refund.succeeded").count == 1)
        #expect(try await Self.markers(rig, "ent-coins").isEmpty)
        // The membership beside it in the same catalog still announces its payment.
        _ = try await EntitlementAPITests.paid(rig, "ent-pass", product: "vip-month", user: "ent-coins-user")
        #expect(try await Self.markers(rig, "ent-pass").count == 1)
    }

    @Test("A successful WeChat refund of a membership writes entitlement.changed once, and settling it again writes nothing",
          arguments: StoreKind.all)
    func aWeChatRefundWritesTheEventOnce(store: StoreKind) async throws {
        let rig = try await RefundRig.start(.inProcess, store: store)
        defer { Task { await rig.stop() } }
        _ = try await EntitlementAPITests.paid(rig, "ent-ref", product: "vip-month", user: "ent-ref-user")
        #expect(try await rig.refund("ent-ref", amount: 3000, number: "ent-ref-r1").status == 201)
        try rig.simulator.completeRefund(outRefundNo: "ent-ref-r1")
        #expect(await rig.refund("ent-ref-r1", becomes: .success))
        #expect(try await Self.markers(rig, "ent-ref").count == 2)
        // The refund door asked again about the finished refund changes nothing and writes nothing.
        let repeated = try await rig.services.refunds.settle("ent-ref-r1", to: .success, source: "refundquery")
        if case .changed = repeated { Issue.record("a finished refund changed again") }
        #expect(try await Self.markers(rig, "ent-ref").count == 2)
    }

    @Test("An App Store purchase of a course writes entitlement.changed once, its refund once more, and a replayed report nothing",
          arguments: StoreKind.all)
    func anAppleCreditAndRefundWriteTheEventOnceEach(store: StoreKind) async throws {
        try await IAPEndToEndTests.withRig(.inProcess, store: store) { rig in
            let created = try await rig.createOrder("ent-apple-user")
            let number = IAPEndToEndTests.number(created)
            let bought = try rig.buy("apple-ent", token: IAPEndToEndTests.token(created))
            #expect(try await rig.report("ent-apple-user", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
            #expect(try await rig.report("ent-apple-user", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
            let paid = try await rig.store.outboxEvents(number).filter { $0.type == EntitlementEvents.type }
            #expect(paid.count == 1)
            #expect(paid.first.flatMap(EntitlementEvents.user(of:)) == "ent-apple-user")
            try rig.appStore.refund(transactionID: bought.transactionID, reason: 1)
            #expect(try await eventually { try await rig.order(number)?.state == .refund })
            #expect(try await rig.store.outboxEvents(number).filter { $0.type == EntitlementEvents.type }.count == 2)
            #expect(try await rig.store.orderOutboxEvents(number).map(\.type) == ["order.paid", "order.refunded"])
        }
    }
}
