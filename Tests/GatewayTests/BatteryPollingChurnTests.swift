// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import StorageCore
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// reliability.md T8 at reduced scale (the full run is `scripts/battery/run T8`): many clients
/// holding `wait` queries in a loop on a few orders while payments happen, notifies arrive
/// duplicated, reordered and partly dropped, a reconciler sweeps and a tenth of orderqueries fail
/// in every way the simulator knows. C1 for every answer, at most one orderquery per order per
/// poll interval at WeChat, every paid order SUCCESS at the end. (The "no wait answered later than
/// wait + 1 s" bound is a timing one: the battery measures it, the suite does not.)
struct BatteryPollingChurnTests {
    static let clients = 60
    static let orders = 8
    static let pollInterval = 0.1

    struct Seen: Sendable {
        var number: String
        var sent: ContinuousClock.Instant
        var received: ContinuousClock.Instant
        var status: Int
        var state: String?
    }

    @Test(arguments: StoreKind.all)
    func pollersUnderChurnNeverSeeAnOrderGoBackFromSuccessAndWeChatIsAskedAtMostOncePerInterval(store: StoreKind) async throws {
        let rig = try await GatewayRig.start(.inProcess, store: store, pollInterval: Self.pollInterval)
        defer { Task { await rig.stop() } }
        let numbers = (0..<Self.orders).map { String(format: "t8-%04d", $0) }
        for number in numbers { #expect(try await rig.createOrder(number).status == 201) }
        let share = 0.1 / 9
        func rate(_ index: Int) -> Double { share / (1 - Double(index) * share) }
        rig.simulator.apply(FaultPlan(
            endpoints: ["/pay/orderquery": EndpointFaults(
                systemErrorRate: rate(3), http5xxRate: rate(2), truncatedRate: rate(4), nonUTF8Rate: rate(5),
                badSignatureRate: rate(6), missingSignatureRate: rate(7), resetRate: rate(0), timeoutRate: rate(1),
                timeoutSeconds: 0.3, otherOrderRate: rate(8))],
            notify: NotifyFaults(dropRate: 0.2, attemptDropRate: 0.2, duplicateRate: 0.3, duplicateCopies: 3,
                                 reorderWindow: 0.5)))
        let reconciler = Reconciler(services: rig.services,
                                    configuration: .init(interval: 0.2, after: 0, concurrency: 4, rate: 1000))
        let sweeping = Task { await reconciler.run() }
        let toPay = Array(numbers.prefix(6))
        let paid = LockedBox(false)
        let paying = Task {
            for number in toPay {
                try? await Task.sleep(for: .milliseconds(300))
                _ = try? rig.simulator.pay(outTradeNo: number)
            }
            paid.update { $0 = true }
        }
        let seen = LockedBox<[Seen]>([])
        let sawSuccess = LockedBox(false)
        // Polling goes on for 4 s, and on a starved machine until the payments are made, some client
        // has seen a SUCCESS and every client has polled twice (what the checks below need), up to
        // a minute: a slow machine polls longer instead of failing.
        let until = ContinuousClock.now + .seconds(4)
        let giveUp = ContinuousClock.now + .seconds(60)
        let enough: @Sendable (_ requests: Int) -> Bool = { requests in
            ContinuousClock.now >= until && requests >= 2 && paid.value && sawSuccess.value
        }
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<Self.clients {
                group.addTask {
                    var index = client
                    var requests = 0
                    while !enough(requests) && ContinuousClock.now < giveUp {
                        requests += 1
                        let number = numbers[index % numbers.count]
                        index += 1 + client % 3
                        let sent = ContinuousClock.now
                        let response = try? await rig.send(.get, "/v1/orders/\(number)?wait=0.5")
                        let answer = Seen(number: number, sent: sent, received: .now, status: response?.status ?? 0,
                                          state: response?.json["state"] as? String)
                        seen.update { $0.append(answer) }
                        if answer.state == "SUCCESS" { sawSuccess.update { $0 = true } }
                    }
                }
            }
        }
        _ = await paying.value
        let settled = await eventually(timeout: .seconds(60)) {
            for number in toPay { if (try? await rig.store.order(number))?.state != .success { return false } }
            return true
        }
        sweeping.cancel()
        _ = await sweeping.value
        rig.simulator.apply(FaultPlan())
        #expect(settled, "every paid order ends SUCCESS")

        let answers = seen.value
        #expect(answers.allSatisfy { $0.status == 200 })
        var firstSuccess: [String: ContinuousClock.Instant] = [:]
        for answer in answers where answer.state == "SUCCESS" {
            firstSuccess[answer.number] = min(firstSuccess[answer.number] ?? answer.received, answer.received)
            #expect(toPay.contains(answer.number), "SUCCESS answered for \(answer.number), which nobody paid")
        }
        let back = answers.filter { answer in
            guard let first = firstSuccess[answer.number] else { return false }
            return answer.sent > first && answer.state != "SUCCESS"
        }
        #expect(back.isEmpty, "C1: \(back.count) answers went back from SUCCESS")
        #expect(!firstSuccess.isEmpty && answers.count > Self.clients)

        // At WeChat: never two orderqueries about one order closer than the poll interval.
        let times = rig.simulator.orderQueryTimes
        var closest = Double.infinity
        for number in numbers {
            let arrivals = (times[number] ?? []).map(\.timeIntervalSince1970).sorted()
            for (a, b) in zip(arrivals, arrivals.dropFirst()) { closest = min(closest, b - a) }
        }
        #expect(closest >= Self.pollInterval - 0.005, "two orderqueries \(closest) s apart")
        #expect(times.values.map(\.count).reduce(0, +) > numbers.count, "the orders were polled")
        for number in numbers {
            #expect(try await Battery.transitionsIntoSuccess(rig.store, number) == (toPay.contains(number) ? 1 : 0))
        }
    }
}
