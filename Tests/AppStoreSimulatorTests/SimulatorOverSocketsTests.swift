// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreHTTPTransport
import AppStoreSimulator
import Foundation
import HTTP
import JSON
import SimulatorKit
import Synchronization
import Testing

/// The same simulator behind real sockets on 127.0.0.1: the control panel over HTTP, the clients
/// over libcurl, notifications POSTed to a merchant server, a timeout acted out on the wire.
struct AppStoreSimulatorOverSocketsTests {
    @Test func purchasesLookupsReceiptsAndNotificationsTravelOverRealSockets() async throws {
        // Generous timeouts: the suite shares two cores with other builds.
        let http = try HTTPClient(configuration: .init(timeouts: .init(connect: .seconds(20), total: .seconds(60))))
        let received = Mutex<[[UInt8]]>([])
        var merchantRouter = HTTPRouter()
        merchantRouter.add(.post, "/appstore/notifications") { request in
            received.withLock { $0.append(request.body) }
            return HTTPServerResponse(status: 200)
        }
        let merchant = HTTPServer(router: merchantRouter)
        var simulatorServer: HTTPServer?
        do {
            let merchantAddress = try await merchant.start()
            let simulator = try AppStoreSimulator(
                configuration: AppStoreSimulatorConfiguration(
                    productionNotificationURL: "http://127.0.0.1:\(merchantAddress.port)/appstore/notifications"),
                notificationSender: HTTPNotifySender(client: http, contentType: "application/json"))
            var router = HTTPRouter()
            AppStoreSimulatorRoutes.registerAPI(simulator, in: &router)
            AppStoreSimulatorRoutes.registerControl(simulator, in: &router)
            let server = HTTPServer(router: router)
            simulatorServer = server
            let address = try await server.start()
            let base = "http://127.0.0.1:\(address.port)"
            let notifications = Task { await simulator.run() }
            defer { notifications.cancel() }

            // The control panel: a purchase, and the root to trust.
            let bought = try await http.execute(HTTPClientRequest(
                method: .post, url: base + "/appstore-simulator/purchases", headers: ["Content-Type": "application/json"],
                body: Array(#"{"user":"alice","productId":"course.swift.basics","appAccountToken":"7d3a2f9e-3c1b-4f5e-9a8d-2b6c4e1f0a9b"}"#.utf8)))
            #expect(bought.status == 200)
            let purchase = try JSONDecoder().decode(PurchaseReceipt.self, from: Data(bought.body))
            let root = try await http.execute(HTTPClientRequest(url: base + "/appstore-simulator/root"))
            let verifier = try SignedDataVerifier(
                roots: TrustedRoots.load(root.body, allowUntrustedRoot: true), bundleID: simulator.configuration.bundleID,
                environment: .production, appAppleID: simulator.configuration.appAppleID)

            // 30 s: a loaded machine (the whole suite beside this test) has kept an answer over 15 s;
            // the faulted request below is held 45 s, so it still times out.
            let transport = AppStoreHTTPTransport(client: http, timeouts: .init(connect: .seconds(20), total: .seconds(30)))
            let api = AppStoreServerAPIClient(
                credentials: ServerAPICredentials(key: simulator.generatedAPIKey!, keyID: simulator.configuration.keyID,
                                                  issuerID: simulator.configuration.issuerID, bundleID: simulator.configuration.bundleID),
                configuration: .init(productionBaseURL: base, sandboxBaseURL: base + "/sandbox",
                                     retry: .init(initialBackoff: .milliseconds(10))),
                transport: transport, clock: SystemAppStoreClock())
            let info = try await api.transactionInfo(purchase.transactionID)
            let transaction = try verifier.verifyTransaction(info.signedTransactionInfo)
            #expect(transaction.appAccountToken == UUID(uuidString: "7d3a2f9e-3c1b-4f5e-9a8d-2b6c4e1f0a9b"))

            // A request the simulator never answers: the client's timeout, then a retry that works.
            simulator.apply(AppStoreFaultPlan(endpoints: ["history": .init(timeoutRate: 1, timeoutSeconds: 45, limit: 1)]))
            let page = try await api.transactionHistory(purchase.transactionID)
            #expect(page.signedTransactions.count == 1)
            #expect(simulator.counters["fault timeout"] == 1)

            let receipts = ReceiptClient(
                configuration: .init(bundleID: simulator.configuration.bundleID, productionURL: base + "/verifyReceipt",
                                     sandboxURL: base + "/sandbox/verifyReceipt"),
                transport: transport, clock: SystemAppStoreClock())
            let found = try await receipts.transaction(purchase.transactionID, inReceipt: purchase.receipt)
            #expect(found.transaction.productID == "course.swift.basics")

            let deadline = ContinuousClock.now + .seconds(30)
            while received.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            let body = try #require(received.withLock { $0.first })
            let signedPayload = try #require(try JSONValue.parse(body)["signedPayload"]?.stringValue)
            #expect(try verifier.verifyNotification(signedPayload).transaction?.transactionID == purchase.transactionID)
        } catch {
            Issue.record("over sockets: \(error)")
        }
        if let simulatorServer { await simulatorServer.shutdown(gracePeriod: .seconds(2)) }
        await merchant.shutdown(gracePeriod: .seconds(2))
        await http.shutdown()
    }
}
