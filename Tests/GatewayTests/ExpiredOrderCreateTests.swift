// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import StorageCore
import StoreTestSupport
import Testing
import WeChatPaySimulator

/// A repeated create (the same out_trade_no and parameters) of an order whose `expires_at` has
/// passed, before the reconciler has closed it here: WeChat has closed it, so the gateway answers
/// it itself, as the QR code route does, and asks WeChat nothing.
struct ExpiredOrderCreateTests {
    static let body = #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"exp-0001","expires_in":10800}"#

    @Test("A repeated create of an order past its expires_at is 410 order_not_payable, without a call to WeChat or a line on its timeline",
          arguments: StoreKind.all)
    func aRepeatedCreatePastExpiryIsAnsweredLocally(store: StoreKind) async throws {
        // The clock moves only when told: the order outlives its prepay (2 hours), then expires.
        let rig = try await GatewayRig.start(.inProcess, store: store, clockScale: 0)
        defer { Task { await rig.stop() } }
        #expect(try await rig.send(.post, "/v1/orders", body: Self.body).status == 201)
        // Still open and payable, its prepay gone: the same create asks WeChat for a new one.
        rig.clock.advance(by: 2 * 3600 + 60)
        #expect(try await rig.send(.post, "/v1/orders", body: Self.body).status == 200)
        // Past its expires_at, and past that prepay too: the case where a create would ask again.
        rig.clock.advance(by: 2 * 3600 + 40)
        let unifiedOrders = rig.simulator.counters.requests["/pay/unifiedorder"] ?? 0
        let timeline = try await rig.store.events("exp-0001").count
        for _ in 0..<2 {
            let again = try await rig.send(.post, "/v1/orders", body: Self.body)
            #expect(again.status == 410, "\(again.json)")
            #expect(again.error?["code"] as? String == "order_not_payable", "\(again.json)")
            let message = again.error?["message"] as? String ?? ""
            #expect(message.contains("expired unpaid") && message.contains("another out_trade_no"), "\(message)")
        }
        #expect(rig.simulator.counters.requests["/pay/unifiedorder"] ?? 0 == unifiedOrders, "WeChat was asked")
        #expect(try await rig.store.events("exp-0001").count == timeline, "the timeline grew")
        #expect(try await rig.store.order("exp-0001")?.state == .notPay)
    }
}
