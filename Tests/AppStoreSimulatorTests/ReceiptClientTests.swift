// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import JSON
import Testing

/// The verifyReceipt client against the simulator: every status of Apple's table, each path.
struct ReceiptClientTests {
    static func fault(_ status: Int, limit: Int? = nil, retryable: Bool = true) -> AppStoreFaultPlan {
        AppStoreFaultPlan(endpoints: ["verifyReceipt": .init(receiptStatus: status, receiptRetryable: retryable, limit: limit)])
    }

    static func statusError(_ body: () async throws(ReceiptError) -> Void) async -> ReceiptError? {
        do {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    @Test func status0AnswersOnlyWithATransactionThatIsInTheReceipt() async throws {
        let harness = try AppStoreHarness()
        let first = try harness.buy()
        let second = try harness.buy(product: "course.2")
        try harness.buy("bob")
        let (transaction, receipt) = try await harness.receiptClient().transaction(second.transactionID, inReceipt: second.receipt)
        #expect(transaction.productID == "course.2")
        #expect(receipt.status == .valid && receipt.environment == .production)
        #expect(Set(receipt.inApp.map(\.transactionID)) == [first.transactionID, second.transactionID])
        // Status 0, but the transaction asked for is not in this receipt: no answer.
        let error = await Self.statusError { () throws(ReceiptError) in
            _ = try await harness.receiptClient().transaction("2000000199999999", inReceipt: second.receipt)
        }
        #expect(error?.kind == .transactionNotInReceipt)
    }

    @Test func status21007SendsASandboxReceiptToTheSandbox() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy(environment: .sandbox)
        let (_, receipt) = try await harness.receiptClient().transaction(purchase.transactionID, inReceipt: purchase.receipt)
        #expect(receipt.environment == .sandbox)
        #expect(harness.simulator.counters["receipt status 21007"] == 1)
        let refused = await Self.statusError { () throws(ReceiptError) in
            _ = try await harness.receiptClient(allowsSandbox: false).verify(purchase.receipt)
        }
        #expect(refused?.status == .sandboxReceipt && refused?.isRetryable == false)
    }

    @Test func status21008SendsAProductionReceiptToProduction() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy()
        let receipt = try await harness.receiptClient(firstEnvironment: .sandbox).verify(purchase.receipt)
        #expect(receipt.environment == .production)
        #expect(harness.simulator.counters["receipt status 21008"] == 1)
    }

    @Test func retryableStatusesAreRetriedWithBackoffThenReported() async throws {
        for status in [21002, 21005, 21009, 21100, 21199] {
            let harness = try AppStoreHarness()
            let purchase = try harness.buy()
            harness.simulator.apply(Self.fault(status, limit: 2))
            _ = try await harness.receiptClient().transaction(purchase.transactionID, inReceipt: purchase.receipt)
            #expect(harness.waits.sleeps == [.milliseconds(500), .seconds(1)], "\(status)")
            harness.simulator.apply(Self.fault(status))
            let error = await Self.statusError { () throws(ReceiptError) in
                _ = try await harness.receiptClient().verify(purchase.receipt)
            }
            #expect(error?.kind == .status && error?.status?.rawValue == status && error?.isRetryable == true, "\(status)")
        }
    }

    @Test func finalStatusesEndTheCallWithoutRetrying() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy()
        for status in [21000, 21003, 21004, 21010, 21150, 21999] {
            harness.simulator.apply(Self.fault(status, retryable: false))
            let error = await Self.statusError { () throws(ReceiptError) in
                _ = try await harness.receiptClient().verify(purchase.receipt)
            }
            #expect(error?.kind == .status && error?.status?.rawValue == status && error?.isRetryable == false, "\(status)")
        }
        #expect(harness.waits.sleeps.isEmpty)
        #expect(ReceiptStatus(rawValue: 21150).isInternalDataAccessError)
        #expect(ReceiptStatus(rawValue: 21999).description.contains("unknown"))
    }

    @Test func theSimulatorAnswersEachFinalStatusForWhatCausesItAtApple() async throws {
        let harness = try AppStoreHarness(sharedSecret: "0123456789abcdef0123456789abcdef")
        let purchase = try harness.buy()
        // 21003: a receipt the App Store never issued.
        let forged = Base64.encode(Array("SIMRECEIPT|forged".utf8), .standardPadded)
        var error = await Self.statusError { () throws(ReceiptError) in _ = try await harness.receiptClient().verify(forged) }
        #expect(error?.status == .notAuthenticated)
        // 21004: the wrong shared secret.
        error = await Self.statusError { () throws(ReceiptError) in
            _ = try await harness.receiptClient(sharedSecret: "wrong").verify(purchase.receipt)
        }
        #expect(error?.status == .sharedSecretMismatch)
        // 21000: not a POST.
        let get = harness.simulator.handle(AppStoreSimulatorRequest(method: "GET", path: "/verifyReceipt"))
        #expect((try? JSONValue.parse(get.body))?["status"] == 21000)
        // 21002: not base64 / not JSON.
        let junk = harness.simulator.handle(AppStoreSimulatorRequest(method: "POST", path: "/verifyReceipt", body: Array("{".utf8)))
        #expect((try? JSONValue.parse(junk.body))?["status"] == 21002)
        // The right secret gives latest_receipt_info too.
        let receipt = try await harness.receiptClient(sharedSecret: "0123456789abcdef0123456789abcdef").verify(purchase.receipt)
        #expect(receipt.latestReceiptInfo.map(\.transactionID) == [purchase.transactionID])
        #expect(receipt.latestReceipt == purchase.receipt)
    }

    @Test func status21006IsADecodedReceiptWithAnExpiredSubscription() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy(product: "vip.monthly", type: "Auto-Renewable Subscription")
        harness.simulator.apply(Self.fault(21006))
        let (transaction, receipt) = try await harness.receiptClient().transaction(purchase.transactionID, inReceipt: purchase.receipt)
        #expect(receipt.status == .subscriptionExpired)
        #expect(transaction.expiresDate != nil)
    }

    @Test func fiveHundredsAndTimeoutsAreRetriedLikeTheRetryableStatuses() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy()
        harness.simulator.apply(AppStoreFaultPlan(endpoints: ["verifyReceipt": .init(http5xxRate: 1, limit: 1)]))
        _ = try await harness.receiptClient().verify(purchase.receipt)
        harness.simulator.apply(AppStoreFaultPlan(endpoints: ["verifyReceipt": .init(timeoutRate: 1, limit: 1)]))
        _ = try await harness.receiptClient().verify(purchase.receipt)
        #expect(harness.waits.sleeps.count == 2)
    }

    @Test func aReceiptOfAnotherAppOrThatIsNotBase64IsRefused() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy()
        let other = ReceiptClient(
            configuration: .init(bundleID: "com.example.other", productionURL: AppStoreSimulatorTransport.productionBaseURL + "/verifyReceipt",
                                 sandboxURL: AppStoreSimulatorTransport.sandboxBaseURL + "/verifyReceipt"),
            transport: AppStoreSimulatorTransport(simulator: harness.simulator), clock: harness.waits)
        var error = await Self.statusError { () throws(ReceiptError) in _ = try await other.verify(purchase.receipt) }
        #expect(error?.kind == .bundleMismatch)
        for junk in ["", "not base64!", String(repeating: "A", count: ReceiptClient.maximumReceiptSize + 4)] {
            error = await Self.statusError { () throws(ReceiptError) in _ = try await harness.receiptClient().verify(junk) }
            #expect(error?.kind == .invalidRequest)
        }
    }

    @Test func anInterruptedPurchaseLeavesOnlyTheSecondTransactionWithoutItsToken() async throws {
        let harness = try AppStoreHarness()
        let token = UUID()
        let (failed, completed) = try harness.simulator.interruptedPurchase(SimulatedPurchase(
            user: "alice", productID: "course.swift.basics", appAccountToken: token))
        #expect(failed.appAccountToken == token)
        #expect(completed.appAccountToken == nil)
        #expect(harness.simulator.failedPurchases == [failed])
        let receipt = try await harness.receiptClient().verify(completed.receipt)
        #expect(receipt.inApp.map(\.transactionID) == [completed.transactionID])
        let info = try await harness.apiClient().transactionInfo(completed.transactionID)
        #expect(try harness.verifier.verifyTransaction(info.signedTransactionInfo).appAccountToken == nil)
    }
}
