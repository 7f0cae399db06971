// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import Storage
import StoreTestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// reliability.md T6 at reduced scale over real sockets (the full run is `scripts/battery/run T6`):
/// a genuine notify of another paid order, replayed or re-targeted, and the classic forgeries, each
/// sent several times; nothing changes anywhere and every one is refused and counted.
struct BatteryForgedNotifyTests {
    @Test(arguments: StoreKind.all) func forgeriesAndReplaysChangeNoOrderAndAreAllRefused(store: StoreKind) async throws {
        let rig = try await GatewayRig.start(.sockets, store: store)
        _ = try await rig.createOrder("forge-0001", amount: 990)
        _ = try await rig.createOrder("forge-0002", amount: 500)
        // forge-0002 is genuinely paid; its notify is the material the attacker replays.
        let paid = try rig.simulator.pay(outTradeNo: "forge-0002")
        #expect(await Battery.eventually { await Self.state(rig, "forge-0002") == "SUCCESS" })
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
            ("correct sign, wrong amount", rig.forgedNotify("forge-0001", amount: 1), [:]),
            ("another order's notify re-targeted",
             genuine.replacingOccurrences(of: "forge-0002", with: "forge-0001"), [:]),
            ("Host: localhost", rig.forgedNotify("forge-0001", amount: 990) { $0["sign"] = "" }, ["Host": "localhost"]),
            ("unknown out_trade_no", rig.forgedNotify("forge-9999", amount: 990), [:]),
        ]
        let before = try await rig.store.counts()
        for (name, body, headers) in forgeries {
            for _ in 0..<3 {
                let reply = try await rig.send(.post, "/wechat/notify", token: nil, body: body, headers: headers)
                let text = String(decoding: reply.body, as: UTF8.self)
                if name == "unknown out_trade_no" {
                    // reliability.md allows acknowledging an order we never made; it must create nothing.
                    #expect(reply.status == 200)
                } else {
                    #expect(text.contains("<return_code><![CDATA[FAIL]]></return_code>"), "\(name) was acknowledged")
                }
            }
        }
        // The genuine notify replayed as is only repeats what is already true.
        let replay = try await rig.send(.post, "/wechat/notify", token: nil, body: genuine)
        #expect(String(decoding: replay.body, as: UTF8.self).contains(Battery.acknowledged))

        #expect(await Self.state(rig, "forge-0001") == "NOTPAY")
        #expect(try await rig.store.outboxEvents("forge-0001").isEmpty)
        #expect(try await Battery.transitionsIntoSuccess(rig.store, "forge-0001") == 0)
        #expect(try await Battery.transitionsIntoSuccess(rig.store, "forge-0002") == 1)
        #expect(try await rig.store.outboxEvents("forge-0002").count == 1)
        #expect(try await rig.store.order("forge-9999") == nil)
        #expect(try await rig.store.counts() == before, "no order changed state")
        let rejected = try await rig.store.events("forge-0001").filter { $0.kind == "notify_rejected" }
        #expect(rejected.count >= 9 * 3 - 3, "each refusal is in the timeline")
        let counted = Battery.sum(rig.service.metrics.exposition(), #"wxpay_notifies_total{outcome="rejected""#)
        #expect(counted >= Double(9 * 3 - 3), "each refusal is counted")
        await rig.stop()
    }

    static func state(_ rig: GatewayRig, _ outTradeNo: String) async -> String? {
        (try? await rig.send(.get, "/v1/orders/\(outTradeNo)"))?.json["state"] as? String
    }
}
