// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import Observability
import StorageCore
import Testing
import WeChatPay

/// What an operator sees when WeChat's answers never verify: the calls are repeated (an answer
/// damaged on the way deserves another try) and, once every attempt has failed so, an error line
/// naming the keys to check, at most once a minute per API.
struct UpstreamRetryLogTests {
    static let unverified = UpstreamError(kind: .badSignature, advice: .retrySameParameters, mayHaveTakenEffect: true,
                                          shortDescription: "bad_signature", description: "the answer is not verified")

    static func order() -> OrderRecord {
        OrderRecord(outTradeNo: "log-0001", amount: 1, description: "d", clientIP: "203.0.113.7", attach: nil, userID: nil,
                    productID: nil, signType: "RSA", timeExpire: "20260101000000", expiresAt: Date(), createdAt: Date(),
                    parametersDigest: "", apiVersion: "v3")
    }

    @Test func answersThatNeverVerifyAreRepeatedThenLoggedAsAnErrorNamingTheKeysOnceAMinute() async throws {
        let logs = InMemoryLogHandler()
        let metrics = MetricsRegistry()
        let upstream = Upstream(ScriptedUpstream(prepayError: Self.unverified), instruments: OrderInstruments(metrics),
                                logger: Logger(label: "test", level: .debug, handler: logs))
        for _ in 0..<2 {
            await #expect(throws: UpstreamError.self) { _ = try await upstream.prepay(Self.order(), notifyURL: "https://example.com/n") }
        }
        #expect(metrics.counter("wxpay_upstream_calls_total", ["api": "unifiedorder", "outcome": "bad_signature"]) == 6)
        #expect(logs.all.filter { $0.level == .notice }.count == 4, "each repeat says so")
        let errors = logs.all.filter { $0.level == .error }
        #expect(errors.count == 1, "the second failed call within the minute is held back")
        #expect(errors.first?.message.contains("WXPAY_PUBLIC_KEY_FILE") == true)
        #expect(errors.first?.metadata["error"] == "bad_signature")
        #expect(errors.first?.metadata["api"] == "unifiedorder")
    }

    @Test func otherFailuresWriteNoSuchLine() async throws {
        let logs = InMemoryLogHandler()
        let refused = UpstreamError(kind: .business, advice: .fixRequest, mayHaveTakenEffect: false, code: "PARAM_ERROR",
                                    shortDescription: "param_error", description: "refused")
        let upstream = Upstream(ScriptedUpstream(prepayError: refused), instruments: OrderInstruments(MetricsRegistry()),
                                logger: Logger(label: "test", level: .debug, handler: logs))
        await #expect(throws: UpstreamError.self) { _ = try await upstream.prepay(Self.order(), notifyURL: "https://example.com/n") }
        #expect(logs.all.filter { $0.level == .error }.isEmpty)
    }
}
