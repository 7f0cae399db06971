// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import HTTPClientTestSupport
import Observability
import StorageCore
import StoreTestSupport
import Synchronization
import TestSupport
import WeChatPay
import WeChatPayHTTPTransport
import WeChatPaySimulator

/// The gateway with refunds, and the simulator as WeChat, reachable in process or entirely over
/// sockets on 127.0.0.1: the client talks HTTP to the gateway, the gateway HTTPS to the simulator
/// with the merchant certificate (the simulator's TLS demands one its CA signed for refunds), and
/// the simulator posts payment and refund notifies back over HTTP.
final class RefundRig: Sendable {
    typealias Mode = GatewayRig.Mode

    /// Which certificate the gateway presents to the simulator (sockets only).
    enum Certificate: Sendable {
        case pem, pkcs12, rogue, none
    }

    static let client = GatewayConfiguration.demoClientToken
    static let support = GatewayConfiguration.demoSupportToken

    /// The gateway, its simulator and store, with refunds attached.
    let gateway: GatewayRig
    let refunds: RefundService

    var mode: Mode { gateway.mode }
    var simulator: WeChatPaySimulator { gateway.simulator }
    var clock: ScaledClock { gateway.clock }
    var services: GatewayServices { gateway.services }
    var store: TestStore { gateway.store }
    var metrics: MetricsRegistry { gateway.services.metrics }

    /// - Parameters:
    ///   - refundsOn: false starts the gateway without a certificate (refunds answer 503).
    ///   - completeRefundsAfter: the simulator completes accepted refunds SUCCESS after these seconds.
    static func start(_ mode: Mode, store kind: StoreKind = .sqlite, certificate: Certificate = .pem, refundsOn: Bool = true,
                      completeRefundsAfter: Double? = nil, environment: [String: String] = [:],
                      logger: Logger = .disabled) async throws -> RefundRig {
        var variables = ["GATEWAY_REFUND_QUERY_AFTER": "0"]
        variables.merge(environment) { $1 }
        let sockets = mode == .sockets
        let identity: TLSClientIdentity? = switch certificate {
        case .pem: TestCertificates.clientPEMIdentity
        case .pkcs12: TestCertificates.clientPKCS12Identity
        case .rogue: TestCertificates.rogueClientIdentity
        case .none: nil
        }
        // A gateway presenting no certificate at all still has refunds configured (the test is the
        // simulator's refusal); `refundsOn: false` is a gateway without a certificate.
        var composition = GatewayRig.Composition()
        if sockets { composition.refundMode = .mutualTLS(identity ?? TestCertificates.clientPEMIdentity) }
        if !refundsOn { composition.refundMode = .off }
        // Over sockets the gateway talks mutual TLS to the simulator.
        let gateway = try await GatewayRig.start(mode, store: kind, environment: variables, logger: logger,
                                                 wechat: sockets ? .mutualTLS(identity) : .inProcess, composition: composition) {
            // Short retries and a long reply timeout: on a loaded machine a notify attempt may time
            // out, and WeChat's 15 s first retry would outlast a test's patience.
            $0.notifyRetryIntervals = [0.5, 1, 2, 4, 8, 15]
            $0.notifyTimeout = 30
            $0.refundCompletionDelay = completeRefundsAfter
        }
        return RefundRig(gateway: gateway, refunds: gateway.services.refunds)
    }

    private init(gateway: GatewayRig, refunds: RefundService) {
        self.gateway = gateway
        self.refunds = refunds
    }

    func stop() async {
        await gateway.stop()
    }

    /// One request to the gateway, by whichever path this rig uses.
    func send(_ method: HTTPMethod, _ path: String, token: String? = RefundRig.client, body: String? = nil)
        async throws -> GatewayRig.Response
    {
        try await gateway.send(method, path, token: token, body: body)
    }

    /// Creates an order and has WeChat take the payment; waits until the gateway settled it.
    func paidOrder(_ outTradeNo: String, amount: Int = 990) async throws {
        let created = try await send(.post, "/v1/orders", body: #"{"amount":\#(amount),"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)"}"#)
        guard created.status == 201 else { throw RigError.setup("create answered \(created.status)") }
        try simulator.pay(outTradeNo: outTradeNo)
        let paid = await eventually(timeout: .seconds(60)) { (try? await self.store.order(outTradeNo))??.state == .success }
        guard paid else { throw RigError.setup("\(outTradeNo) was not settled") }
    }

    /// `POST /v1/orders/{out_trade_no}/refunds`.
    func refund(_ outTradeNo: String, amount: Int, reason: String = "bought by mistake", number: String? = nil)
        async throws -> GatewayRig.Response
    {
        let numbered = number.map { #","out_refund_no":"\#($0)""# } ?? ""
        return try await send(.post, "/v1/orders/\(outTradeNo)/refunds",
                              body: #"{"amount":\#(amount),"reason":"\#(reason)"\#(numbered)}"#)
    }

    /// Waits (bounded) until the refund is in `state` locally.
    func refund(_ outRefundNo: String, becomes state: RefundState, timeout: Duration = .seconds(60)) async -> Bool {
        await eventually(timeout: timeout) { (try? await self.store.refund(outRefundNo))??.state == state }
    }

    /// The order's outbox events of `type`.
    func events(_ outTradeNo: String, type: String) async throws -> [OutboxEvent] {
        try await store.outboxEvents(outTradeNo).filter { $0.type == type }
    }

    /// A refund of the whole order made in the merchant platform, not through the gateway: WeChat
    /// holds it, the gateway never asked for it.
    func refundByHand(_ outTradeNo: String, number: String, amount: Int) async throws {
        let merchant = MerchantCredentials(appID: GatewayConfiguration.demoAppID, mchID: GatewayConfiguration.demoMchID,
                                           key: APIKey(GatewayConfiguration.demoKey), signType: .hmacSHA256)
        _ = try await WeChatPayClient(merchant: merchant, transport: SimulatorTransport(simulator: simulator),
                                     nonces: RandomNonceSource()).send(RefundRequest(
            order: .outTradeNo(outTradeNo), outRefundNo: number, totalFee: amount, refundFee: amount,
            refundDescription: "by hand", notifyURL: nil))
    }

    /// Refund requests WeChat received (its request counter for the refund path).
    var upstreamRefundRequests: Int { simulator.counters.requests["/secapi/pay/refund"] ?? 0 }

    /// A refund notify for a stored refund as WeChat sends it, with its decrypted fields changed,
    /// encrypted with `key`.
    func refundNotify(_ outRefundNo: String, status: RefundNotification.Status = .success,
                      key: APIKey = APIKey(GatewayConfiguration.demoKey),
                      change: (inout RefundNotifyBuilder) -> Void = { _ in }) async throws -> String {
        guard let refund = try await store.refund(outRefundNo) else { throw RigError.setup("no refund \(outRefundNo)") }
        let order = try await store.order(refund.outTradeNo)
        var builder = RefundNotifyBuilder(
            merchant: MerchantIdentity(appID: GatewayConfiguration.demoAppID, mchID: GatewayConfiguration.demoMchID),
            transactionID: order?.transactionID ?? "", outTradeNo: refund.outTradeNo,
            refundID: refund.refundID ?? "50300000000000000000000000001", outRefundNo: outRefundNo,
            totalFee: refund.totalFee, refundFee: refund.amount, nonce: "forgedNonce")
        builder.refundStatus = status
        builder.successTime = status == .success ? Date() : nil
        change(&builder)
        return String(decoding: try FlatXML.encode(try builder.fields(encryptedWith: key)), as: UTF8.self)
    }
}

enum RigError: Error {
    case setup(String)
}
