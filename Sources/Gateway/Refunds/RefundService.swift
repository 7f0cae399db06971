// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import Synchronization
import WeChatPay

/// Refunds as a product flow, with the promises payments have: a refund is never lost, never sent
/// twice, never more than was paid.
///
/// - **Request** (`request`): the amount is reserved in the transaction that records the refund
///   (`RefundStore.createRefund`), so concurrent requests can never together exceed the order;
///   then `/secapi/pay/refund` over mutual TLS, retried with the same `out_refund_no` and the same
///   parameters while WeChat's answer says so. The JSON route and the support console both call it.
/// - **Result**: the refund notify (`handleNotify`) or refundquery (the reconciler's sweeps,
///   RefundService+Recovery.swift), both through the one door for refunds (`settle`): one
///   conditional transition plus its `refund.succeeded` / `refund.failed` outbox event.
///
/// ```swift
/// let refunds = GatewayServices(context).refunds
/// let answer = try await refunds.request(RefundInput(amount: 300, reason: "bought by mistake"), outTradeNo: "T1")
/// ```
public final class RefundService: Sendable {
    /// GATEWAY_REFUND_QUERY_AFTER and the other refund settings.
    public let configuration: GatewayConfiguration.Refunds
    /// How refunds reach WeChat (`.off`: they answer 503).
    public let mode: GatewayConfiguration.RefundMode
    let context: GatewayContext
    /// The refunds (the same database as the orders).
    public var store: any RefundStore { context.store }
    /// One refund call to WeChat per refund at a time: a request's attempts and a sweep's resend
    /// never overlap in this process.
    let sends = SingleFlight<String, SendOutcome>()
    /// Refused refund notifies, counted and logged (anyone can send them).
    let refusals: NotifyRefusals
    /// Verified refund notifies contradicting a finished refund are logged at most once a second.
    let conflictingNotifyLog = LogThrottle()
    let instruments: RefundInstruments

    /// Made by `GatewayServices`, the composition root.
    /// - Parameter mode: how refunds reach WeChat (`GatewayConfiguration.refundMode`).
    init(context: GatewayContext, mode: GatewayConfiguration.RefundMode) {
        configuration = context.configuration.refunds
        self.mode = mode
        self.context = context
        instruments = RefundInstruments(context.metrics)
        refusals = NotifyRefusals(counts: instruments.notifyRejected, message: "refund notify rejected", logger: context.logger)
    }

    /// The `notify_url` sent with new refunds (`CallbackURLs`). A refund keeps the one it was sent with.

    /// Whether refunds can be sent at all.
    /// With API v3 configured refunds are on without a certificate: v3's refunds are signed
    /// requests, and a v2 order's refund goes through v3 while v2 cannot send it (no
    /// certificate, or no v2 key: `VersionedUpstream`).
    public var isConfigured: Bool { mode != .off || context.v3 != nil }

    var logger: Logger { context.logger }
    func now() -> Date { context.now() }

    // MARK: - Request

    /// What `request` answers: the refund and whether this call recorded it (201) or found it (200).
    public struct Requested: Sendable {
        public var created: Bool
        let view: RefundView
        public var outRefundNo: String { view.outRefundNo }
        /// `PROCESSING`, `SUCCESS`, `CHANGE` or `REFUNDCLOSE`.
        public var state: String { view.state }
        public var json: [UInt8] { view.json }
    }

    /// Records the refund with its amount reserved and asks WeChat for it; an identical replay
    /// answers the refund as it stands. Refusals decided locally never reach WeChat.
    ///
    /// After WeChat accepted, or after repeated failures that leave the outcome unknown, the refund
    /// is PROCESSING (the notify or the reconciler finishes it). When WeChat refused it outright
    /// (a documented error, a refused certificate) and no attempt may have reached it, the refund
    /// ends REFUNDCLOSE at once with `failure_reason`, and its amount is free again.
    public func request(_ input: RefundInput, outTradeNo: String) async throws(APIError) -> Requested {
        // Apple refunds App Store purchases itself (the customer asks Apple); its notification
        // moves the order to REFUND. True whether or not WeChat refunds are configured.
        func refused(_ outcome: String, _ error: APIError) -> APIError {
            instruments.requestRefused.labelled(outcome).increment()
            return error
        }
        // A failed read decides nothing here: the store's transaction below asks again.
        let order: OrderRecord?
        let orderKnownMissing: Bool
        do {
            order = try await context.store.order(outTradeNo)
            orderKnownMissing = order == nil
        } catch {
            order = nil
            orderKnownMissing = false
        }
        if let order, order.channel == .apple {
            throw refused("not_refundable", .orderNotRefundableByGateway())
        }
        guard isConfigured else { throw .refundsNotConfigured }
        // An order nobody has is 404 without a write: with the disk full, a write fails (500) and
        // would tell the client something went wrong with a refund of an order that never existed.
        if orderKnownMissing { throw refused("order_not_found", .orderNotFound) }
        // A repeat of a refund already recorded is answered (or refused as a conflict) by the store
        // as usual: only a new refund needs WeChat, so only it is refused here.
        var recorded: RefundRecord?
        if let number = input.outRefundNo { recorded = (try? await store.refund(number)) ?? nil }
        if recorded == nil, let order, let problem = context.upstream.unconfigured(.refund, for: order) {
            instruments.requestRefused.labelled("api_version_not_configured").increment()
            throw .apiVersionNotConfigured(problem)
        }
        let at = now()
        let outRefundNo = input.outRefundNo ?? Self.generateOutRefundNo(at: at)
        let result = try await context.storage { () throws(StorageError) in
            try await self.store.createRefund(
                NewRefund(outRefundNo: outRefundNo, outTradeNo: outTradeNo, amount: input.amount, reason: input.reason,
                          notifyURL: self.notifyURL(for: order), parametersDigest: input.parametersDigest, createdAt: at),
                maximumPerOrder: self.configuration.maximumPerOrder,
                event: NewOrderEvent(kind: "refund_requested", detail: "\(outRefundNo): \(input.amount) fen", at: at))
        }
        switch result {
        case .orderNotFound:
            throw refused("order_not_found", .orderNotFound)
        case .conflict:
            throw refused("conflict", .outRefundNoConflict)
        case .orderNotRefundable(let state):
            throw refused("not_refundable", .orderNotRefundable(state.rawValue))
        case .limitReached(let count):
            throw refused("limit_reached", .refundLimitReached(count))
        case .exceedsPaid(let refundable):
            throw refused("exceeds_paid", .refundExceedsPaid(refundable: refundable))
        case .existing(let refund):
            instruments.replayed.increment()
            return Requested(created: false, view: RefundView(refund))
        case .created(let refund):
            instruments.created.increment()
            CrashPoint.hit(CrashPoint.refundRecorded)
            // Cancelled (the gateway is stopping and answers what it can): the refund is recorded
            // and its send goes on or is left to the reconciler, so the answer is the refund as it
            // stands, PROCESSING, not a "shutting down" the client would read as "nothing happened".
            guard let sent = await sendUnlessCancelled(refund, source: "request") else {
                return Requested(created: true, view: RefundView(refund))
            }
            return Requested(created: true, view: RefundView(sent.refund))
        }
    }

    /// `GET /v1/refunds/{out_refund_no}[?wait=N]`: the refund, waiting up to `wait` seconds while it
    /// is PROCESSING for its result (the notify or a sweep moving it). Reads the store only (every
    /// 100 ms, bounded by the wait); WeChat is asked by the reconciler, never by a waiting client.
    public func refund(_ outRefundNo: String, wait: Double = 0) async throws(APIError) -> [UInt8] {
        guard RefundInput.isValidOutRefundNo(outRefundNo) else { throw .refundNotFound }
        let deadline = ContinuousClock.now + .seconds(wait)
        // A held refund wait counts among the held waits (`wxpay_waits_open`, how long it lasted
        // and how it ended), as an order's does: each holds a connection and memory alike.
        var heldSince: ContinuousClock.Instant?
        var ended = context.instruments.waitRanOut
        defer {
            if let heldSince {
                context.instruments.waitsOpen.add(-1)
                ended.record(ContinuousClock.now - heldSince)
            }
        }
        while true {
            guard let refund = try await context.storage({ () throws(StorageError) in try await self.store.refund(outRefundNo) })
            else { throw .refundNotFound }
            let now = ContinuousClock.now
            if refund.state != .processing || now >= deadline || Task.isCancelled {
                if refund.state != .processing {
                    ended = context.instruments.waitEndedFinal
                } else if now < deadline {
                    ended = context.instruments.waitCancelled
                }
                return RefundView(refund).json
            }
            if heldSince == nil {
                heldSince = now
                context.instruments.waitsOpen.add(1)
            }
            try? await Task.sleep(for: min(.milliseconds(100), deadline - ContinuousClock.now))
        }
    }

    /// The `notify_url` a new refund of `order` is sent with: the route of the API version that will
    /// send it (a v2 order's refund sent through v3 hears back on v3's route).
    private func notifyURL(for order: OrderRecord?) -> String {
        let version = order.map { context.upstream.apiVersion(of: .refund, for: $0) } ?? .v2
        return context.callbacks.refund(for: version.rawValue)
    }

    /// A fresh out_refund_no: `R`, the Beijing date and time, and 12 random characters (27 in all).
    public static func generateOutRefundNo(at date: Date) -> String {
        "R" + BeijingTime.format(date) + String(RandomNonceSource().nextNonce().prefix(12))
    }

    // MARK: - Sending

    /// What one send (with its retries) came to.
    enum SendOutcome: Sendable {
        /// WeChat accepted it (its `refund_id` is recorded); the result follows later.
        case accepted(RefundRecord)
        /// WeChat refused it before accepting it, and no attempt may have reached it: REFUNDCLOSE.
        case refused(RefundRecord)
        /// No answer to rely on: still PROCESSING; the reconciler asks (and, if WeChat never got
        /// it, sends it again under the same number with the same parameters).
        case pending(RefundRecord)

        var refund: RefundRecord {
            switch self {
            case .accepted(let refund), .refused(let refund), .pending(let refund): refund
            }
        }
    }

    /// `/secapi/pay/refund` with exactly the recorded parameters, one call per refund at a time.
    func send(_ refund: RefundRecord, source: String) async -> SendOutcome {
        await sends.run(refund.outRefundNo) { [self] in await self.sendNow(refund, source: source) }
    }

    /// `send`, but nil at once when the caller is cancelled while it waits; the send goes on.
    func sendUnlessCancelled(_ refund: RefundRecord, source: String) async -> SendOutcome? {
        await sends.runUnlessCancelled(refund.outRefundNo) { [self] in await self.sendNow(refund, source: source) }
    }

    private func sendNow(_ refund: RefundRecord, source: String) async -> SendOutcome {
        let number = refund.outRefundNo
        guard let order = try? await context.store.order(refund.outTradeNo) else { return .pending(refund) }
        var reached = false
        do {
            let response = try await context.upstream.refund(refund, order: order, failed: { error in
                if error.mayHaveTakenEffect { reached = true }
            })
            guard response.outRefundNo == number, response.outTradeNo == refund.outTradeNo, response.amount == refund.amount
            else {
                logger.error("WeChat's refund answer names another refund; left PROCESSING", ["out_refund_no": number])
                _ = try? await context.store.appendEvent(refund.outTradeNo, kind: "refund_failed",
                                                         detail: "\(number): the answer names another refund or amount", at: now())
                return .pending(refund)
            }
            let at = now()
            let accepted = try? await store.recordRefundAccepted(
                number, refundID: response.refundID, at: at,
                event: NewOrderEvent(kind: "refund_accepted", detail: "\(number): accepted by WeChat, refund_id \(response.refundID)", at: at))
            return .accepted(accepted ?? refund)
        } catch {
            let label = Self.failureLabel(error)
            if !reached && Self.isRefusal(error) {
                instruments.refusedByWeChat.labelled(label).increment()
                logger.warning("WeChat refused a refund", ["out_refund_no": number, "reason": label])
                let closed = try? await settle(number, to: .refundClose, from: [.processing], source: "\(source): WeChat refused (\(label))",
                                               failureReason: label)
                return .refused(closed?.refund ?? refund)
            }
            _ = try? await context.store.appendEvent(
                refund.outTradeNo, kind: "refund_failed",
                detail: "\(number): \(source): refund \(error.shortDescription); PROCESSING, the reconciler will ask", at: now())
            return .pending(refund)
        }
    }

    /// Whether WeChat's answer rejects the request for good: it cannot have refunded anything and
    /// resending it unchanged would fail again (a documented error code, a 4xx such as a refused
    /// client certificate). Unknown codes and "may have taken effect" answers are left to refundquery.
    static func isRefusal(_ error: UpstreamError) -> Bool {
        !error.mayHaveTakenEffect && !error.isRetryable && error.advice != .query
    }

    /// `failure_reason`: WeChat's err_code, or the kind of refusal.
    static func failureLabel(_ error: UpstreamError) -> String {
        if let code = error.codeLabel { return code }
        if let status = error.httpStatus { return "HTTP_\(status)" }
        if error.kind == .protocolFailure { return "RETURN_FAIL" }
        return error.shortDescription.uppercased()
    }

    // MARK: - The one door for refunds

    /// Moves the refund to `state` through `RefundStore.transitionRefund`, with the `refund.*`
    /// outbox event made from the changed refund in the same transaction. Only the caller whose
    /// transition changed it announces it.
    @discardableResult
    func settle(_ outRefundNo: String, to state: RefundState, from allowed: Set<RefundState> = [.processing, .change],
                source: String, refundID: String? = nil, succeededAt: Date? = nil, failureReason: String? = nil,
                expectedOutTradeNo: String? = nil, expectedAmount: Int? = nil, touchesNotify: Bool = false)
        async throws(StorageError) -> RefundTransitionResult
    {
        let at = now()
        let catalog = context.catalog.catalog
        let result = try await store.transitionRefund(RefundTransition(
            outRefundNo: outRefundNo, to: state, from: allowed, expectedOutTradeNo: expectedOutTradeNo,
            expectedAmount: expectedAmount, refundID: refundID, succeededAt: succeededAt, failureReason: failureReason,
            detail: source, outbox: { RefundEventEncoding.event(for: $0, at: at) },
            followUp: { refund, order in
                refund.state == .success ? EntitlementEvents.marker(for: order, catalog: catalog, at: at) : nil
            },
            touchesNotify: touchesNotify, at: at))
        if case .changed(let refund, _) = result {
            instruments.settlements.labelled(Self.label(source), refund.state.rawValue).increment()
            logger.info("refund state changed", ["out_refund_no": refund.outRefundNo, "out_trade_no": refund.outTradeNo,
                                                 "state": refund.state.rawValue, "source": source])
            if refund.state == .change {
                logger.warning("a refund needs a person (CHANGE)", ["out_refund_no": refund.outRefundNo])
            }
        }
        return result
    }

    /// A refund's `succeeded_at`: WeChat's `success_time`, unless it lies outside the refund's life
    /// (`Settlement.isBelievable`, the rule a payment's time follows): then when the gateway learned
    /// of it. (Kept as WeChat wrote it, in whole seconds, it may read a moment before `created_at`.)
    static func succeededAt(reported: Date, refund: RefundRecord, at: Date) -> Date {
        Settlement.isBelievable(reported, since: refund.createdAt, now: at) ? reported : at
    }

    /// Metric labels stay a small fixed set whatever the detail says.
    private static func label(_ source: String) -> String {
        for known in ["refund_notify", "refundquery", "reconcile", "request", "bill"] where source.hasPrefix(known) { return known }
        return "other"
    }
}

extension APIError {
    public static let refundsNotConfigured = APIError(
        status: 503, code: "refunds_not_configured",
        message: "refunds need the v2 client certificate (WXPAY_CLIENT_CERT and WXPAY_CLIENT_KEY, or WXPAY_CLIENT_P12) or API v3")
    static let refundNotFound = APIError(status: 404, code: "refund_not_found", message: "no refund with that out_refund_no")
    static let outRefundNoConflict = APIError(
        status: 409, code: "out_refund_no_conflict",
        message: "this out_refund_no was used with different parameters or for another order")
    static func orderNotRefundableByGateway() -> APIError {
        APIError(status: 409, code: "order_not_refundable",
                 message: "an App Store purchase is refunded by Apple (the customer asks Apple); its REFUND notification updates the order")
    }

    static func orderNotRefundable(_ state: String) -> APIError {
        APIError(status: 409, code: "order_not_refundable", message: "only a paid order can be refunded; this one is \(state)")
    }
    static func refundLimitReached(_ count: Int) -> APIError {
        APIError(status: 409, code: "refund_limit_reached", message: "WeChat takes at most \(count) refunds per order")
    }
    static func refundExceedsPaid(refundable: Int) -> APIError {
        APIError(status: 409, code: "refund_exceeds_paid",
                 message: "more than is left to refund: at most \(refundable) fen (refunds still processing or ended CHANGE keep their amount)")
    }
}
