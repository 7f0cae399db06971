// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
@testable import GatewayConsole
import HTTP
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPaySimulator

/// The console's order page shows the order's user's entitlements, read-only, as part of the
/// audited look.
struct EntitlementConsoleTests {
    @Test("An order's page lists its user's entitlements with their source orders, and the look is on record",
          arguments: GatewayRig.Mode.allCases)
    func theOrderPageShowsTheUsersEntitlements(mode: GatewayRig.Mode) async throws {
        let rig = try await ConsoleRig.start(mode)
        defer { Task { await rig.stop() } }
        for (number, product) in [("CON-VIP-1", "vip-month"), ("CON-C-1", "swift-101")] {
            let created = try await rig.rig.send(.post, "/v1/orders", body: #"""
                {"product_id":"\#(product)","client_ip":"203.0.113.7","user_id":"u-ent","out_trade_no":"\#(number)"}
                """#)
            #expect(created.status == 201)
            try rig.rig.simulator.pay(outTradeNo: number)
            #expect(await eventually(timeout: .seconds(60)) { (try? await rig.rig.store.order(number))??.state == .success })
        }
        let browser = rig.browser(language: "en")
        try await browser.signIn("vera")
        #expect(try await browser.get("/console/orders/CON-C-1").status == 200)
        let page = browser.page
        #expect(page.contains("Entitlements of user u-ent"))
        #expect(page.contains("data-entitlement=\"vip\"") && page.contains("data-entitlement=\"swift-101\""))
        #expect(page.contains("href=\"/console/orders/CON-VIP-1\""))
        #expect(page.contains("for ever") && page.contains("active"))
        // Read-only: no form posts anywhere about entitlements.
        #expect(!page.contains("action=\"/console/entitlements"))
        let views = try await rig.auditEntries(AuditQuery(action: "view_order"))
        #expect(views.contains { $0.actor == "vera" && $0.outcome == "ok" })

        // A user whose orders name no product holds nothing, and the page says so.
        try await rig.paidOrder("CON-NOTHING")
        #expect(try await browser.get("/console/orders/CON-NOTHING").status == 200)
        #expect(browser.page.contains("Entitlements of user u-42") && browser.page.contains("id=\"entitlements-none\""))
    }
}
