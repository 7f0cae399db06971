// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import StorageCore
import StoreTestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// The gateway while its PostgreSQL server is down, over real sockets: it says it is not ready,
/// refuses a notify (WeChat retries) and a create (503 `database_unavailable`, safe to retry),
/// writes nothing half, and recovers on its own once the server is back.
@Suite(.enabled(if: TestPostgresServer.isAvailable, "needs WXPAY_TEST_POSTGRES (scripts/test starts a server)"))
struct DatabaseOutageTests {
    @Test(.timeLimit(.minutes(6)))
    func duringAnOutageTheGatewayRefusesWorkSafelyAndAfterwardsRecovers() async throws {
        let server = try await TestPostgresServer.start()
        do {
            let rig = try await GatewayRig.start(.sockets, database: try await TestDatabase(postgresServer: server.url))
            do {
                try await outageAndRecovery(rig, server)
            } catch {
                await rig.stop()
                throw error
            }
            await rig.stop()
        } catch {
            await server.remove()
            throw error
        }
        await server.remove()
    }

    /// /readyz gives the database a second to answer: on a loaded machine (load 50-90 on two cores)
    /// a healthy database can miss it, so readiness is asked for up to 30 times, a second apart.
    static func becomesReady(_ rig: GatewayRig) async throws -> Bool {
        for _ in 0..<30 {
            if try await rig.send(.get, "/readyz", token: nil).status == 200 { return true }
            try await Task.sleep(for: .seconds(1))
        }
        return false
    }

    private func outageAndRecovery(_ rig: GatewayRig, _ server: TestPostgresServer) async throws {
        #expect(try await rig.createOrder("outage-0001").status == 201)
        // Paid at WeChat with its notify lost: the gateway will be told while its database is down.
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        let paid = try rig.simulator.pay(outTradeNo: "outage-0001")
        let notify = String(decoding: Battery.genuineNotify(paid, nonce: "during-outage"), as: UTF8.self)
        #expect(try await Self.becomesReady(rig))

        try await server.halt()
        let ready = try await rig.send(.get, "/readyz", token: nil)
        #expect(ready.status == 503)
        let reply = try await rig.send(.post, "/wechat/notify", token: nil, body: notify)
        #expect(String(decoding: reply.body, as: UTF8.self).contains("<return_code><![CDATA[FAIL]]></return_code>"))
        let create = try await rig.createOrder("outage-0002")
        #expect(create.status == 503)
        #expect(create.error?["code"] as? String == "database_unavailable")
        #expect(create.headers["Retry-After"] != nil)
        let query = try await rig.send(.get, "/v1/orders/outage-0001")
        #expect(query.status == 503)
        #expect(query.error?["code"] as? String == "database_unavailable")
        // A healthz probe does not depend on the database.
        #expect(try await rig.send(.get, "/healthz", token: nil).status == 200)

        try await server.resume()
        // WeChat's retry of the same notify, and the client's retry of the same create, both work
        // once the connections are back (after the pool's backoff, at most a few seconds).
        var settled = false
        let deadline = ContinuousClock.now + .seconds(60)
        while !settled && ContinuousClock.now < deadline {
            let retry = try await rig.send(.post, "/wechat/notify", token: nil, body: notify)
            settled = String(decoding: retry.body, as: UTF8.self).contains(Battery.acknowledged)
            if !settled { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(settled)
        #expect(try await rig.createOrder("outage-0002").status == 201)
        #expect(try await Self.becomesReady(rig))
        // Nothing half-written: one transition, one outbox event, one order each.
        #expect(try await Battery.transitionsIntoSuccess(rig.store, "outage-0001") == 1)
        #expect(try await rig.store.outboxEvents("outage-0001").count == 1)
        #expect(try await rig.store.counts().ordersByState[.notPay] == 1)
        #expect(try await rig.store.integrityCheck() == "ok")
    }
}
