// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import HTTP
import Synchronization
import Testing
import WeChatPay
import WeChatPayV3
@testable import WeChatPaySimulator

/// The v3 simulator over real sockets, driven by WeChatPayV3: requests signed by the merchant's
/// key, every answer and notify verified (and decrypted) by the module, in each key mode.
struct V3SimulatorTests {
    /// The verifier a merchant of `mode` would configure: the public key, certificates trusted
    /// through the download (pinned by the simulator's first certificate), or both.
    static func verifier(_ rig: V3SimulatorRig, _ mode: V3SimulatorRig.Mode) async throws -> V3Verifier {
        guard mode != .publicKey else { return V3Verifier(publicKey: rig.publicKey) }
        let pinned = try #require(rig.simulator.v3?.platformCertificates.first)
        let store = PlatformCertificateStore(pinned: [pinned])
        let answer = try await rig.send(PlatformCertificateDownload.request, serial: pinned.serialNumber)
        #expect(answer.status == 200)
        try store.accept(try V3SignedMessage(headers: answer.headerDictionary, body: answer.body), key: try APIv3Key(V3SimulatorRig.apiV3Key),
                         now: Date())
        return V3Verifier(publicKey: mode == .both ? rig.publicKey : nil, platformCertificates: store)
    }

    @Test("An APP order's whole life over sockets, every answer and notify verified by WeChatPayV3", arguments: V3SimulatorRig.Mode.allCases)
    func orderLifecycle(mode: V3SimulatorRig.Mode) async throws {
        let rig = try await V3SimulatorRig.start(mode)
        defer { Task { await rig.stop() } }
        let verifier = try await Self.verifier(rig, mode)
        let key = try APIv3Key(V3SimulatorRig.apiV3Key)
        rig.setOpener(V3NotifyOpener(verifier: verifier, key: key, mchID: "1900000109"))
        let serial = verifier.preferredSerial(at: Date())
        func verified(_ request: V3Request, status: Int = 200) async throws -> [UInt8] {
            let answer = try await rig.send(request, serial: serial)
            #expect(answer.status == status, "\(request.url): \(String(decoding: answer.body, as: UTF8.self))")
            guard case .verified(let body) = try V3Response.read(status: answer.status, headers: answer.headerDictionary, body: answer.body,
                                                                  verifier: verifier, now: Date()) else {
                throw V3ErrorBody(status: answer.status, body: answer.body)
            }
            return body
        }

        let order = PrepayRequest(appID: "wxd678efh567hg6787", mchID: "1900000109", description: "课程-Swift",
                                     outTradeNo: "v3|order*01", notifyURL: rig.notifyURL, total: 990)
        let prepay = try PrepayResponse(body: try await verified(try order.request()))
        #expect(prepay.prepayID?.hasPrefix("wx") == true)
        #expect(try PrepayResponse(body: try await verified(try order.request())) == prepay)
        var changed = order
        changed.total = 991
        let reused = try await rig.send(try changed.request(), serial: serial)
        #expect(reused.status == 403 && V3ErrorBody(status: reused.status, body: reused.body).code == "OUT_TRADE_NO_USED")

        let unpaid = try V3Transaction(body: try await verified(TransactionRequests.query(outTradeNo: order.outTradeNo, mchID: "1900000109")))
        #expect(unpaid.tradeState == .notPaid)
        #expect(try await rig.control("/simulator/orders/v3%7Corder%2A01/pay").status == 200)
        let notifies = try await rig.waitForNotifies(1)
        #expect(notifies.first?.outcome == "opened")
        let paid = try V3Transaction(body: try await verified(TransactionRequests.query(outTradeNo: order.outTradeNo, mchID: "1900000109")))
        #expect(paid.tradeState == .success && paid.total == 990 && paid.transactionID != nil)

        let refund = V3RefundRequest(order: .outTradeNo(order.outTradeNo), outRefundNo: "v3-refund-1", refund: 90, total: 990,
                                     notifyURL: rig.notifyURL)
        #expect(try V3Refund(body: try await verified(try refund.request())).status == .processing)
        #expect(try await rig.control("/simulator/refunds/v3-refund-1/complete", body: #"{"status":"SUCCESS"}"#).status == 200)
        let both = try await rig.waitForNotifies(2)
        #expect(both.count == 2 && both[1].outcome == "opened")
        #expect(try V3Refund(body: try await verified(V3RefundRequest.query(outRefundNo: "v3-refund-1"))).status == .success)

        let other = PrepayRequest(appID: "wxd678efh567hg6787", mchID: "1900000109", description: "另一个", outTradeNo: "v3order02",
                                     notifyURL: rig.notifyURL, total: 1)
        _ = try await verified(try other.request())
        #expect(try await verified(TransactionRequests.close(outTradeNo: "v3order02", mchID: "1900000109"), status: 204).isEmpty)
        let closed = try V3Transaction(body: try await verified(TransactionRequests.query(outTradeNo: "v3order02", mchID: "1900000109")))
        #expect(closed.tradeState == .closed)
        let missing = try await rig.send(TransactionRequests.query(outTradeNo: "nosuchorder", mchID: "1900000109"))
        #expect(missing.status == 404 && V3ErrorBody(status: 404, body: missing.body).advice == .doesNotExist)

        if mode == .publicKey {
            let certificates = try await rig.send(PlatformCertificateDownload.request)
            #expect(certificates.status == 404 && V3ErrorBody(status: 404, body: certificates.body).code == "RESOURCE_NOT_EXISTS")
        }
    }

    @Test("A request signed by another key, or naming another serial, is answered 401 SIGN_ERROR and creates nothing")
    func forgedRequestsAreRefused() async throws {
        let rig = try await V3SimulatorRig.start(.publicKey)
        defer { Task { await rig.stop() } }
        let order = PrepayRequest(appID: "wxd678efh567hg6787", mchID: "1900000109", description: "x", outTradeNo: "forged001",
                                     notifyURL: rig.notifyURL, total: 1)
        let impostor = MerchantSigner(mchID: "1900000109", serialNumber: rig.signer.serialNumber, key: RSAPrivateKey.generate())
        let forged = try await rig.send(try order.request(), signer: impostor)
        #expect(forged.status == 401 && V3ErrorBody(status: 401, body: forged.body).code == "SIGN_ERROR")
        let otherSerial = MerchantSigner(mchID: "1900000109", serialNumber: "ABCDEF", key: rig.merchantKey)
        #expect(try await rig.send(try order.request(), signer: otherSerial).status == 401)
        #expect(rig.simulator.order("forged001") == nil)
    }

    @Test("A rotation adds a platform certificate the store trusts through the old one; old and new both verify afterwards")
    func certificateRotation() async throws {
        let rig = try await V3SimulatorRig.start(.certificates)
        defer { Task { await rig.stop() } }
        let verifier = try await Self.verifier(rig, .certificates)
        let before = try #require(verifier.platformCertificates?.certificates.map(\.serialNumber))
        #expect(before.count == 1)
        #expect(try await rig.control("/simulator/v3/rotate").status == 200)
        // The new download is asked to be signed by the old certificate, which the store trusts.
        let answer = try await rig.send(PlatformCertificateDownload.request, serial: before[0])
        let added = try verifier.platformCertificates!.accept(try V3SignedMessage(headers: answer.headerDictionary, body: answer.body),
                                                              key: try APIv3Key(V3SimulatorRig.apiV3Key), now: Date())
        #expect(added.count == 1)
        #expect(verifier.platformCertificates!.certificates.count == 2)
        // Answers signed with the new one (the default after the rotation) and with the old one both verify.
        for serial in [nil, before[0]] {
            let query = try await rig.send(TransactionRequests.query(outTradeNo: "nosuchorder", mchID: "1900000109"), serial: serial)
            #expect(query.status == 404)
            let certificates = try await rig.send(PlatformCertificateDownload.request, serial: serial)
            try verifier.verify(headers: certificates.headerDictionary, body: certificates.body, now: Date())
        }
    }

    @Test("Notify attempts signed as probes, with stale timestamps, bad signatures or unknown serials are refused; the clean retry is accepted",
          arguments: [V3NotifyFaults(probeRate: 1), V3NotifyFaults(staleTimestampRate: 1), V3NotifyFaults(badSignatureRate: 1),
                      V3NotifyFaults(unknownSerialRate: 1)])
    func notifySignatureFaults(faults: V3NotifyFaults) async throws {
        let rig = try await V3SimulatorRig.start(.publicKey, clock: ScaledClock(scale: 1))
        defer { Task { await rig.stop() } }
        rig.setOpener(V3NotifyOpener(verifier: V3Verifier(publicKey: rig.publicKey), key: try APIv3Key(V3SimulatorRig.apiV3Key)))
        let order = PrepayRequest(appID: "wxd678efh567hg6787", mchID: "1900000109", description: "x", outTradeNo: "fault0001",
                                     notifyURL: rig.notifyURL, total: 5)
        #expect(try await rig.send(try order.request()).status == 200)
        rig.simulator.apply(FaultPlan(v3Notify: faults))
        _ = try rig.simulator.pay(outTradeNo: "fault0001")
        let first = try await rig.waitForNotifies(1)
        let expected: String = faults.probeRate > 0 ? "signature_probe" : faults.staleTimestampRate > 0 ? "stale_timestamp"
            : faults.badSignatureRate > 0 ? "bad_signature" : "unknown_serial"
        #expect(first.first?.outcome == expected)
        rig.simulator.apply(FaultPlan())
        let all = try await rig.waitForNotifies(2)
        #expect(all.count >= 2 && all[1].outcome == "opened")
    }

    @Test("An answer the fault plan signs with a stale timestamp or a corrupted signature is refused by WeChatPayV3")
    func responseSignatureFaults() async throws {
        let rig = try await V3SimulatorRig.start(.publicKey)
        defer { Task { await rig.stop() } }
        let verifier = V3Verifier(publicKey: rig.publicKey)
        let template = "/v3/pay/transactions/out-trade-no/{id}"
        let order = PrepayRequest(appID: "wxd678efh567hg6787", mchID: "1900000109", description: "x", outTradeNo: "stale0001",
                                     notifyURL: rig.notifyURL, total: 5)
        #expect(try await rig.send(try order.request()).status == 200)
        for (faults, code) in [(EndpointFaults(staleTimestampRate: 1), WeChatPayV3Error.Code.staleTimestamp),
                               (EndpointFaults(badSignatureRate: 1), .badSignature),
                               (EndpointFaults(missingSignatureRate: 1), .missingHeader)] {
            rig.simulator.apply(FaultPlan(endpoints: [template: faults]))
            let answer = try await rig.send(TransactionRequests.query(outTradeNo: "stale0001", mchID: "1900000109"))
            #expect(answer.status == 200)
            #expect(throws: WeChatPayV3Error.self) {
                do throws(WeChatPayV3Error) { try verifier.verify(headers: answer.headerDictionary, body: answer.body, now: Date()) } catch {
                    #expect(error.code == code)
                    throw error
                }
            }
        }
        rig.simulator.apply(FaultPlan(endpoints: [template: EndpointFaults(systemErrorRate: 1)]))
        let failed = try await rig.send(TransactionRequests.query(outTradeNo: "stale0001", mchID: "1900000109"))
        #expect(failed.status == 500 && V3ErrorBody(status: 500, body: failed.body).advice == .retrySameParameters)
    }
}
