// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import Synchronization
import WeChatPay

/// The order flows' calls to WeChat Pay, whatever API version answers them (`WeChatPayUpstream`,
/// the seam): retries that repeat the identical request, single-flight per order, the pacing of
/// queries, and metrics by API and outcome (the API named by the version that speaks the call:
/// `UpstreamCall.metricLabel`).
final class Upstream: Sendable {
    private let api: any WeChatPayUpstream
    private let instruments: OrderInstruments
    private let logger: Logger
    /// One prepay per order at a time: N identical concurrent creates make one upstream call.
    let prepays = SingleFlight<String, Result<OrderRecord, APIError>>()
    /// One order query per order at a time, shared by every waiting client, the recheck and the sweeps.
    let queries = SingleFlight<String, OrderRecord?>()
    /// The polls of waiting queries, at most 64 at a time (see `BoundedWork`).
    let polls = BoundedWork(width: 64)
    /// At most one error line a minute per API for answers that keep failing their signature check.
    private let unverifiedLog = LogThrottle(interval: .seconds(60))
    /// When each order's last poll was scheduled and its last query ended, so that WeChat hears
    /// about an order at most once per poll interval from this process (see `isPaced`).
    private let queryTimes = Mutex<[String: QueryTimes]>([:])

    private struct QueryTimes {
        var scheduled: ContinuousClock.Instant?
        var ended: ContinuousClock.Instant?
        var latest: ContinuousClock.Instant? { [scheduled, ended].compactMap { $0 }.max() }
    }

    /// Attempts for a call whose failure says "same request again" (SYSTEMERROR, timeouts, 5xx).
    static let attempts = 3
    static let backoff: [Duration] = [.milliseconds(200), .milliseconds(600)]

    init(_ api: any WeChatPayUpstream, instruments: OrderInstruments, logger: Logger) {
        self.api = api
        self.instruments = instruments
        self.logger = logger
    }

    /// The order's prepay_id (v2 unifiedorder), for the order exactly as stored.
    func prepay(_ order: OrderRecord, notifyURL: String) async throws(UpstreamError) -> StoredPrepay {
        try await withRetries(api: label(.prepay, order)) { () throws(UpstreamError) in
            try await self.api.prepay(order, notifyURL: notifyURL)
        }
    }

    /// The app's payment parameters for a prepay_id (computed, not a call).
    func appPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> AppPayRequest {
        try api.appPayment(for: order, prepayID: prepayID, issuedAt: issuedAt)
    }

    /// A JSAPI page's payment parameters for a prepay_id (computed, not a call).
    func jsapiPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> JSAPIPayRequest {
        try api.jsapiPayment(for: order, prepayID: prepayID, issuedAt: issuedAt)
    }

    /// One query of the order's state (not repeated: the next poll or sweep is the retry). When it
    /// ends, answered or not, is remembered for the pacing of polls and sweeps.
    func queryOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamTrade {
        defer {
            let now = ContinuousClock.now
            queryTimes.withLock { times in
                times[order.outTradeNo, default: QueryTimes()].ended = now
                Self.forgetOld(&times, now: now)
            }
        }
        return try await withRetries(api: label(.queryOrder, order), attempts: 1) { () throws(UpstreamError) in
            try await self.api.queryOrder(order)
        }
    }

    /// Whether an order query about `key` ended less than `interval` seconds ago: a poll or a sweep
    /// then has its answer already (settled in the store) and asks nothing. Checked inside the
    /// per-order single-flight (`queries`), where calls about one order run one after another, so
    /// two paced calls are never closer than `interval` at WeChat: the second starts after the
    /// first ended, which was after the first reached WeChat.
    func isPaced(_ key: String, interval: Double) -> Bool {
        let now = ContinuousClock.now
        return queryTimes.withLock { $0[key]?.ended.map { now - $0 < .seconds(interval) } ?? false }
    }

    func closeOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamClosing {
        try await withRetries(api: label(.closeOrder, order)) { () throws(UpstreamError) in try await self.api.closeOrder(order) }
    }

    /// The refund exactly as recorded; `failed` sees every failed attempt (whether any of them may
    /// have reached WeChat decides what a refusal means).
    func refund(_ refund: RefundRecord, order: OrderRecord, failed: (UpstreamError) -> Void)
        async throws(UpstreamError) -> UpstreamRefundAcceptance
    {
        try await withRetries(api: label(.refund, order), failed: failed) { () throws(UpstreamError) in
            try await self.api.refund(refund, order: order)
        }
    }

    /// One refund query by number (a read: the sweep asks again next time).
    func queryRefund(_ outRefundNo: String, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundReport {
        try await withRetries(api: label(.queryRefund, order), attempts: 1) { () throws(UpstreamError) in
            try await self.api.queryRefund(outRefundNo, order: order)
        }
    }

    /// A Beijing day's bill (repeated like any idempotent read).
    func bill(day: String) async throws(UpstreamError) -> [BillRow] {
        try await withRetries(api: label(.bill, nil)) { () throws(UpstreamError) in try await self.api.bill(day: day) }
    }

    /// The API version that speaks `call` about `order` (the seam's one rule, `VersionedUpstream`):
    /// a refund's notify URL is that version's route.
    func apiVersion(of call: UpstreamCall, for order: OrderRecord?) -> WeChatPayAPIVersion {
        api.apiVersion(of: call, for: order)
    }

    /// Why `call` about `order` cannot be made as configured (see `WeChatPayUpstream.unconfigured`).
    func unconfigured(_ call: UpstreamCall, for order: OrderRecord) -> UpstreamError? {
        api.unconfigured(call, for: order)
    }

    private func label(_ call: UpstreamCall, _ order: OrderRecord?) -> String {
        call.metricLabel(api.apiVersion(of: call, for: order))
    }

    /// Starts `query` for `key` unless a poll was scheduled or a query ended within `interval`
    /// seconds, or one is running; returns how long until the next poll is due.
    func scheduleQuery(_ key: String, interval: Double, _ query: @escaping @Sendable () async -> Void) -> Duration {
        let period = Duration.seconds(interval)
        let now = ContinuousClock.now
        let (start, latest) = queryTimes.withLock { times -> (Bool, ContinuousClock.Instant) in
            if let latest = times[key]?.latest, now - latest < period { return (false, latest) }
            if queries.isRunning(key) { return (false, now) }
            times[key, default: QueryTimes()].scheduled = now
            Self.forgetOld(&times, now: now)
            return (true, now)
        }
        if start { polls.submit(query) }
        return max(.milliseconds(1), period - (now - latest))
    }

    /// Keeps the pacing table small: past 50,000 orders, those not asked about for a minute (far
    /// more than any poll interval) are forgotten.
    private static func forgetOld(_ times: inout [String: QueryTimes], now: ContinuousClock.Instant) {
        guard times.count > 50_000 else { return }
        times = times.filter { ($0.value.latest ?? now) > now - .seconds(60) }
    }

    /// Calls `operation`, repeating it (the identical request) while WeChat's answer says so, and
    /// records each call's outcome and latency. `failed` sees every failed attempt, the last included
    /// (a refund needs to know whether any of them may have reached WeChat).
    func withRetries<T>(api: String, attempts: Int = Upstream.attempts,
                        failed: (UpstreamError) -> Void = { _ in },
                        _ operation: () async throws(UpstreamError) -> T) async throws(UpstreamError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            let started = ContinuousClock.now
            do {
                let value = try await operation()
                record(api: api, outcome: "success", since: started)
                return value
            } catch {
                record(api: api, outcome: error.shortDescription, since: started)
                failed(error)
                guard attempt < attempts, Self.shouldRepeat(error) else {
                    if error.kind == .badSignature { logUnverified(api: api, error) }
                    throw error
                }
                logger.notice("repeating an upstream call with identical parameters",
                              ["api": api, "attempt": String(attempt), "error": error.shortDescription])
                try? await Task.sleep(for: Self.backoff[min(attempt - 1, Self.backoff.count - 1)])
            }
        }
    }

    /// Every attempt's answer failed its signature check. Repeating the request is right for an answer
    /// damaged on the way, but when the key the gateway verifies with is not the one WeChat signs
    /// with, every call fails so until an operator changes it, while clients only see 503: this says
    /// so, where an operator looks.
    private func logUnverified(api: String, _ error: UpstreamError) {
        guard let suppressed = unverifiedLog.admit(api) else { return }
        logger.error(
            "WeChat Pay's answers fail their signature check: the key the gateway verifies them with is not the one "
                + "WeChat signs with (v2: WXPAY_API_KEY; v3: WXPAY_PUBLIC_KEY_FILE with WXPAY_PUBLIC_KEY_ID, or the "
                + "platform certificates), or something on the way alters them",
            ["api": api, "error": error.shortDescription, "suppressed": String(suppressed)])
    }

    /// Whether sending the identical request again is right: WeChat asks for it (SYSTEMERROR,
    /// BIZERR_NEED_RETRY) or the answer never arrived intact (transport, 5xx, malformed, bad sign).
    static func shouldRepeat(_ error: UpstreamError) -> Bool {
        if error.advice == .retrySameParameters { return true }
        switch error.kind {
        case .transport, .malformedResponse, .badSignature: return true
        // 5xx is repeated by its advice above; a 4xx is WeChat refusing the request (a refused
        // client certificate, say), which the same request meets again.
        default: return false
        }
    }

    private func record(api: String, outcome: String, since started: ContinuousClock.Instant) {
        instruments.upstreamCalls.labelled(api, outcome).increment()
        instruments.upstreamDuration.labelled(api).record(ContinuousClock.now - started)
    }
}
