// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import Testing

/// The Server API client against the simulator, in process: every endpoint, the sandbox
/// fallback, and what 5xx, 429, timeouts, 401 and a rogue chain do.
struct ServerAPIClientTests {
    @Test func transactionInfoReturnsTheSignedTransactionTheVerifierAccepts() async throws {
        let harness = try AppStoreHarness()
        let token = UUID()
        let purchase = try harness.buy(token: token)
        let info = try await harness.apiClient().transactionInfo(purchase.transactionID)
        #expect(info.environment == .production)
        let transaction = try harness.verifier.verifyTransaction(info.signedTransactionInfo)
        #expect(transaction.transactionID == purchase.transactionID)
        #expect(transaction.appAccountToken == token)
        #expect(transaction.bundleID == AppStoreHarness.bundleID)
    }

    @Test func aSandboxTransactionIsFoundAfterProductionSaysTransactionIdNotFound() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy(environment: .sandbox)
        let info = try await harness.apiClient().transactionInfo(purchase.transactionID)
        #expect(info.environment == .sandbox)
        #expect(try harness.verifier.verifyTransaction(info.signedTransactionInfo).environment == .sandbox)
        #expect(harness.simulator.counters["production transactions"] == 1)
        #expect(harness.simulator.counters["sandbox transactions"] == 1)

        await #expect(throws: AppStoreServerAPIError.self) {
            try await harness.apiClient(sandboxFallback: false).transactionInfo(purchase.transactionID)
        }
        do {
            _ = try await harness.apiClient().transactionInfo("2000000999999999")
            Issue.record("an unknown transaction was found")
        } catch {
            #expect(error.kind == .notFound)
            #expect(error.errorCode == 4_040_010)
        }
    }

    @Test func historyPagesThroughTheCustomersTransactionsTwentyAtATime() async throws {
        let harness = try AppStoreHarness()
        var mine: [String] = []
        for index in 0..<45 {
            mine.append(try harness.buy("alice", product: index % 3 == 0 ? "vip.year" : "course.\(index)").transactionID)
            if index % 10 == 0 { try harness.buy("bob") }
        }
        let client = harness.apiClient()
        var seen: [String] = []
        var page = try await client.transactionHistory(mine[7])
        var pages = 1
        seen += try page.signedTransactions.map { try harness.verifier.verifyTransaction($0).transactionID }
        while page.hasMore {
            #expect(page.signedTransactions.count == 20)
            page = try await client.transactionHistory(mine[7], query: .init(revision: page.revision), environment: page.environment)
            seen += try page.signedTransactions.map { try harness.verifier.verifyTransaction($0).transactionID }
            pages += 1
        }
        #expect(pages == 3)
        #expect(seen == mine)
        #expect(page.bundleID == AppStoreHarness.bundleID && page.appAppleID == AppStoreHarness.appAppleID)

        let filtered = try await client.transactionHistory(mine[0], query: .init(productIDs: ["vip.year"], sort: .descending))
        let products = try filtered.signedTransactions.map { try harness.verifier.verifyTransaction($0) }
        #expect(products.count == 15 && products.allSatisfy { $0.productID == "vip.year" })
        #expect(products.first?.transactionID == mine[42])

        try harness.simulator.refund(transactionID: mine[3])
        let revoked = try await client.transactionHistory(mine[0], query: .init(revoked: true))
        #expect(try revoked.signedTransactions.map { try harness.verifier.verifyTransaction($0).transactionID } == [mine[3]])
        await #expect(throws: AppStoreServerAPIError.self) {
            try await client.transactionHistory(mine[0], query: .init(revision: "not-a-revision"))
        }
    }

    @Test func refundHistoryListsTheRefundedTransactionsWithTheirRevocation() async throws {
        let harness = try AppStoreHarness()
        let first = try harness.buy()
        let second = try harness.buy(product: "course.2")
        try harness.buy(product: "course.3")
        try harness.simulator.refund(transactionID: first.transactionID, reason: 1)
        try harness.simulator.revoke(transactionID: second.transactionID)
        let page = try await harness.apiClient().refundHistory(first.transactionID)
        let refunded = try page.signedTransactions.map { try harness.verifier.verifyTransaction($0) }
        #expect(refunded.map(\.transactionID) == [first.transactionID, second.transactionID])
        #expect(refunded.allSatisfy { $0.revocationDate != nil })
        #expect(refunded.first?.revocationReason == 1)
        #expect(!page.hasMore)
    }

    @Test func lookUpOrderFindsTheInvoiceInProductionOnly() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy()
        let client = harness.apiClient()
        let found = try await client.lookUpOrder(purchase.orderID)
        #expect(found.isValid)
        #expect(try found.signedTransactions.map { try harness.verifier.verifyTransaction($0).transactionID } == [purchase.transactionID])
        let missing = try await client.lookUpOrder("ZZZZZZZZZZ")
        #expect(!missing.isValid && missing.signedTransactions.isEmpty)
        do {
            _ = try await client.lookUpOrder(purchase.orderID, environment: .sandbox)
            Issue.record("the sandbox looked up an order")
        } catch {
            #expect(error.kind == .unsupportedInSandbox)
        }
    }

    @Test func fiveHundredsAreRetriedWithBackoffAndThenReported() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy()
        harness.simulator.apply(AppStoreFaultPlan(endpoints: ["transactions": .init(http5xxRate: 1, limit: 2)]))
        _ = try await harness.apiClient().transactionInfo(purchase.transactionID)
        #expect(harness.waits.sleeps == [.milliseconds(500), .seconds(1)])

        harness.simulator.apply(AppStoreFaultPlan(endpoints: ["*": .init(http5xxRate: 1)]))
        do {
            _ = try await harness.apiClient(retry: .init(maximumAttempts: 4)).transactionInfo(purchase.transactionID)
            Issue.record("a 5xx became an answer")
        } catch {
            #expect(error.kind == .serverError)
            #expect([500, 503].contains(error.status ?? 0))
        }
    }

    @Test func aRateLimitIsWaitedOutForAsLongAsRetryAfterSays() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy()
        harness.simulator.apply(AppStoreFaultPlan(endpoints: ["transactions": .init(rateLimitRate: 1, retryAfterSeconds: 7, limit: 1)]))
        _ = try await harness.apiClient().transactionInfo(purchase.transactionID)
        #expect(harness.waits.sleeps == [.seconds(7)])

        harness.simulator.apply(AppStoreFaultPlan(endpoints: ["transactions": .init(rateLimitRate: 1, retryAfterSeconds: 120)]))
        do {
            _ = try await harness.apiClient().transactionInfo(purchase.transactionID)
            Issue.record("a rate limit became an answer")
        } catch {
            #expect(error.kind == .rateLimited)
            #expect(error.retryAfter == .seconds(120))
            #expect(error.errorCode == 4_290_000)
        }
        #expect(AppStoreRetryPolicy.retryAfter("1764460801000", now: Date(timeIntervalSince1970: 1_764_460_800)) == .seconds(1))
    }

    @Test func aTimeoutIsRetriedLikeAnyNetworkFailure() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy()
        harness.simulator.apply(AppStoreFaultPlan(endpoints: ["history": .init(timeoutRate: 1, limit: 1)]))
        let page = try await harness.apiClient().transactionHistory(purchase.transactionID)
        #expect(page.signedTransactions.count == 1)
        #expect(harness.waits.sleeps == [.milliseconds(500)])
        harness.simulator.apply(AppStoreFaultPlan(endpoints: ["history": .init(timeoutRate: 1)]))
        do {
            _ = try await harness.apiClient().transactionHistory(purchase.transactionID)
            Issue.record("a timeout became an answer")
        } catch {
            #expect(error.kind == .transport)
        }
    }

    @Test func aWrongKeyIssuerOrBundleIs401WithAnErrorThatSaysWhy() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy()
        var wrongKey = harness.credentials
        wrongKey.key = ES256PrivateKey.generate()
        var wrongIssuer = harness.credentials
        wrongIssuer.issuerID = "00000000-0000-0000-0000-000000000000"
        var wrongBundle = harness.credentials
        wrongBundle.bundleID = "com.example.other"
        for credentials in [wrongKey, wrongIssuer, wrongBundle] {
            do {
                _ = try await harness.apiClient(credentials: credentials).transactionInfo(purchase.transactionID)
                Issue.record("a bad token was accepted")
            } catch {
                #expect(error.kind == .unauthorized)
                #expect("\(error)".contains("key, issuer or bundle id wrong, or the app is not yet approved"))
                #expect(!"\(error)".contains("eyJ"))
            }
        }
        let counters = harness.simulator.counters
        #expect(counters["unauthorized signature"] == 1 && counters["unauthorized iss"] == 1 && counters["unauthorized bid"] == 1)
        #expect(harness.waits.sleeps.isEmpty)  // a 401 is never retried
    }

    @Test func anAnswerSignedByARogueChainIsRefusedByTheVerifier() async throws {
        let harness = try AppStoreHarness()
        let purchase = try harness.buy()
        harness.simulator.apply(AppStoreFaultPlan(endpoints: ["transactions": .init(rogueChainRate: 1)]))
        let info = try await harness.apiClient().transactionInfo(purchase.transactionID)
        #expect(throws: SignedDataError.self) { try harness.verifier.verifyTransaction(info.signedTransactionInfo) }
        do {
            _ = try harness.verifier.verifyTransaction(info.signedTransactionInfo)
        } catch {
            #expect(error.rule == .invalidChain)
        }
    }

    @Test func anIdThatCouldChangeThePathIsRefusedBeforeSending() async throws {
        let harness = try AppStoreHarness()
        for id in ["", "../v1/lookup/X", "1?x=1", "1/2", String(repeating: "1", count: 65)] {
            do {
                _ = try await harness.apiClient().transactionInfo(id)
                Issue.record("\(id) was sent")
            } catch {
                #expect(error.kind == .invalidRequest)
            }
        }
        #expect(harness.simulator.counters.keys.allSatisfy { !$0.contains("transactions") })
    }
}
