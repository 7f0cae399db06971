// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import ChildProcessSupport
import Crypto
import Foundation
import HTTP
import JSON
import SimulatorKit
import Synchronization
import Testing

/// The simulator checked by outside references, in scripts/appstore/reference_agreement.py:
/// Python `cryptography` verifying every JWS and its chain by itself, and Apple's own
/// app-store-server-library — its SignedDataVerifier accepting the simulator's transactions,
/// renewal infos and notifications (and refusing the rogue chain), its AppStoreServerAPIClient
/// working against the simulator's Server API over a socket.
///
/// The Python packages come from scripts/test-tools (run by scripts/setup), pinned, in
/// .build/test-tools-venv; without them the test fails and says to run the setup.
struct ReferenceAgreementTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let python = root.appendingPathComponent(".build/test-tools-venv/bin/python")
    static var installed: Bool {
        let marker = root.appendingPathComponent(".build/test-tools-venv/test-tools-requirements.txt")
        return FileManager.default.isExecutableFile(atPath: python.path)
            && ((try? String(contentsOf: marker, encoding: .utf8))?.contains("app-store-server-library==") ?? false)
    }

    @Test(.timeLimit(.minutes(10)))
    func applesLibraryAndCryptographyAgreeWithTheSimulator() async throws {
        try #require(Self.installed, "Apple's app-store-server-library is not in .build/test-tools-venv: run scripts/setup")
        let notifications = Mutex<[[UInt8]]>([])
        let simulator = try AppStoreSimulator(
            configuration: AppStoreSimulatorConfiguration(productionNotificationURL: "in-process://production",
                                                          sandboxNotificationURL: "in-process://sandbox"),
            notificationSender: ClosureNotifySender { body, _ in
                notifications.withLock { $0.append(body) }
                return []
            })
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("appstore-agreement-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        // What the simulator signs: purchases in both environments, a subscription in each, a
        // refund, a test notification; history long enough to page.
        let started = Date()
        var history: [String] = []
        for index in 0..<23 {
            history.append(try simulator.purchase(SimulatedPurchase(
                user: "alice", productID: index % 4 == 0 ? "vip.year" : "course.\(index)", appAccountToken: UUID())).transactionID)
        }
        let subscription = try simulator.purchase(SimulatedPurchase(user: "alice", productID: "vip.monthly",
                                                                    type: "Auto-Renewable Subscription"))
        history.append(subscription.transactionID)
        let sandbox = try simulator.purchase(SimulatedPurchase(user: "tester", productID: "course.1", environment: .sandbox))
        let sandboxSubscription = try simulator.purchase(SimulatedPurchase(
            user: "tester", productID: "vip.monthly", type: "Auto-Renewable Subscription", environment: .sandbox))
        let consumable = try simulator.purchase(SimulatedPurchase(user: "carol", productID: "coins.100", type: "Consumable"))
        // App receipts: StoreKit 1's, as the simulator issues them after each purchase.
        let receipts: [JSONValue] = [
            ["receipt": .string(consumable.receipt), "transaction_ids": [.string(consumable.transactionID)]],
            ["receipt": .string(sandboxSubscription.receipt),
             "transaction_ids": [.string(sandbox.transactionID), .string(sandboxSubscription.transactionID)]],
        ]
        try simulator.refund(transactionID: history[5], reason: 1)
        simulator.sendTestNotification()
        simulator.apply(AppStoreFaultPlan(endpoints: ["transactions": .init(rogueChainRate: 1)]))
        let rogue = simulator.handle(AppStoreSimulatorRequest(
            method: "GET", path: "/inApps/v1/transactions/\(history[0])",
            headers: ["Authorization": "Bearer " + ServerAPICredentials(
                key: simulator.generatedAPIKey!, keyID: simulator.configuration.keyID, issuerID: simulator.configuration.issuerID,
                bundleID: simulator.configuration.bundleID).token(issuedAt: Date())]))
        simulator.apply(AppStoreFaultPlan())
        let rogueJWS = try #require(try JSONValue.parse(rogue.body)["signedTransactionInfo"]?.stringValue)

        let loop = Task { await simulator.run() }
        defer { loop.cancel() }
        let deadline = ContinuousClock.now + .seconds(60)
        while notifications.withLock({ $0.count }) < 29 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let signedPayloads = notifications.withLock { $0 }.compactMap { (try? JSONValue.parse($0))?["signedPayload"]?.stringValue }
        #expect(signedPayloads.count == 29)  // 27 purchases, a refund, a test
        let verifier = try SignedDataVerifier(roots: TrustedRoots([simulator.pki.root], allowUntrustedRoot: true),
                                              bundleID: simulator.configuration.bundleID, appAppleID: simulator.configuration.appAppleID)
        let production = try signedPayloads.filter { try verifier.verifyNotification($0).environment == .production }.count

        var router = HTTPRouter()
        AppStoreSimulatorRoutes.registerAPI(simulator, in: &router)
        let server = HTTPServer(router: router)
        let address = try await server.start()
        let report: JSONValue
        do {
            report = try await Self.runScript(input: Self.input(
                simulator: simulator, directory: directory, base: "http://127.0.0.1:\(address.port)",
                purchases: [history[0], history[7], subscription.transactionID, sandbox.transactionID,
                            sandboxSubscription.transactionID],
                notifications: signedPayloads, rogue: rogueJWS,
                ids: ["production": .string(history[0]), "sandbox": .string(sandbox.transactionID),
                      "history": .array(history.map(JSONValue.string)), "refunded": .string(history[5]),
                      "order": .string(try #require(Self.orderID(simulator, history[3]))), "filter_product": "vip.year",
                      "receipts": .array(receipts), "history_start_ms": .int(Int(started.millisecondsSince1970) - 60_000),
                      "history_end_ms": .int(Int(Date().millisecondsSince1970) + 3_600_000),
                      "notifications_by_environment": ["Production": .int(production), "Sandbox": .int(signedPayloads.count - production)],
                      "consumable": .string(consumable.transactionID),
                      "subscription": .string(subscription.transactionID),
                      "sandbox_subscription": .string(sandboxSubscription.transactionID)]),
                directory: directory)
        } catch {
            await server.shutdown(gracePeriod: .seconds(2))
            throw error
        }
        await server.shutdown(gracePeriod: .seconds(2))
        let checks = try #require(report["checks"]?.arrayValue)
        #expect(checks.count >= 51)
        for check in checks {
            #expect(check["ok"] == true, "\(check["name"]?.stringValue ?? "?"): \(check["detail"]?.stringValue ?? "")")
        }
    }

    /// The invoice order id of a transaction, found through the control API's JSON.
    static func orderID(_ simulator: AppStoreSimulator, _ transactionID: String) -> String? {
        simulator.orderID(of: transactionID)
    }

    static func input(simulator: AppStoreSimulator, directory: URL, base: String, purchases: [String], notifications: [String],
                      rogue: String, ids: [String: JSONValue]) throws -> URL {
        let rootFile = directory.appendingPathComponent("root.der")
        try Data(simulator.pki.root.der).write(to: rootFile)
        let keyFile = directory.appendingPathComponent("AuthKey.p8")
        try Data(simulator.generatedAPIKey!.pkcs8PEM.utf8).write(to: keyFile)
        let verifier = try SignedDataVerifier(roots: TrustedRoots([simulator.pki.root], allowUntrustedRoot: true),
                                              bundleID: simulator.configuration.bundleID, appAppleID: simulator.configuration.appAppleID)
        var transactions: [JSONValue] = []
        var renewals: [JSONValue] = []
        for id in purchases {
            let transaction = try #require(simulator.transaction(id))
            let jws = simulator.pki.sign(payload: transaction.payload)
            transactions.append(["kind": "transaction", "environment": .string(transaction.environment.rawValue),
                                 "jws": .string(jws), "transaction_id": .string(id)])
        }
        var items: [JSONValue] = []
        for payload in notifications {
            let notification = try verifier.verifyNotification(payload)
            items.append(["kind": "notification", "environment": .string(notification.environment.rawValue),
                          "type": .string(notification.notificationType.rawValue), "jws": .string(payload)])
            let data = try verifier.verifiedPayload(payload)["data"]
            if let renewal = data?["signedRenewalInfo"]?.stringValue {
                renewals.append(["kind": "renewal info", "environment": .string(notification.environment.rawValue),
                                 "jws": .string(renewal)])
            }
        }
        let input: JSONValue = [
            "root_der": .string(rootFile.path), "key_p8": .string(keyFile.path), "key_id": .string(simulator.configuration.keyID),
            "issuer_id": .string(simulator.configuration.issuerID), "bundle_id": .string(simulator.configuration.bundleID),
            "app_apple_id": .int(Int(simulator.configuration.appAppleID)), "base_url": .string(base),
            "transactions": .array(transactions), "renewal_infos": .array(renewals), "notifications": .array(items),
            "rogue_transaction": .string(rogue), "ids": .object(ids),
        ]
        let file = directory.appendingPathComponent("input.json")
        try Data(input.bytes()).write(to: file)
        return file
    }

    /// Runs the script with the test tools' Python, off the cooperative pool, bounded in time.
    static func runScript(input: URL, directory: URL) async throws -> JSONValue {
        let output = directory.appendingPathComponent("report.json")
        let errors = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        environment.removeValue(forKey: "REQUESTS_CA_BUNDLE")
        environment["NO_PROXY"] = "127.0.0.1"
        // A ChildProcess (posix_spawn): Foundation's Process.run() can crash the test process on Linux.
        let child = try ChildProcess(python.path, [root.appendingPathComponent("scripts/appstore/reference_agreement.py").path,
                                                   input.path],
                                     environment: environment, output: output.path, errors: errors.path)
        let status = await child.wait(timeout: .seconds(300))
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        guard let report = try? JSONValue.parse(Array(text.utf8)) else {
            let stderr = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw ScriptFailure(description: "reference_agreement.py printed no report (exit \(status)): \(stderr.suffix(2000))")
        }
        return report
    }

    struct ScriptFailure: Error, CustomStringConvertible { let description: String }
}
