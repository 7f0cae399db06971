// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import HTTPClientTestSupport
import Observability
import StorageCore
import Testing
import WeChatPay
import WeChatPayHTTPTransport
import WeChatPaySimulator

/// `/secapi/pay/refund` over real mutual TLS: the simulator's TLS asks for the merchant
/// certificate and only one its CA signed lets a refund through.
struct RefundTLSTests {
    @Test func thePKCS12FormOfTheMerchantCertificateWorksLikeThePEMPair() async throws {
        let rig = try await RefundRig.start(.sockets, certificate: .pkcs12)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("tls-p12")
        let answer = try await rig.refund("tls-p12", amount: 90, number: "tls-p12-r1")
        #expect(answer.status == 201)
        #expect(answer.json["state"] as? String == "PROCESSING")
        #expect(answer.json["refund_id"] as? String != nil)
    }

    @Test(arguments: [RefundRig.Certificate.rogue, .none])
    func aRogueOrMissingCertificateIsRefusedByTheSimulatorAndTheRefundEndsClosed(certificate: RefundRig.Certificate) async throws {
        let rig = try await RefundRig.start(.sockets, certificate: certificate)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("tls-bad", amount: 500)
        let answer = try await rig.refund("tls-bad", amount: 500, number: "tls-bad-r1")
        // Recorded, refused by WeChat's front end (HTTP 400) before any XML was read: closed at
        // once, its amount free again, and nothing refunded at WeChat.
        #expect(answer.status == 201)
        #expect(answer.json["state"] as? String == "REFUNDCLOSE")
        #expect(answer.json["failure_reason"] as? String == "HTTP_400")
        #expect(rig.simulator.order("tls-bad")?.refunds.isEmpty == true)
        #expect(rig.upstreamRefundRequests == 1, "a refusal is not retried")
        #expect(rig.metrics.counter("wxpay_refunds_refused_total", ["reason": "HTTP_400"]) == 1)
        #expect(try await rig.events("tls-bad", type: "refund.failed").count == 1)
        let replay = try await rig.refund("tls-bad", amount: 500, number: "tls-bad-r1")
        #expect(replay.status == 200 && replay.json["state"] as? String == "REFUNDCLOSE")
        #expect(try await rig.refund("tls-bad", amount: 500, number: "tls-bad-r2").json["state"] as? String == "REFUNDCLOSE")
    }
}
