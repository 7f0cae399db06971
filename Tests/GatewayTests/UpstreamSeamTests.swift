// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import StorageCore
import StoreTestSupport
import Synchronization
import Testing
import WeChatPay

/// The order flows reach WeChat through one seam, `WeChatPayUpstream`, and never ask which API
/// version is behind it: a second implementation (here a scripted WeChat that speaks neither v2's
/// XML nor anything else) carries an order through create, a held wait, a refund and its
/// refundquery, a close and the bill, exactly as API v2 does.
struct UpstreamSeamTests {
    /// A WeChat that answers from a script: every order is payable, and `pay` makes it paid.
    final class ScriptedWeChat: WeChatPayUpstream {
        private let state = Mutex<(paid: Set<String>, refunds: [String: UpstreamRefundAcceptance], calls: [String])>(([], [:], []))

        func pay(_ outTradeNo: String) { state.withLock { _ = $0.paid.insert(outTradeNo) } }
        var calls: [String] { state.withLock { $0.calls } }
        private func called(_ api: String) { state.withLock { $0.calls.append(api) } }

        func prepay(_ order: OrderRecord, notifyURL: String) async throws(UpstreamError) -> StoredPrepay {
            called("prepay")
            return StoredPrepay(prepayID: "scripted-prepay-" + order.outTradeNo)
        }

        func jsapiPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> JSAPIPayRequest {
            JSAPIPayRequest(appId: "scripted-app", timeStamp: String(Int(issuedAt.timeIntervalSince1970)), nonceStr: "n",
                            package: "prepay_id=" + prepayID, signType: "NONE", paySign: "scripted")
        }

        func appPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> AppPayRequest {
            AppPayRequest(appId: "scripted-app", partnerId: "scripted-merchant", prepayId: prepayID, packageValue: "Sign=Scripted",
                          nonceStr: "n", timeStamp: String(Int(issuedAt.timeIntervalSince1970)), sign: "scripted", signType: "NONE")
        }

        func queryOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamTrade {
            called("queryOrder")
            let paid = state.withLock { $0.paid.contains(order.outTradeNo) }
            return UpstreamTrade(outTradeNo: order.outTradeNo, state: paid ? .success : .notPay,
                                 transactionID: paid ? "scripted-tx-" + order.outTradeNo : nil, amount: paid ? order.amount : nil,
                                 paidAt: paid ? Date() : nil)
        }

        func closeOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamClosing {
            called("closeOrder")
            return state.withLock { $0.paid.contains(order.outTradeNo) } ? .alreadyPaid : .closed
        }

        func refund(_ refund: RefundRecord, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundAcceptance {
            called("refund")
            let accepted = UpstreamRefundAcceptance(outRefundNo: refund.outRefundNo, outTradeNo: refund.outTradeNo,
                                                    amount: refund.amount, refundID: "scripted-refund-" + refund.outRefundNo)
            state.withLock { $0.refunds[refund.outRefundNo] = accepted }
            return accepted
        }

        func queryRefund(_ outRefundNo: String, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundReport {
            called("queryRefund")
            guard let accepted = state.withLock({ $0.refunds[outRefundNo] }) else {
                throw UpstreamError(kind: .business, advice: .doesNotExist, mayHaveTakenEffect: false, code: "NO_SUCH_REFUND",
                                    codeLabel: "NO_SUCH_REFUND", notFound: true, shortDescription: "business_error",
                                    description: "no such refund")
            }
            return UpstreamRefundReport(outTradeNo: accepted.outTradeNo, refunds: [.init(
                outRefundNo: outRefundNo, refundID: accepted.refundID, amount: accepted.amount, status: .success,
                succeededAt: Date())])
        }

        func bill(day: String) async throws(UpstreamError) -> [BillRow] {
            called("bill")
            throw UpstreamError(kind: .protocolFailure, advice: .doesNotExist, mayHaveTakenEffect: false, notFound: true,
                                shortDescription: "protocol_failure", description: "no bill")
        }
    }

    @Test("The order flows run on any implementation of the upstream seam: create, wait, refund, refundquery, close, bill",
          arguments: StoreKind.all)
    func theOrderFlowsRunOnAnyImplementationOfTheSeam(store kind: StoreKind) async throws {
        let database = try await TestDatabase(kind)
        let store = try await database.open()
        let wechat = ScriptedWeChat()
        var variables = ["GATEWAY_POLL_INTERVAL": "0.05", "GATEWAY_REFUND_QUERY_AFTER": "0"]
        variables["GATEWAY_RECONCILE_AFTER"] = "0"
        let configuration = try GatewayConfiguration(environment: Environment(variables), demo: true)
        let services = GatewayServices(GatewayContext(configuration: configuration, store: store, upstream: wechat))
        do {
            let body = #"{"amount":990,"description":"d","client_ip":"203.0.113.7","out_trade_no":"seam-1"}"#
            let created = try await services.creation.create(try CreateOrderInput(json: Array(body.utf8)))
            let shown = try JSONSerialization.jsonObject(with: Data(created.json)) as? [String: Any] ?? [:]
            #expect(shown["prepay_id"] as? String == "scripted-prepay-seam-1")
            #expect((shown["app_params"] as? [String: Any])?["packageValue"] as? String == "Sign=Scripted")

            // A held wait asks the scripted WeChat and settles what it says through the one door.
            wechat.pay("seam-1")
            let waited = try await services.queries.order("seam-1", wait: 20)
            let timeline = try await store.events("seam-1").map { "\($0.kind): \($0.detail)" }
            #expect((try JSONSerialization.jsonObject(with: Data(waited)) as? [String: Any])?["state"] as? String == "SUCCESS",
                    "calls \(wechat.calls), timeline \(timeline)")
            #expect(try await store.order("seam-1")?.transactionID == "scripted-tx-seam-1")

            // A refund is sent through the seam, and a sweep's refund query settles it.
            let refund = try await services.refunds.request(
                try RefundInput(json: Array(#"{"amount":300,"reason":"r","out_refund_no":"seam-r1"}"#.utf8)), outTradeNo: "seam-1")
            #expect(refund.state == "PROCESSING")
            _ = await Reconciler(services: services, configuration: .init(interval: 30, after: 0)).sweep()
            #expect(try await store.refund("seam-r1")?.state == .success)
            #expect(try await store.refund("seam-r1")?.refundID == "scripted-refund-seam-r1")

            // An unpaid order past WeChat's five minutes is closed through the seam.
            let second = #"{"amount":100,"description":"d","client_ip":"203.0.113.7","out_trade_no":"seam-2"}"#
            _ = try await services.creation.create(try CreateOrderInput(json: Array(second.utf8)))
            let later = GatewayServices(GatewayContext(configuration: configuration, store: store, upstream: wechat,
                                                       now: { Date().addingTimeInterval(600) }))
            _ = try await later.closing.close("seam-2")
            #expect(try await store.order("seam-2")?.state == .closed)

            // A day without a bill (the seam's notFound) is a clean comparison of nothing.
            let report = try await BillReconciler(services: services).reconcile(day: "2026-01-05")
            #expect(report.billPayments == 0)
            #expect(Set(wechat.calls).isSuperset(of: ["prepay", "queryOrder", "refund", "queryRefund", "closeOrder", "bill"]))
        } catch {
            Issue.record("\(error)")
        }
        await store.close()
        await database.remove()
    }
}
