// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// reliability.md T1 at reduced scale (the full run is `scripts/battery/run T1`): every order is paid
/// at WeChat with its notify lost, then its genuine notify arrives many times in one burst while a
/// reconciler sweeps, `wait` queries poll and the fulfilment dispatcher delivers.
struct BatteryDuplicateStormTests {
    static let orders = 30
    static let copies = 12

    @Test(arguments: StoreKind.all) func aDuplicateStormIsAcknowledgedEveryTimeAndSettlesEachOrderOnce(store: StoreKind) async throws {
        let rig = try await GatewayRig.start(.inProcess, store: store, pollInterval: 0.05)
        let receiver = try await WebhookReceiver.start(answering: 200)
        let client = try HTTPClient()
        let dispatcher = FulfilmentDispatcher(store: rig.store, configuration: FulfilmentTests.configuration(receiver),
                                              transport: HTTPFulfilmentTransport(client: client))
        let reconciler = Reconciler(services: rig.services,
                                    configuration: .init(interval: 0.05, after: 0, concurrency: 4, rate: 1000))
        let numbers = (0..<Self.orders).map { String(format: "storm-%04d", $0) }
        // WeChat loses its own notifies, so only the storm (or a sweep) can settle the orders.
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        var notifies: [[UInt8]] = []
        for number in numbers {
            #expect(try await rig.createOrder(number).status == 201)
            notifies.append(Battery.genuineNotify(try rig.simulator.pay(outTradeNo: number), nonce: "n\(number)"))
        }

        let delivering = Task { await dispatcher.run() }
        let sweeping = Task { await reconciler.run() }
        let waiting = Task {
            await withTaskGroup(of: Void.self) { group in
                for number in numbers.prefix(10) {
                    group.addTask { _ = try? await rig.send(.get, "/v1/orders/\(number)?wait=5") }
                }
            }
        }
        let replies = await withTaskGroup(of: String.self) { group -> [String] in
            for notify in notifies {
                for _ in 0..<Self.copies {
                    group.addTask {
                        let reply = try? await rig.send(.post, "/wechat/notify", token: nil,
                                                        body: String(decoding: notify, as: UTF8.self))
                        return reply.map { String(decoding: $0.body, as: UTF8.self) } ?? "no answer"
                    }
                }
            }
            var replies: [String] = []
            for await reply in group { replies.append(reply) }
            return replies
        }
        await waiting.value
        let delivered = await eventually(timeout: .seconds(30)) { Set(receiver.acknowledged.keys).count >= Self.orders }
        sweeping.cancel()
        delivering.cancel()
        _ = await sweeping.value
        _ = await delivering.value
        await receiver.stop()
        await client.shutdown()

        #expect(replies.count == Self.orders * Self.copies)
        #expect(replies.allSatisfy { $0.contains(Battery.acknowledged) }, "every duplicate gets SUCCESS")
        #expect(delivered)
        var outboxIDs: Set<String> = []
        for number in numbers {
            #expect(try await Battery.transitionsIntoSuccess(rig.store, number) == 1, "C4 for \(number)")
            let outbox = try await rig.store.outboxEvents(number)
            #expect(outbox.count == 1, "one order.paid event for \(number)")
            outboxIDs.formUnion(outbox.map(\.id))
            #expect(try await rig.send(.get, "/v1/orders/\(number)").json["state"] as? String == "SUCCESS")
        }
        // C2: effects, deduplicated on the event id, are exactly one per paid order.
        #expect(Set(receiver.acknowledged.keys) == outboxIDs)
        #expect(receiver.deliveries.allSatisfy { $0.signatureValid })
        await rig.stop()
    }
}
