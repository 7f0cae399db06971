// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import Observability
import StorageCore
import StoreTestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// A notify the database failed to record is answered FAIL (WeChat retries it) and counted in
/// `wxpay_storage_errors_total` by its error, as a create or a refund that failed so is: the
/// counter WxpayDatabaseWritesFailing reads must see a disk that fails only notifies.
struct NotifyStorageErrorTests {
    /// The storage errors counted so far, every error label together.
    static func storageErrors(_ metrics: MetricsRegistry) -> Double {
        metrics.exposition().split(separator: "\n")
            .filter { $0.hasPrefix("wxpay_storage_errors_total{") }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .reduce(0, +)
    }

    @Test("A payment notify and a refund notify whose writes fail are answered FAIL and counted as storage errors by their error")
    func notifiesThatFailOnAStorageErrorAreCountedAsStorageErrors() async throws {
        let rig = try await RefundRig.start(.inProcess, store: .sqlite)
        defer { Task { await rig.stop() } }
        let metrics = rig.gateway.services.context.metrics
        try await rig.paidOrder("nse-refunded", amount: 900)
        #expect(try await rig.refund("nse-refunded", amount: 300, number: "nse-r1").status == 201)
        let refundNotify = try await rig.refundNotify("nse-r1")
        // Paid at WeChat with its notify lost: the gateway hears of it below, with writes failing.
        #expect(try await rig.send(.post, "/v1/orders", body: #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"nse-paid"}"#).status == 201)
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        let paid = try rig.simulator.pay(outTradeNo: "nse-paid")
        let paymentNotify = String(decoding: Battery.genuineNotify(paid, nonce: "nse-storage"), as: UTF8.self)
        let before = Self.storageErrors(metrics)

        // Every write to an order or a refund fails, as on a disk gone bad.
        for table in ["orders", "refunds"] {
            #expect(await rig.gateway.database.execute(
                "CREATE TRIGGER fail_\(table) BEFORE UPDATE ON \(table) BEGIN SELECT RAISE(ABORT, 'disk gone'); END"))
        }
        let payment = try await rig.send(.post, "/wechat/notify", token: nil, body: paymentNotify)
        #expect(String(decoding: payment.body, as: UTF8.self).contains("<return_code><![CDATA[FAIL]]></return_code>"))
        #expect(metrics.counter("wxpay_notifies_total", ["outcome": "storage_error"]) == 1)
        #expect(Self.storageErrors(metrics) == before + 1, "\(metrics.exposition())")
        #expect(metrics.counter("wxpay_storage_errors_total", ["error": "constraint"]) == 1)

        let refund = try await rig.send(.post, "/wechat/refund-notify", token: nil, body: refundNotify)
        #expect(String(decoding: refund.body, as: UTF8.self).contains("<return_code><![CDATA[FAIL]]></return_code>"))
        #expect(metrics.counter("wxpay_refund_notifies_total", ["outcome": "storage_error"]) == 1)
        #expect(Self.storageErrors(metrics) == before + 2, "\(metrics.exposition())")

        // The disk mended, WeChat's retries are taken.
        for table in ["orders", "refunds"] { #expect(await rig.gateway.database.execute("DROP TRIGGER fail_\(table)")) }
        let retried = try await rig.send(.post, "/wechat/notify", token: nil, body: paymentNotify)
        #expect(String(decoding: retried.body, as: UTF8.self).contains(Battery.acknowledged))
        #expect(try await rig.store.order("nse-paid")?.state == .success)
    }
}
