// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
@testable import Gateway
import StorageCore
import StoreTestSupport
import Testing
import WeChatPaySimulator

/// An app configured in WXPAY_APPS whose appid WeChat says is not bound to the merchant: the create
/// is refused as `appid_not_bound`, clearly, in v2 and v3, and leaves what WeChat's other refusals leave.
struct AppIDNotBoundTests {
    @Test("a create through an app whose appid WeChat does not bind to the merchant is 502 appid_not_bound, with no prepay kept, while the merchant's other apps still create",
          arguments: StoreKind.all, ChannelEndToEndTests.Version.allCases)
    func anUnboundAppIDIsRefusedClearly(store: StoreKind, version: ChannelEndToEndTests.Version) async throws {
        for mode in GatewayRig.Mode.allCases { try await refused(store: store, mode: mode, version: version) }
    }

    private func refused(store: StoreKind, mode: GatewayRig.Mode, version: ChannelEndToEndTests.Version) async throws {
        let mini = ChannelEndToEndTests.app("mini")
        let rig = try await GatewayRig.start(mode, store: store, wechat: mode == .sockets && version == .v3 ? .http : .inProcess,
                                             v3: version == .v3 ? V3Setup(mode: .publicKey) : nil,
                                             simulator: { $0.otherAppIDs.remove(mini.appID) })
        defer { Task { await rig.stop() } }
        let openid = ChannelEndToEndTests.openID("learner", of: "mini")
        let refused = try await rig.send(.post, "/v1/orders", body: ChannelEndToEndTests.body(
            "unbound-\(version)", app: "mini", extra: #","openid":"\#(openid)""#))
        #expect(refused.status == 502, "\(String(decoding: refused.body, as: UTF8.self))")
        #expect(refused.error?["code"] as? String == "appid_not_bound", "\(refused.json)")
        #expect(refused.error?["wechat_code"] as? String == "APPID_MCHID_NOT_MATCH")
        let kept = try await rig.store.order("unbound-\(version)")
        #expect(kept?.prepayID == nil && kept?.state == .notPay)
        #expect(rig.simulator.order("unbound-\(version)") == nil)

        let other = try await rig.send(.post, "/v1/orders", body: ChannelEndToEndTests.body("bound-\(version)", app: "android"))
        #expect(other.status == 201, "\(String(decoding: other.body, as: UTF8.self))")
    }
}
