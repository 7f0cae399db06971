// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import HTTPClientTestSupport
import TestSupport
import Testing

/// A restore brings back the database as it was when the backup was taken: a payment made after
/// it is learnt again (the reconciler asks WeChat), and its `order.paid` is written again; so is a
/// refund's `refund.succeeded`. The business applies each event id once, so an event written
/// again must carry the id it was sent under the first time, or the order is fulfilled twice.
@Suite(.serialized)
struct RestoreRedeliveryTests {
    /// A production gateway against the simulators, its reconciler and refund checks quick, the
    /// path of its SQLite database and of a backup file beside it, and an HTTP client; all stopped
    /// after `body`, whatever it did.
    static func withStack(
        _ body: (ProductionStack, HTTPClient, _ database: String, _ backup: String) async throws -> Void
    ) async throws {
        let stack = try await ProductionStack.start(extra: [
            "GATEWAY_RECONCILE_INTERVAL": "0.5", "GATEWAY_RECONCILE_AFTER": "1", "GATEWAY_POLL_INTERVAL": "1",
            "GATEWAY_REFUND_QUERY_AFTER": "1",
        ])
        let client = try HTTPClient(configuration: .init(tls: .init(caFile: TestCertificates.ca)))
        do {
            try await body(stack, client, stack.upstreams.directory + "/gateway.sqlite",
                           stack.upstreams.directory + "/backup.sqlite")
        } catch {
            Issue.record("\(error)")
        }
        await client.shutdown()
        await stack.stop()
    }

    @Test(.timeLimit(.minutes(5)))
    func aPaymentAndARefundLearntAgainAfterARestoreAreAnnouncedUnderTheSameEventIDs() async throws {
        try await Self.withStack { stack, client, database, backup in
            let token = ProductionStack.clientToken
            let created = try await client.send(.post, stack.base + "/v1/orders", token: token, body:
                #"{"amount":990,"description":"restored","client_ip":"203.0.113.7","out_trade_no":"rs-0001"}"#)
            #expect(created.status == 201, "\(created.body)")
            // Paid before the backup, its refund asked for (PROCESSING) before it too.
            #expect(try await client.createAndPay("rs-0002", base: stack.base, wechat: stack.wechatBase, token: token) == "SUCCESS")
            let refund = try await client.send(.post, stack.base + "/v1/orders/rs-0002/refunds", token: token,
                                               body: #"{"amount":990,"reason":"restored","out_refund_no":"rs-r1"}"#)
            #expect(refund.status == 201, "\(refund.body)")
            let backedUp = try await BackupCommandTests.command(["backup", "--to", backup], database: database)
            #expect(backedUp.status == 0, "\(backedUp.stderr)")

            // Paid after the backup: the notify settles it, and its order.paid is written.
            #expect(try await client.send(.post, stack.wechatBase + "/simulator/orders/rs-0001/pay").status == 200)
            func paid(at base: String) async throws -> Bool {
                try await eventually(timeout: .seconds(90)) {
                    try await client.send(.get, base + "/v1/orders/rs-0001", token: token).json["state"] as? String == "SUCCESS"
                }
            }
            #expect(try await paid(at: stack.base))
            let announced = "SELECT id FROM outbox WHERE out_trade_no = 'rs-0001' AND type = 'order.paid'"
            let first = try await BackupCommandTests.sqlite(database, announced)
            #expect(first.hasPrefix("evt_"), "\(first)")
            // The refund's money goes back after the backup too.
            #expect(try await client.send(.post, stack.wechatBase + "/simulator/refunds/rs-r1/complete",
                                          body: #"{"status":"SUCCESS"}"#).status == 200)
            func refunded(at base: String) async throws -> Bool {
                try await eventually(timeout: .seconds(90)) {
                    try await client.send(.get, base + "/v1/refunds/rs-r1", token: token).json["state"] as? String == "SUCCESS"
                }
            }
            #expect(try await refunded(at: stack.base))
            let refundAnnounced = "SELECT id FROM outbox WHERE out_trade_no = 'rs-0002' AND type = 'refund.succeeded'"
            let firstRefund = try await BackupCommandTests.sqlite(database, refundAnnounced)
            #expect(firstRefund.hasPrefix("evt_"), "\(firstRefund)")

            // The restore takes the database back to before the payment; the reconciler learns it
            // again from WeChat and writes its order.paid again: under the same id.
            try await stack.restartGateway {
                let restored = try await BackupCommandTests.command(["restore", "--from", backup], database: database)
                #expect(restored.status == 0, "\(restored.stderr)")
                #expect(try await BackupCommandTests.sqlite(database, announced) == "")
                #expect(try await BackupCommandTests.sqlite(database, refundAnnounced) == "")
            }
            #expect(try await paid(at: stack.base))
            #expect(try await BackupCommandTests.sqlite(database, announced) == first)
            #expect(try await refunded(at: stack.base))
            #expect(try await BackupCommandTests.sqlite(database, refundAnnounced) == firstRefund)
        }
    }

    /// A refund asked for after the backup is not in the restored database: the client asks again
    /// (the same out_refund_no, as docs/api.md says a client whose answer was lost does), WeChat
    /// answers with the refund it has, and its end is announced under the id it had.
    @Test(.timeLimit(.minutes(5)))
    func aRefundAskedForAgainAfterARestoreIsAnnouncedUnderTheSameEventID() async throws {
        try await Self.withStack { stack, client, database, backup in
            let token = ProductionStack.clientToken
            #expect(try await client.createAndPay("rs-0003", base: stack.base, wechat: stack.wechatBase, token: token) == "SUCCESS")
            let backedUp = try await BackupCommandTests.command(["backup", "--to", backup], database: database)
            #expect(backedUp.status == 0, "\(backedUp.stderr)")
            let body = #"{"amount":990,"reason":"asked twice","out_refund_no":"rs-r3"}"#
            func refundedAgain() async throws -> Bool {
                try await eventually(timeout: .seconds(90)) {
                    try await client.send(.get, stack.base + "/v1/refunds/rs-r3", token: token).json["state"] as? String == "SUCCESS"
                }
            }
            #expect(try await client.send(.post, stack.base + "/v1/orders/rs-0003/refunds", token: token, body: body).status == 201)
            #expect(try await client.send(.post, stack.wechatBase + "/simulator/refunds/rs-r3/complete",
                                          body: #"{"status":"SUCCESS"}"#).status == 200)
            #expect(try await refundedAgain())
            let announced = "SELECT id FROM outbox WHERE out_trade_no = 'rs-0003' AND type = 'refund.succeeded'"
            let first = try await BackupCommandTests.sqlite(database, announced)
            #expect(first.hasPrefix("evt_"), "\(first)")
            try await stack.restartGateway {
                let restored = try await BackupCommandTests.command(["restore", "--from", backup], database: database)
                #expect(restored.status == 0, "\(restored.stderr)")
            }
            let again = try await client.send(.post, stack.base + "/v1/orders/rs-0003/refunds", token: token, body: body)
            #expect(again.status == 201, "\(again.body)")
            #expect(try await refundedAgain())
            #expect(try await BackupCommandTests.sqlite(database, announced) == first)
        }
    }
}
