// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import HTTPClientTestSupport
import Synchronization
import TestSupport
import Testing
import WeChatPay
import WeChatPayHTTPTransport
@testable import WeChatPaySimulator

/// The protocol core's client drives the simulator, once in process and once over real sockets on
/// 127.0.0.1 (HTTP, and HTTPS with the merchant's client certificate for refunds): one test body,
/// two transports.
struct SimulatorOverSocketsTests {
    static let merchant = MerchantCredentials(appID: SimulatorHarness.appID, mchID: SimulatorHarness.mchID,
                                              key: SimulatorHarness.key, signType: .hmacSHA256)

    /// What the shared body needs: a client, a way to make the user pay, and the notifies received.
    struct Rig: Sendable {
        var client: WeChatPayClient
        var pay: @Sendable (String) async throws -> Void
        var notifies: @Sendable () -> [Fields]
        var advanceClock: @Sendable (Double) async throws -> Void
    }

    /// Create → query → pay → notify → query → refund → refund query → close another after 5 minutes.
    static func orderLifecycle(_ rig: Rig) async throws {
        let order = UnifiedOrderRequest(body: "课程-Swift", outTradeNo: "sock-0001", totalFee: 990,
                                        spbillCreateIP: "203.0.113.7", notifyURL: "http://127.0.0.1:1/unused")
        let created = try await rig.client.send(order)
        #expect(created.prepayID.hasPrefix("wx"))
        #expect(try await rig.client.send(order).prepayID == created.prepayID)

        let before = try await rig.client.send(OrderQueryRequest(outTradeNo: "sock-0001"))
        #expect(before.tradeState == .notPay)
        try await rig.pay("sock-0001")
        let after = try await rig.client.send(OrderQueryRequest(outTradeNo: "sock-0001"))
        #expect(after.tradeState == .success)
        #expect(after.totalFee == 990)

        let refund = try await rig.client.send(RefundRequest(
            order: .outTradeNo("sock-0001"), outRefundNo: "sock-r1", totalFee: 990, refundFee: 90))
        #expect(refund.refundFee == 90)
        let refunds = try await rig.client.send(RefundQueryRequest(.outRefundNo("sock-r1")))
        #expect(refunds.refunds.first?.status == .processing)

        let closing = UnifiedOrderRequest(body: "课程-Swift", outTradeNo: "sock-0002", totalFee: 1,
                                          spbillCreateIP: "203.0.113.7", notifyURL: "http://127.0.0.1:1/unused")
        _ = try await rig.client.send(closing)
        try await rig.advanceClock(301)
        #expect(try await rig.client.send(CloseOrderRequest(outTradeNo: "sock-0002")).outcome == .closed)
        let closed = try await rig.client.send(CloseOrderRequest(outTradeNo: "sock-0001"))
        #expect(closed.outcome == .alreadyPaid)
    }

    @Test func theClientDrivesTheSimulatorInProcess() async throws {
        let harness = SimulatorHarness()
        let client = WeChatPayClient(merchant: Self.merchant, transport: SimulatorTransport(simulator: harness.simulator),
                                     nonces: CountingNonceSource())
        try await Self.orderLifecycle(Rig(
            client: client, pay: { try harness.simulator.pay(outTradeNo: $0) }, notifies: { harness.received.all },
            advanceClock: { harness.clock.advance(by: $0) }))
    }

    @Test func theClientDrivesTheSimulatorOverHTTPSWithAClientCertificate() async throws {
        let clock = ScaledClock(start: Date(), scale: 1)
        // Generous timeouts: at the start of a run the heavy synchronous suites hold both threads
        // of the cooperative pool, where the simulator's handlers wait their turn.
        let httpClient = try HTTPClient(configuration: .init(
            timeouts: .init(connect: .seconds(20), total: .seconds(90)), tls: .init(caFile: TestCertificates.ca)))
        let simulator = WeChatPaySimulator(
            configuration: SimulatorConfiguration(appID: SimulatorHarness.appID, mchID: SimulatorHarness.mchID,
                                                  key: SimulatorHarness.key),
            clock: clock, notifySender: HTTPNotifySender(client: httpClient))
        simulator.setRequiresClientCertificates(true)
        var router = HTTPRouter()
        SimulatorRoutes.registerAPI(simulator, in: &router)
        SimulatorRoutes.registerControl(simulator, in: &router)
        let server = HTTPServer(router: router, configuration: HTTPServerConfiguration().with {
            $0.tls = HTTPServerConfiguration.TLS(
                certificatePEM: try! String(contentsOfFile: TestCertificates.serverCertificate, encoding: .utf8),
                privateKeyPEM: try! String(contentsOfFile: TestCertificates.serverKey, encoding: .utf8),
                clientCAPEM: try! String(contentsOfFile: TestCertificates.ca, encoding: .utf8),
                clientCertificatePolicy: .optional)
        })
        let address = try await server.start()
        let base = "https://127.0.0.1:\(address.port)"
        let transport = WeChatPayHTTPTransport(client: httpClient, configuration: .init(
            primaryBaseURL: base, backupBaseURL: nil, clientIdentity: TestCertificates.clientPEMIdentity,
            timeouts: Self.generousTimeouts))
        let client = WeChatPayClient(merchant: Self.merchant, transport: transport, nonces: CountingNonceSource())
        do {
            try await Self.orderLifecycle(Rig(
                client: client,
                pay: { outTradeNo in
                    let response = try await httpClient.execute(HTTPClientRequest(
                        method: .post, url: "\(base)/simulator/orders/\(outTradeNo)/pay"))
                    #expect(response.status == 200)
                },
                notifies: { [] },
                advanceClock: { seconds in
                    let response = try await httpClient.execute(HTTPClientRequest(
                        method: .post, url: "\(base)/simulator/clock/advance", body: Array("{\"seconds\":\(seconds)}".utf8)))
                    #expect(response.status == 200)
                }))
            // Without the merchant's certificate the refund endpoint answers as WeChat's front end does.
            let anonymous = WeChatPayClient(
                merchant: Self.merchant,
                transport: WeChatPayHTTPTransport(client: httpClient, configuration: .init(primaryBaseURL: base, backupBaseURL: nil)),
                nonces: CountingNonceSource(prefix: "A"))
            await #expect(throws: WeChatPayError.self) {
                _ = try await anonymous.send(RefundRequest(order: .outTradeNo("sock-0001"), outRefundNo: "sock-r2",
                                                           totalFee: 990, refundFee: 1))
            }
            // The control panel's read-only orderquery log is routed too: the lifecycle asked twice.
            let log = try await httpClient.execute(HTTPClientRequest(method: .get, url: "\(base)/simulator/orderqueries"))
            #expect(log.status == 200)
            let times = try JSONSerialization.jsonObject(with: Data(log.body)) as? [String: [Double]]
            #expect(times?["sock-0001"]?.count == 2)
        } catch {
            await server.shutdown(gracePeriod: .seconds(2))
            await httpClient.shutdown()
            throw error
        }
        await server.shutdown(gracePeriod: .seconds(2))
        await httpClient.shutdown()
    }

    /// The client's 10-second default timed out a unifiedorder at load 17 on the shared 2 cores:
    /// these tests are about the wire, not speed.
    static let generousTimeouts = HTTPClient.Timeouts(connect: .seconds(30), total: .seconds(90))

    @Test func notifiesAndResetsTravelOverRealSockets() async throws {
        let httpClient = try HTTPClient(configuration: .init(timeouts: .init(connect: .seconds(20), total: .seconds(90))))
        // The merchant: answers SUCCESS to every notify and keeps what it got.
        let received = Mutex<[Fields]>([])
        var merchantRouter = HTTPRouter()
        merchantRouter.add(.post, "/notify") { request in
            if let fields = try? FlatXML.decode(request.body) { received.withLock { $0.append(fields) } }
            return HTTPServerResponse(status: 200, body: NotifyReply.success.bytes)
        }
        let merchant = HTTPServer(router: merchantRouter)
        let merchantAddress = try await merchant.start()

        let simulator = WeChatPaySimulator(
            configuration: SimulatorConfiguration(appID: SimulatorHarness.appID, mchID: SimulatorHarness.mchID,
                                                  key: SimulatorHarness.key),
            notifySender: HTTPNotifySender(client: httpClient))
        var router = HTTPRouter()
        SimulatorRoutes.registerAPI(simulator, in: &router)
        let server = HTTPServer(router: router)
        let address = try await server.start()
        let notifyLoop = Task { await simulator.run() }
        // Whatever fails below, both servers and the client are stopped (their deinit checks it:
        // a failed step on a loaded machine used to take the whole test process down).
        defer {
            Task {
                notifyLoop.cancel()
                await server.shutdown(gracePeriod: .seconds(2))
                await merchant.shutdown(gracePeriod: .seconds(2))
                await httpClient.shutdown()
            }
        }
        let transport = WeChatPayHTTPTransport(client: httpClient, configuration: .init(
            primaryBaseURL: "http://127.0.0.1:\(address.port)", backupBaseURL: nil, timeouts: Self.generousTimeouts))
        let client = WeChatPayClient(merchant: Self.merchant, transport: transport, nonces: CountingNonceSource())

        _ = try await client.send(UnifiedOrderRequest(
            body: "course", outTradeNo: "sock-n1", totalFee: 5, spbillCreateIP: "127.0.0.1",
            notifyURL: "http://127.0.0.1:\(merchantAddress.port)/notify"))
        try simulator.pay(outTradeNo: "sock-n1")
        let deadline = ContinuousClock.now + .seconds(60)
        while received.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let notify = try #require(received.withLock { $0.first })
        let outcome = try PaymentNotification.verify(
            notify, merchant: MerchantIdentity(appID: SimulatorHarness.appID, mchID: SimulatorHarness.mchID),
            signer: Signer(key: SimulatorHarness.key), expectedSignType: .hmacSHA256)
        #expect(outcome.payment?.totalFee == 5)
        #expect(await eventually { simulator.pendingNotifies == 0 })

        simulator.apply(FaultPlan(endpoints: ["/pay/orderquery": EndpointFaults(resetRate: 1)]))
        do {
            _ = try await client.send(OrderQueryRequest(outTradeNo: "sock-n1"))
            Issue.record("a reset connection answered")
        } catch {
            #expect(error.kind == .transport)
        }
    }
}
