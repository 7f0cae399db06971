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

/// reliability.md T11 at small scale (the full one is `scripts/battery/run T11`): per paid order,
/// ten partial refunds of 15 % each sent twice at once, with WeChat answering SYSTEMERROR to some
/// and duplicating some refund notifies. Per order the accepted refunds never exceed what was paid,
/// each refund number reaches WeChat with one parameter set, and every accepted refund ends SUCCESS
/// with one refund.succeeded event.
struct BatteryRefundStormTests {
    @Test(arguments: RefundRig.Mode.allCases, StoreKind.all)
    func aStormOfRefundsAskingOneAndAHalfTimesEachOrderNeverRefundsMoreThanWasPaid(mode: RefundRig.Mode, store: StoreKind) async throws {
        let rig = try await RefundRig.start(mode, store: store, completeRefundsAfter: 0.2)
        defer { Task { await rig.stop() } }
        let orders = (0..<8).map { "storm-\(mode == .sockets ? "s" : "p")-\($0)" }
        let amount = { (index: Int) in 1000 + 20 * index }
        for (index, order) in orders.enumerated() { try await rig.paidOrder(order, amount: amount(index)) }
        rig.simulator.apply(FaultPlan(endpoints: ["/secapi/pay/refund": EndpointFaults(systemErrorRate: 0.1)],
                                      notify: NotifyFaults(duplicateRate: 0.3, duplicateCopies: 3)))
        var requests: [(order: String, number: String, amount: Int)] = []
        for (index, order) in orders.enumerated() {
            for k in 0..<10 { requests += Array(repeating: (order, "\(order)-r\(k)", amount(index) * 15 / 100), count: 2) }
        }
        requests.shuffle()
        let answers = try await withThrowingTaskGroup(of: (String, Int, String?).self) { group in
            for request in requests {
                group.addTask {
                    let answer = try await rig.refund(request.order, amount: request.amount, reason: "storm", number: request.number)
                    return (request.number, answer.status, answer.error?["code"] as? String)
                }
            }
            var answers: [(String, Int, String?)] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        var statuses: [String: [Int]] = [:]
        for (number, status, code) in answers {
            statuses[number, default: []].append(status)
            if status == 409 { #expect(code == "refund_exceeds_paid") }
        }
        let accepted = statuses.filter { $0.value.sorted() == [200, 201] }.keys
        #expect(statuses.values.allSatisfy { $0.sorted() == [200, 201] || $0 == [409, 409] })
        #expect(accepted.count == orders.count * 6)
        for (index, order) in orders.enumerated() {
            let refunds = try await rig.store.refunds(outTradeNo: order)
            #expect(refunds.count == 6)
            #expect(refunds.reduce(0) { $0 + $1.amount } <= amount(index))
        }
        for number in statuses.keys {
            let log = rig.simulator.refundRequests[number]
            if accepted.contains(number) {
                #expect(log?.parameterSets.count == 1, "\(number)")
            } else {
                #expect(log == nil, "\(number) reached WeChat though it was refused")
            }
        }
        // Every accepted refund ends SUCCESS (by its notify, or the reconciler for those whose answer
        // was SYSTEMERROR three times over), announced once.
        let reconciler = Reconciler(services: rig.gateway.services, configuration: .init(interval: 30, after: 3600))
        let finished = await eventually(timeout: .seconds(60)) {
            _ = await reconciler.sweep()
            var all = true
            for number in accepted where (try? await rig.store.refund(number))??.state != .success { all = false }
            return all
        }
        #expect(finished)
        for order in orders {
            #expect(try await rig.store.order(order)?.state == .refund)
            #expect(try await rig.events(order, type: "refund.succeeded").count == 6)
            #expect(try await Battery.transitionsIntoSuccess(rig.store, order) == 1)
        }
    }
}
