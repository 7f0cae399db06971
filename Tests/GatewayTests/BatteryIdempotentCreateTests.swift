// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import StoreTestSupport
import Testing
import WeChatPaySimulator

/// reliability.md T4 at reduced scale (the full run is `scripts/battery/run T4`).
struct BatteryIdempotentCreateTests {
    static let identical = 60
    static let changed = 15

    @Test(arguments: GatewayRig.Mode.allCases, StoreKind.all)
    func concurrentIdenticalCreatesMakeOneOrderAndChangedOnesAreRefusedLocally(mode: GatewayRig.Mode, store: StoreKind) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        let answers = await withTaskGroup(of: GatewayRig.Response?.self) { group -> [GatewayRig.Response?] in
            for _ in 0..<Self.identical {
                group.addTask { try? await rig.createOrder("idem-0001", amount: 990) }
            }
            var answers: [GatewayRig.Response?] = []
            for await answer in group { answers.append(answer) }
            return answers
        }
        let statuses = answers.map { $0?.status ?? 0 }
        #expect(statuses.filter { $0 == 201 }.count == 1)
        #expect(statuses.filter { $0 == 200 }.count == Self.identical - 1)
        #expect(Set(answers.compactMap { $0?.body }).count == 1, "identical responses")
        let upstreamAfterCreate = rig.simulator.counters.requests["/pay/unifiedorder"] ?? 0
        #expect(upstreamAfterCreate == 1)

        let conflicts = await withTaskGroup(of: GatewayRig.Response?.self) { group -> [GatewayRig.Response?] in
            for index in 0..<Self.changed {
                group.addTask { try? await rig.createOrder("idem-0001", amount: 991 + index) }
            }
            var answers: [GatewayRig.Response?] = []
            for await answer in group { answers.append(answer) }
            return answers
        }
        #expect(conflicts.allSatisfy { $0?.status == 409 })
        #expect(conflicts.allSatisfy { $0?.error?["code"] as? String == "out_trade_no_conflict" })
        #expect(rig.simulator.counters.requests["/pay/unifiedorder"] ?? 0 == upstreamAfterCreate, "no upstream call")
        #expect(rig.simulator.order("idem-0001")?.totalFee == 990)
        let lookup = try await rig.send(.get, "/v1/support/orders?out_trade_no=idem-0001", token: GatewayRig.support)
        let orders = try #require(lookup.json["orders"] as? [[String: Any]])
        #expect(orders.count == 1)
        #expect(orders.first?["amount"] as? Int == 990)
    }
}
